"""Picks the tf.distribute strategy and devices from the run configuration, with clear errors."""

import atexit
import shutil
import tempfile
from typing import Optional

from absl import logging
import tensorflow as tf

from common import checks
from trainer.program import cluster


def check_devices(kind: str, *, num_gpus: Optional[int], cpu_replicas: int,
                  gpus_found: int) -> None:
  """Raises ValueError when the requested devices do not exist here or cannot be honoured."""
  checks.at_least("num_gpus", num_gpus, 0)
  checks.at_least("cpu_replicas", cpu_replicas, 1)
  if kind == "multi_worker_mirrored" and num_gpus is not None:
    raise ValueError(
        f"--num_gpus={num_gpus} cannot be honoured by --strategy=multi_worker_mirrored, "
        "which takes every GPU each worker sees: drop --num_gpus and choose the GPUs with "
        "CUDA_VISIBLE_DEVICES (e.g. CUDA_VISIBLE_DEVICES=0,1 for two).")
  if num_gpus and num_gpus > gpus_found:
    raise ValueError(
        f"--num_gpus={num_gpus} but {gpus_found} GPU(s) were found on this machine. Pass "
        f"--num_gpus={gpus_found} to use what is here, or --num_gpus=0 --cpu_replicas=2 to "
        "try the configuration on logical CPU devices.")
  if cpu_replicas > 1 and kind not in ("mirrored", "auto"):
    raise ValueError(f"--cpu_replicas={cpu_replicas} needs --strategy=mirrored (or auto), "
                     f"not {kind}.")
  if kind == "one_device" and num_gpus and num_gpus > 1:
    raise ValueError(f"--strategy=one_device uses one device, but --num_gpus={num_gpus}; "
                     "use --strategy=mirrored.")


def split_cpu(replicas: int) -> None:
  """Splits the CPU into `replicas` logical devices (before TensorFlow initialises them)."""
  if replicas > 1:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)


def make(kind: str, *, num_gpus: Optional[int] = None, cpu_replicas: int = 1,
         cluster_timeout: float = 300.0) -> tf.distribute.Strategy:
  """The strategy: auto | mirrored | one_device | multi_worker_mirrored (TF_CONFIG).

  auto mirrors over every GPU found (or `num_gpus` of them), or runs on the one
  device there is; it is not TensorFlow's default strategy (`tf.distribute.get_strategy()`).
  multi_worker_mirrored first waits up to `cluster_timeout` seconds for every
  task of TF_CONFIG (`cluster.wait_for_peers`).
  """
  gpus = tf.config.list_physical_devices("GPU")
  check_devices(kind, num_gpus=num_gpus, cpu_replicas=cpu_replicas, gpus_found=len(gpus))
  if kind == "multi_worker_mirrored":
    checks.positive("cluster_timeout", cluster_timeout)
    cluster.wait_for_peers(cluster_timeout)
    return tf.distribute.MultiWorkerMirroredStrategy()
  if cpu_replicas > 1 and not num_gpus:
    split_cpu(cpu_replicas)
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(cpu_replicas)])
  use = len(gpus) if num_gpus is None else num_gpus
  devices = [f"/gpu:{i}" for i in range(use)] or ["/cpu:0"]
  if kind == "one_device":
    return tf.distribute.OneDeviceStrategy(devices[0])
  if kind == "mirrored" or len(devices) > 1:
    return tf.distribute.MirroredStrategy(devices)
  logging.info("One device: %s.", devices[0])
  return tf.distribute.OneDeviceStrategy(devices[0])


def worker(strategy: tf.distribute.Strategy):
  """`(task_type, task_id, is_chief)` of this process (a lone process is the chief)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return "worker", 0, True
  cluster = resolver.cluster_spec().as_dict()
  chief = (resolver.task_type == "chief" or
           (resolver.task_type == "worker" and resolver.task_id == 0 and "chief" not in cluster))
  return resolver.task_type, resolver.task_id, chief


def output_dir(model_dir: str, strategy: tf.distribute.Strategy) -> str:
  """Where this process writes: model_dir on the chief, a private temporary dir elsewhere.

  Multi-worker saves are collective (every worker must save), but only the
  chief's files are kept.
  """
  task_type, task_id, chief = worker(strategy)
  if chief:
    return model_dir
  private = tempfile.mkdtemp(prefix=f"{task_type}{task_id}-")
  atexit.register(shutil.rmtree, private, ignore_errors=True)
  return private
