"""Timing and table helpers shared by the benchmark scripts."""

import os
import platform
import statistics
import time
from typing import Callable, List, Sequence

import tensorflow as tf
from tensorflow.python.util import _pywrap_util_port  # pylint: disable=g-direct-tensorflow-import


def median_seconds(fn: Callable[[], object], *, runs: int = 5, warmup: int = 1) -> float:
  """Median wall time of `fn()` over `runs` calls after `warmup` untimed calls."""
  for _ in range(warmup):
    _block(fn())
  times = []
  for _ in range(runs):
    start = time.perf_counter()
    _block(fn())
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def _block(result):
  """Waits for every tensor in `result` (async eager ops finish before timing stops)."""
  for t in tf.nest.flatten(result):
    if hasattr(t, "numpy"):
      t.numpy()


def machine() -> str:
  """One line naming the CPU, whether oneDNN is on, and the versions a table was measured
  with."""
  onednn = "on" if _pywrap_util_port.IsMklEnabled() else "off"
  return (f"{cpu_model()}, {os.cpu_count()} cores, oneDNN {onednn} "
          f"(TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'unset')}), "
          f"TF {tf.__version__}, Python {platform.python_version()}")


def cpu_model() -> str:
  """The CPU's model name and its widest vector extension (what decides oneDNN's default)."""
  try:
    with open("/proc/cpuinfo") as f:
      info = dict(line.split(":", 1) for line in f.read().split("\n\n")[0].splitlines()
                  if ":" in line)
  except OSError:
    return platform.processor() or platform.machine()
  info = {k.strip(): v.strip() for k, v in info.items()}
  flags = set(info.get("flags", "").split())
  widest = next((name for flag, name in (("amx_tile", "AMX"), ("avx512_bf16", "AVX-512 BF16"),
                                         ("avx512_vnni", "AVX-512 VNNI"),
                                         ("avx_vnni", "AVX-VNNI"), ("avx512f", "AVX-512"),
                                         ("avx2", "AVX2")) if flag in flags), "no AVX2")
  return f"{info.get('model name', platform.machine())} ({widest})"


def table(header: Sequence[str], rows: List[Sequence[object]]) -> str:
  """A Markdown table, columns padded for the terminal."""
  cells = [list(map(str, header))] + [[_fmt(c) for c in row] for row in rows]
  widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
  lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells]
  lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
  return "\n".join(lines)


def _fmt(value) -> str:
  if isinstance(value, float):
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
  return str(value)
