"""Timing and table helpers shared by the benchmark scripts."""

import platform
import statistics
import time
from typing import Callable, List, Sequence

import tensorflow as tf


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
  """One line naming the machine and versions a table was measured with."""
  return (f"{platform.processor() or platform.machine()}, "
          f"{len(tf.config.list_physical_devices('CPU'))} CPU device(s), "
          f"{__import__('os').cpu_count()} cores, TF {tf.__version__}, "
          f"Python {platform.python_version()}")


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
