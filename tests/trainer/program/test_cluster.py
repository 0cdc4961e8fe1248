"""Tests for trainer.program.cluster: the bounded start-up wait and the one line for a lost peer."""

import json
import os
import socket
import threading
import time
from unittest import mock

import tensorflow as tf

from trainer.program import cluster
from trainer.program import launch_local


def tf_config(ports, index):
  return {"TF_CONFIG": launch_local.tf_config(ports, index)}


class ClusterTest(tf.test.TestCase):

  def test_tasks_and_this_task_come_from_tf_config(self):
    config = json.dumps({"cluster": {"worker": ["h1:1", "h2:2"], "chief": ["h0:0"]},
                         "task": {"type": "worker", "index": 1}})
    self.assertEqual([str(t) for t in cluster.tasks(config)],
                     ["chief 0 (h0:0)", "worker 0 (h1:1)", "worker 1 (h2:2)"])
    self.assertEqual(cluster.this_task(config), cluster.Task("worker", 1, "h2:2"))

  def test_a_missing_peer_is_logged_while_waiting_then_named(self):
    ports = launch_local.free_ports(2)
    lines = []
    start = time.monotonic()
    with mock.patch.dict(os.environ, tf_config(ports, 0)):
      with self.assertRaisesRegex(cluster.PeerLost, rf"^the cluster did not form within "
                                  rf"--cluster_timeout=1.5 s: no answer from worker 1 "
                                  rf"\(127.0.0.1:{ports[1]}\) \(Connection refused\)\. Start"):
        cluster.wait_for_peers(1.5, every_seconds=0.5, poll_seconds=0.1, log=lines.append)
    self.assertLess(time.monotonic() - start, 10)
    self.assertNotEmpty(lines)
    self.assertRegex(lines[0], r"^Waiting for the cluster \(\d+ s of --cluster_timeout=1.5\): "
                     r"no answer yet from worker 1 ")
    with socket.socket() as again:  # the task's own port is free again for TensorFlow
      again.bind(("", ports[0]))

  def test_two_tasks_waiting_for_each_other_both_return(self):
    ports = launch_local.free_ports(2)
    outcomes, servers = {}, []

    def task(index):
      try:
        cluster.wait_for_peers(20, poll_seconds=0.1,
                               tf_config=launch_local.tf_config(ports, index))
        outcomes[index] = "formed"
      except cluster.PeerLost as e:
        outcomes[index] = str(e)
      server = socket.socket()  # TensorFlow's server takes the port over at once
      server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
      server.bind(("", ports[index]))
      server.listen(8)
      servers.append(server)

    threads = [threading.Thread(target=task, args=(i,)) for i in (0, 1)]
    for t in threads:
      t.start()
      time.sleep(0.5)  # the second starts later, as a real one would
    for t in threads:
      t.join(30)
    for server in servers:
      server.close()
    self.assertEqual(outcomes, {0: "formed", 1: "formed"})

  def test_a_port_held_by_another_program_is_named(self):
    with socket.socket() as other:
      other.bind(("", 0))
      other.listen(1)
      ports = [other.getsockname()[1], launch_local.free_ports(1)[0]]
      with mock.patch.dict(os.environ, tf_config(ports, 0)):
        with self.assertRaisesRegex(cluster.PeerLost, rf"worker 0 \(127.0.0.1:{ports[0]}\) "
                                    rf"cannot listen on port {ports[0]} \(Address already in "
                                    r"use\): another program holds it"):
          cluster.wait_for_peers(5)

  def test_the_lost_peer_is_the_one_the_error_names_or_the_one_not_answering(self):
    ports = launch_local.free_ports(3)
    error = tf.errors.UnavailableError(None, None, (
        "Graph execution error:\n\nDetected at node while/CollectiveReduceV2 defined at:\n"
        "  File x.py\nCollective ops is aborted by: Connection reset by peer\nAdditional GRPC "
        "error information from remote target /job:worker/replica:0/task:2 while calling "
        "/tensorflow.WorkerService/RecvBuf:"))
    with mock.patch.dict(os.environ, tf_config(ports, 0)), \
         mock.patch("sys.argv", ["trainer/main.py", "--model_dir=r", "--flagfile=cpu.flags"]):
      line = cluster.lost_peer_message(error, step=57, latest_checkpoint="r/checkpoints/ckpt-50")
      self.assertEqual(
          line, f"lost worker 2 (127.0.0.1:{ports[2]}) at step 57 (UnavailableError: "
          "Collective ops is aborted by: Connection reset by peer); the last checkpoint is "
          "r/checkpoints/ckpt-50. Resume: rerun on every worker, with its TF_CONFIG: python "
          "-m trainer.main --model_dir=r --flagfile=cpu.flags")
      unnamed = tf.errors.DeadlineExceededError(None, None, "Deadline Exceeded")
      with socket.socket() as peer1:  # worker 1 answers, worker 2 does not
        peer1.bind(("127.0.0.1", ports[1]))
        peer1.listen(1)
        self.assertStartsWith(cluster.lost_peer_message(unnamed, step=3, latest_checkpoint=None),
                              f"lost worker 2 (127.0.0.1:{ports[2]}) (Connection refused) at "
                              "step 3 (DeadlineExceededError: Deadline Exceeded); the last "
                              "checkpoint is none yet")

  def test_a_collective_error_becomes_one_line_and_its_traceback_a_file(self):
    errors_dir = self.create_tempdir().full_path
    ports = launch_local.free_ports(2)
    with mock.patch.dict(os.environ, tf_config(ports, 1)):
      with self.assertRaisesRegex(cluster.PeerLost, rf"^lost worker 0 \(127.0.0.1:{ports[0]}\)"
                                  rf".* at step 9 .* Details: {errors_dir}/worker-1.txt$"):
        with cluster.lost_peers_in_one_line(lambda: 9, "/nonexistent", errors_dir):
          raise tf.errors.UnavailableError(None, None, "from /job:worker/replica:0/task:0")
    with open(os.path.join(errors_dir, "worker-1.txt")) as f:
      self.assertIn("Traceback (most recent call last)", f.read())
    with self.assertRaises(ValueError):  # anything else passes through
      with cluster.lost_peers_in_one_line(lambda: 9, "/nonexistent", errors_dir):
        raise ValueError("not a peer")


if __name__ == "__main__":
  tf.test.main()
