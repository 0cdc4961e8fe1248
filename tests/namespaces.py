"""Hosts for tests as Linux network namespaces, joined by a bridge in a namespace of their own.

Each host is a namespace with loopback and one veth interface addressed
10.231.<n>.<host + 1>/24; the other end of every veth sits in a "switch"
namespace holding a bridge. Nothing is added to the machine's own network
(no interface, address or route outside these namespaces); `down()` removes
them all. Needs root (CAP_NET_ADMIN) and the `ip` tool.
"""

import itertools
import os
import shutil
import subprocess
from typing import List, Optional, Sequence


def unavailable() -> Optional[str]:
  """Why namespaces cannot be made here, or None if they can."""
  for tool, package in (("ip", "iproute2"), ("nsenter", "util-linux")):
    if shutil.which(tool) is None:
      return f"the `{tool}` tool ({package}) is not installed"
  if os.geteuid() != 0:
    return "network namespaces need root (CAP_NET_ADMIN); run the suite as root"
  probe = f"dnprobe{os.getpid()}"
  made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
  if made.returncode:
    return f"`ip netns add` failed: {made.stderr.strip()}"
  subprocess.run(["ip", "netns", "del", probe], capture_output=True)
  return None


def netem_unavailable() -> Optional[str]:
  """Why `tc netem` (delay, loss) cannot be used here, or None."""
  if shutil.which("tc") is None:
    return "the `tc` tool is not installed"
  network = Network(1)
  try:
    network.up()
    added = subprocess.run(network.command(0, ["tc", "qdisc", "add", "dev", network.interface(0),
                                               "root", "netem", "delay", "1ms"]),
                           capture_output=True, text=True)
    return (f"this kernel has no netem queueing discipline (`tc qdisc add ... netem`: "
            f"{added.stderr.strip()})") if added.returncode else None
  finally:
    network.down()


class Network:
  """`hosts` namespaces on one bridge; `address(i)`, `command(i, argv)`, `up()`, `down()`."""

  _made = itertools.count()  # networks of this process, each with names of its own

  def __init__(self, hosts: int):
    self._id = f"{os.getpid() % 100000}{next(self._made) % 100}"
    self._subnet = f"10.231.{int(self._id) % 250}"
    self.names: List[str] = [f"dn{self._id}h{i}" for i in range(hosts)]
    self.switch = f"dn{self._id}sw"

  def address(self, host: int) -> str:
    return f"{self._subnet}.{host + 1}"

  def interface(self, host: int) -> str:
    return f"dn{self._id}e{host}"

  def command(self, host: int, argv: Sequence[str]) -> List[str]:
    """`argv` run inside host `host`'s namespace, as the same process (nsenter execs it;
    `ip netns exec` may fork, and a signal to it would not reach `argv`)."""
    return ["nsenter", f"--net=/run/netns/{self.names[host]}", "--", *argv]

  def _ip(self, *args, namespace: Optional[str] = None):
    prefix = ["ip", "netns", "exec", namespace] if namespace else []
    subprocess.run([*prefix, "ip", *args], check=True, capture_output=True)

  def up(self) -> "Network":
    self.down()
    subprocess.run(["ip", "netns", "add", self.switch], check=True, capture_output=True)
    self._ip("link", "add", "br0", "type", "bridge", namespace=self.switch)
    self._ip("link", "set", "br0", "up", namespace=self.switch)
    for host, name in enumerate(self.names):
      inside, outside = self.interface(host), f"dn{self._id}s{host}"
      subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
      self._ip("link", "add", inside, "netns", name, "type", "veth", "peer", "name", outside,
               "netns", self.switch)
      self._ip("link", "set", outside, "master", "br0", namespace=self.switch)
      self._ip("link", "set", outside, "up", namespace=self.switch)
      self._ip("addr", "add", f"{self.address(host)}/24", "dev", inside, namespace=name)
      self._ip("link", "set", inside, "up", namespace=name)
      self._ip("link", "set", "lo", "up", namespace=name)
    return self

  def cut(self, host: int, cut: bool = True):
    """Takes host `host`'s link down (a network partition) or, with cut=False, up again."""
    self._ip("link", "set", self.interface(host), "down" if cut else "up",
             namespace=self.names[host])

  def delay(self, host: int, milliseconds: int):
    """Delays what host `host` sends by `milliseconds` (tc netem; 0 removes the delay)."""
    device = self.interface(host)
    if milliseconds:
      subprocess.run(self.command(host, ["tc", "qdisc", "replace", "dev", device, "root",
                                         "netem", "delay", f"{milliseconds}ms"]),
                     check=True, capture_output=True)
    else:
      subprocess.run(self.command(host, ["tc", "qdisc", "del", "dev", device, "root"]),
                     capture_output=True)

  def down(self):
    """Removes every namespace (and with them their interfaces); processes inside keep running
    until they end."""
    for name in [*self.names, self.switch]:
      subprocess.run(["ip", "netns", "del", name], capture_output=True)
