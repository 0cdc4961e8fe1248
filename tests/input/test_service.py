"""tf.data service tests on loopback: serving the training pipeline, dynamic sharding, a lost worker."""

import collections
import socket
import subprocess
import sys
import tempfile
import threading
import time
from unittest import mock

import pytest
import numpy as np
import tensorflow as tf

from input import pipeline
from input import records
from input import service
from tests import helpers

REPO = helpers.REPO


class ServiceTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.dispatcher = service.start_dispatcher()
    address = self.dispatcher.target.replace("grpc://", "")
    self.workers = [service.start_worker(address) for _ in range(2)]
    self.manifest = helpers.indexed_split(self.create_tempdir().full_path, num_examples=24,
                                           num_shards=6)

  def tearDown(self):
    for server in self.workers + [self.dispatcher]:
      server._stop()  # pylint: disable=protected-access
    super().tearDown()

  def test_waiting_for_a_dispatcher_returns_at_once_or_times_out_clearly(self):
    service.wait_for_dispatcher(self.dispatcher.target, timeout_seconds=5)
    with socket.socket() as probe:  # a port nothing listens on
      probe.bind(("localhost", 0))
      absent = f"grpc://localhost:{probe.getsockname()[1]}"
    start = time.monotonic()
    with self.assertRaisesRegex(ConnectionError, rf"No tf.data dispatcher answers at {absent} "
                                r"after 1.5 s \(Connection refused\): start one there "
                                r"\(python -m input.service dispatcher --port=\d+\)"):
      service.wait_for_dispatcher(absent, timeout_seconds=1.5, poll_seconds=0.2)
    self.assertLess(time.monotonic() - start, 10)

  def test_workers_deliver_the_probe(self):
    service.wait_for_workers(self.dispatcher.target, timeout_seconds=30)

  def test_a_dispatcher_without_workers_is_an_error_not_a_hang(self):
    lonely = service.start_dispatcher()
    start = time.monotonic()
    with self.assertRaisesRegex(ConnectionError, rf"The tf.data service at {lonely.target} "
                                r"delivered nothing within 2 s: the dispatcher has no workers "
                                r"registered; start them: python -m input.service worker "
                                r"--dispatcher=localhost:\d+ --port=P --worker_address="):
      service.wait_for_workers(lonely.target, timeout_seconds=2)
    self.assertLess(time.monotonic() - start, 10)
    # The probe still waits for an element: give it a worker so it ends, and its client
    # stops heartbeating to the dispatcher (which would log until the suite exits).
    worker = service.start_worker(lonely.target.replace("grpc://", ""))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(
        t.name == "tf.data service probe" for t in threading.enumerate()):
      time.sleep(0.1)
    self.assertFalse(any(t.name == "tf.data service probe" for t in threading.enumerate()))
    worker._stop()  # pylint: disable=protected-access
    lonely._stop()  # pylint: disable=protected-access

  def test_a_port_held_by_another_program_is_an_error_not_a_hang(self):
    with socket.socket() as other:  # accepts TCP connections, speaks no gRPC
      other.bind(("localhost", 0))
      other.listen(8)
      address = f"grpc://localhost:{other.getsockname()[1]}"
      service.wait_for_dispatcher(address, timeout_seconds=2)  # TCP alone cannot tell
      with self.assertRaisesRegex(ConnectionError, "is not a tf.data dispatcher"):
        service.wait_for_workers(address, timeout_seconds=2)

  def test_training_pipeline_runs_on_the_service(self):
    fn = pipeline.make_train_dataset_fn(self.manifest, pipeline.TrainInputConfig(
        global_batch_size=4, data_service=self.dispatcher.target))
    batches = list(fn(tf.distribute.InputContext()).take(12))
    self.assertEqual(batches[0]["clean"].shape, [4, 64])
    seen = collections.Counter(i for b in batches for i in helpers.indices(b["clean"]))
    self.assertContainsSubset(seen, range(24))
    self.assertGreater(len(seen), 12)

  def test_a_mixing_pipeline_runs_on_the_service(self):
    data_dir = self.create_tempdir().full_path
    clean = helpers.indexed_store(data_dir, "clean", num_examples=12, num_shards=3)
    noise = helpers.indexed_store(data_dir, "noise", num_examples=4, num_shards=2)
    fn = pipeline.make_mixing_dataset_fn(clean, noise, pipeline.TrainInputConfig(
        global_batch_size=4, data_service=self.dispatcher.target))
    batches = list(fn(tf.distribute.InputContext()).take(8))
    self.assertEqual(sorted(batches[0]), ["clean", "noise"])
    speech = collections.Counter(i for b in batches for i in helpers.indices(b["clean"]))
    noises = collections.Counter(i for b in batches for i in helpers.indices(b["noise"]))
    self.assertContainsSubset(speech, range(12))
    self.assertEqual(set(noises), set(range(4)))  # cycled: 32 noises from 4

  def test_each_service_worker_makes_its_own_crops(self):
    fn = pipeline.make_train_dataset_fn(self.manifest, pipeline.TrainInputConfig(
        global_batch_size=4, crop_seconds=16 / 8000, data_service=self.dispatcher.target,
        deterministic=True))
    batches = list(fn(tf.distribute.InputContext()).take(16))
    # noisy = index + 1000 - sample, so the first noisy sample gives the crop's start.
    offsets = [tuple(np.round((b["clean"][:, 0] - b["noisy"][:, 0]) * 32768).astype(int) + 1000)
               for b in batches]
    self.assertTrue(all(0 <= o <= 48 for row in offsets for o in row))
    # Two workers sharing their k-th batch's draws would repeat every offset pattern twice.
    self.assertLen(set(offsets), len(offsets))

  def test_dynamic_sharding_delivers_each_example_exactly_once(self):
    dataset = tf.data.Dataset.from_tensor_slices(self.manifest.paths).interleave(
        tf.data.TFRecordDataset, cycle_length=2).batch(1).map(
            lambda s: records.parse_batch(s, segment_samples=64)["id"][0])
    served = service.distribute(dataset, service=self.dispatcher.target, sharding="dynamic",
                                job_name="exactly-once")
    ids = [i.decode() for i in served.as_numpy_iterator()]
    self.assertCountEqual(ids, [f"ex{i}" for i in range(24)])

  def test_losing_a_worker_does_not_stop_training_input(self):
    fn = pipeline.make_train_dataset_fn(self.manifest, pipeline.TrainInputConfig(
        global_batch_size=4, data_service=self.dispatcher.target))
    iterator = iter(fn(tf.distribute.InputContext()))
    for _ in range(5):
      next(iterator)
    self.workers.pop()._stop()  # pylint: disable=protected-access
    for _ in range(30):
      self.assertEqual(next(iterator)["noisy"].shape, [4, 64])

  def test_workers_register_the_address_they_reach_the_dispatcher_by_or_the_one_given(self):
    self.assertCountEqual(service.registered_workers(self.dispatcher.target),
                          [f"127.0.0.1:{w._server.bound_port()}"  # pylint: disable=protected-access
                           for w in self.workers])
    lonely = service.start_dispatcher()
    named = service.start_worker(lonely.target[len("grpc://"):], worker_address="10.1.2.3")
    try:
      self.assertRegex(service.registered_workers(lonely.target)[0], r"^10\.1\.2\.3:\d+$")
    finally:
      named._stop()  # pylint: disable=protected-access
      lonely._stop()  # pylint: disable=protected-access

  def test_no_data_is_explained_by_what_the_dispatcher_knows(self):
    lonely = service.start_dispatcher()
    try:
      self.assertStartsWith(service.why_no_data(lonely.target),
                            "the dispatcher has no workers registered; start them")
    finally:
      lonely._stop()  # pylint: disable=protected-access
    self.assertIn("reachable but made no data", service.why_no_data(self.dispatcher.target))
    with socket.socket() as probe:  # a port nothing listens at
      probe.bind(("127.0.0.1", 0))
      absent = f"127.0.0.1:{probe.getsockname()[1]}"
    with mock.patch.object(service, "registered_workers", return_value=[absent]):
      self.assertRegex(service.why_no_data(self.dispatcher.target),
                       rf"^1 worker\(s\) registered, but 1 cannot be reached from this host: "
                       rf"{absent} \(Connection refused\)\. A worker registers the address")
    with socket.socket() as other:  # accepts TCP connections, speaks no gRPC
      other.bind(("localhost", 0))
      other.listen(8)
      self.assertRegex(service.why_no_data(f"grpc://localhost:{other.getsockname()[1]}"),
                       r"is not a tf.data dispatcher \(\w+\): fix the address")

  def test_bad_address_and_sharding(self):
    for bad in ("localhost:5050", "grpc://localhost:50x0", "grpc://:5050"):
      with self.assertRaisesRegex(ValueError, r"must look like grpc://host:port \(port a "
                                  r"number\)"):
        service.check_address(bad)
    with self.assertRaisesRegex(ValueError, "data_service_sharding=static must be one of off, dynamic"):
      service.sharding_policy("static")


@pytest.mark.slow
class ServiceCommandLineTest(tf.test.TestCase):

  @pytest.mark.end_to_end
  def test_trainer_consumes_from_service_processes(self):
    from trainer.program import launch_local  # pylint: disable=g-import-not-at-top
    ports = launch_local.free_ports(3)
    env = helpers.env()
    servers = [subprocess.Popen([sys.executable, "-m", "input.service", "dispatcher",
                                 f"--port={ports[0]}"], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)]
    try:
      self.assertIn("ready", servers[0].stdout.readline())
      for port in ports[1:]:
        servers.append(subprocess.Popen(
            [sys.executable, "-m", "input.service", "worker",
             f"--dispatcher=localhost:{ports[0]}", f"--port={port}"], cwd=REPO, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        self.assertIn("ready", servers[-1].stdout.readline())
      root = tempfile.mkdtemp()
      result = helpers.run_module("trainer.main", *helpers.TINY, f"--synthetic_dir={root}/synthetic",
                                  f"--model_dir={root}/run", "--train_steps=10",
                                  "--eval_split=", f"--data_service=grpc://localhost:{ports[0]}")
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])
      self.assertIn("train: 10/10 steps", result.stderr)
    finally:
      for server in servers:
        server.kill()
        server.wait(timeout=30)


if __name__ == "__main__":
  tf.test.main()
