"""tf.data service: dispatcher and worker servers, and sending a pipeline's preprocessing to them.

When one host's CPUs cannot feed its accelerators (see --mode=diagnose and the
throughput plan in BENCHMARKS.md), the parse/crop/host-augmentation part of
the training pipeline runs on CPU machines instead:

  python -m input.service dispatcher --port=5050 --work_dir=/shared/tfdata
  python -m input.service worker --dispatcher=dispatcher-host:5050 --port=5051   # on each CPU host
  python -m trainer.main ... --data_service=grpc://dispatcher-host:5050

Sharding (`--data_service_sharding`):
  off      every service worker runs the whole pipeline (full epochs each, own
           random order); trainers share one job and split what the workers
           produce. Simple and robust: a lost worker only lowers throughput.
           Within an "epoch" an example may be seen more than once.
  dynamic  the dispatcher hands out shard files one at a time, so each example
           is produced at most once per epoch (exactly once without failures);
           a worker that dies loses the rest of its current files for that epoch.
"""

import socket
import sys
import threading
import time
from typing import List, Optional
import uuid

from absl import app
from absl import flags
from absl import logging
import grpc
import tensorflow as tf

from common import checks
from common import cli

SHARDING = {
    "off": tf.data.experimental.service.ShardingPolicy.OFF,
    "dynamic": tf.data.experimental.service.ShardingPolicy.DYNAMIC,
}


def check_address(address: str) -> str:
  """`address`, if it is grpc://host:port (raises ArgumentError naming data_service)."""
  host, _, port = address[len("grpc://"):].rpartition(":")
  if not address.startswith("grpc://") or not host or not port.isdigit():
    raise checks.ArgumentError("data_service", address, "must look like grpc://host:port "
                               "(port a number).")
  return address


def sharding_policy(name: str):
  """The tf.data service sharding policy named off or dynamic."""
  return SHARDING[checks.one_of("data_service_sharding", name, list(SHARDING))]


def wait_for_dispatcher(service: str, timeout_seconds: float = 60.0,
                        poll_seconds: float = 1.0):
  """Returns once something accepts connections at the dispatcher's host:port.

  The tf.data client itself retries an absent dispatcher forever (INFO lines
  only); this turns that into a ConnectionError after `timeout_seconds`.
  """
  host, port = check_address(service)[len("grpc://"):].rsplit(":", 1)
  deadline = time.monotonic() + timeout_seconds
  while True:
    try:
      with socket.create_connection((host, int(port)), timeout=max(0.1, min(
          5.0, deadline - time.monotonic()))):
        return
    except OSError as e:
      if time.monotonic() + poll_seconds > deadline:
        raise ConnectionError(
            f"No tf.data dispatcher answers at {service} after {timeout_seconds:g} s "
            f"({e.strerror or e}): start one there (python -m input.service dispatcher "
            f"--port={port}), or fix the address.") from None
      time.sleep(poll_seconds)


def wait_for_workers(service: str, timeout_seconds: float = 60.0, poll_seconds: float = 0.2):
  """Returns once the service at `service` delivers an element of a one-element probe job.

  A dispatcher without workers, or a port held by a program that is not a
  dispatcher, would otherwise block the first training step forever with
  nothing printed. The probe runs in a background thread, so the main thread
  stays responsive to signals (SIGTERM ends the process while waiting).

  Raises:
    ConnectionError: nothing arrived within `timeout_seconds`, saying what may
      be missing.
  """
  check_address(service)
  outcome = {}

  def fetch():
    try:  # registering the probe already talks to the dispatcher, so it is in here too
      probe = tf.data.Dataset.range(1).apply(tf.data.experimental.service.distribute(
          processing_mode="parallel_epochs", service=service,
          job_name=f"probe-{uuid.uuid4().hex}"))
      outcome["element"] = next(iter(probe))
    except Exception as e:  # pylint: disable=broad-except
      outcome["error"] = e

  logging.info("Waiting up to %g s for the tf.data service at %s to deliver data.",
               timeout_seconds, service)
  thread = threading.Thread(target=fetch, name="tf.data service probe", daemon=True)
  thread.start()
  deadline = time.monotonic() + timeout_seconds
  while thread.is_alive() and time.monotonic() < deadline:
    thread.join(poll_seconds)
  if "element" in outcome:
    return
  cause = f" ({outcome['error']})" if "error" in outcome else ""
  raise ConnectionError(f"The tf.data service at {service} delivered nothing within "
                        f"{timeout_seconds:g} s{cause}: {why_no_data(service)}")


def registered_workers(service: str, timeout_seconds: float = 5.0) -> List[str]:
  """The addresses the dispatcher at `service` gives its clients for its workers.

  Asks the dispatcher's own GetWorkers call (its gRPC service
  tensorflow.data.DispatcherService; the request is empty, the reply lists
  WorkerInfo{address = 1}).

  Raises:
    ConnectionError: what answers there is not a tf.data dispatcher, or nothing does.
  """
  host_port = check_address(service)[len("grpc://"):]
  with grpc.insecure_channel(host_port) as channel:
    get_workers = channel.unary_unary("/tensorflow.data.DispatcherService/GetWorkers",
                                      request_serializer=lambda _: b"",
                                      response_deserializer=lambda reply: reply)
    try:
      reply = get_workers(None, timeout=timeout_seconds)
    except grpc.RpcError as e:
      raise ConnectionError(f"what listens at {service} is not a tf.data dispatcher "
                            f"({e.code().name}): fix the address.") from None
  return [info[1].decode() for _, worker in _fields(reply) for info in _fields(worker)
          if info[0] == 1]


def _fields(message: bytes):
  """`(field number, bytes)` of each length-delimited field of a protobuf `message` (the only
  wire type GetWorkers' reply uses for what is read here; others are skipped)."""
  position = 0
  while position < len(message):
    key, position = _varint(message, position)
    number, wire_type = key >> 3, key & 7
    if wire_type == 2:
      size, position = _varint(message, position)
      yield number, message[position:position + size]
      position += size
    elif wire_type == 0:
      _, position = _varint(message, position)
    else:
      raise ConnectionError(f"unexpected protobuf wire type {wire_type} in a GetWorkers reply")


def _varint(data: bytes, position: int):
  value = shift = 0
  while True:
    byte = data[position]
    position += 1
    value |= (byte & 0x7F) << shift
    shift += 7
    if not byte & 0x80:
      return value, position


def reachable(address: str, timeout_seconds: float = 3.0) -> Optional[str]:
  """None if something accepts TCP connections at host:port `address`, else why not."""
  host, _, port = address.rpartition(":")
  try:
    with socket.create_connection((host, int(port)), timeout=timeout_seconds):
      return None
  except OSError as e:
    return e.strerror or str(e) or type(e).__name__


def why_no_data(service: str) -> str:
  """What keeps the service at `service` from delivering: no dispatcher, no workers, workers
  registered at addresses this host cannot reach, or workers that answer but make nothing."""
  host_port = service[len("grpc://"):]
  try:
    workers = registered_workers(service)
  except ConnectionError as e:
    return str(e)
  start = (f"python -m input.service worker --dispatcher={host_port} --port=P "
           "--worker_address=ADDRESS_OTHER_HOSTS_REACH")
  if not workers:
    return f"the dispatcher has no workers registered; start them: {start}."
  unreachable = {w: why for w in workers if (why := reachable(w))}
  if unreachable:
    listed = ", ".join(f"{w} ({why})" for w, why in unreachable.items())
    return (f"{len(workers)} worker(s) registered, but {len(unreachable)} cannot be reached "
            f"from this host: {listed}. A worker registers the address it is given by "
            "--worker_address (by default the one it reaches the dispatcher by); restart it "
            f"with one this host reaches: {start}.")
  return (f"its {len(workers)} worker(s) ({', '.join(workers)}) are reachable but made no "
          "data: see their output for a pipeline error (e.g. files they cannot read).")


def distribute(dataset: tf.data.Dataset, *, service: str, sharding: str = "off",
               job_name: str = "denoise-train",
               connect_timeout_seconds: float = 60.0) -> tf.data.Dataset:
  """Runs `dataset` on the tf.data service at `service`; consumers of one job share it.

  Raises ConnectionError if no dispatcher answers, or its workers deliver
  nothing, within `connect_timeout_seconds` each.
  """
  wait_for_dispatcher(service, connect_timeout_seconds)
  wait_for_workers(service, connect_timeout_seconds)
  return dataset.apply(tf.data.experimental.service.distribute(
      processing_mode=sharding_policy(sharding), service=check_address(service),
      job_name=job_name))


def start_dispatcher(port: int = 0, work_dir: str = None):
  """A dispatch server (fault tolerant when `work_dir` is set); returns it started."""
  config = tf.data.experimental.service.DispatcherConfig(
      port=port, work_dir=work_dir, fault_tolerant_mode=bool(work_dir))
  return tf.data.experimental.service.DispatchServer(config)


def local_address_towards(host: str, port: int) -> str:
  """This host's own address on the route to `host` (no packet is sent): the address other
  hosts on that network most likely reach it at."""
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
    probe.connect((host, port))
    return probe.getsockname()[0]


def advertised_host(dispatcher: str, worker_address: Optional[str] = None) -> str:
  """The host a worker registered with `dispatcher` (host:port) gives trainers to reach it:
  `worker_address`, or by default this host's address on the route to the dispatcher
  (TensorFlow's own default, "localhost", serves no other host)."""
  host, _, port = dispatcher.rpartition(":")
  return worker_address or local_address_towards(host, int(port))


def start_worker(dispatcher: str, port: int = 0, worker_address: Optional[str] = None):
  """A worker server registered with `dispatcher` (host:port, no scheme) as reachable at
  `advertised_host(dispatcher, worker_address)` and its port."""
  host = advertised_host(dispatcher, worker_address)
  return tf.data.experimental.service.WorkerServer(tf.data.experimental.service.WorkerConfig(
      dispatcher_address=dispatcher, worker_address=f"{host}:%port%", port=port))


FLAGS = flags.FLAGS


def main(argv):
  if len(argv) != 2 or argv[1] not in ("dispatcher", "worker"):
    sys.exit("usage: python -m input.service dispatcher --port=P [--work_dir=D] | "
             "worker --dispatcher=host:port --port=P [--worker_address=HOST]")
  if argv[1] == "dispatcher":
    server = start_dispatcher(FLAGS.port, FLAGS.work_dir)
    logging.info("tf.data dispatcher serving at %s", server.target)
  else:
    if not FLAGS.dispatcher:
      sys.exit("input.service worker: pass --dispatcher=host:port")
    dispatcher = FLAGS.dispatcher.replace("grpc://", "")
    check_address(f"grpc://{dispatcher}")
    server = start_worker(dispatcher, FLAGS.port, FLAGS.worker_address)
    logging.info("tf.data worker registered with %s as %s:%d", dispatcher,
                 advertised_host(dispatcher, FLAGS.worker_address), FLAGS.port)
  print(f"input.service {argv[1]} ready", flush=True)
  server.join()


if __name__ == "__main__":
  flags.DEFINE_integer("port", 5050, "Port to serve on.")
  flags.DEFINE_string("work_dir", None, "Dispatcher journal directory (fault tolerance).")
  flags.DEFINE_string("dispatcher", None, "host:port of the dispatcher (workers).")
  flags.DEFINE_string("worker_address", None, "The host name or IP trainers reach this worker "
                      "at (workers; the port is --port). Default: this host's address on the "
                      "route to the dispatcher.")
  app.run(main, flags_parser=cli.parse_flags)
