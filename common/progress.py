"""Progress lines for long work: done/total, the rate since the last line (said so) and ETA, logged at most every few seconds."""

import datetime
import time
from typing import Callable, Optional

from absl import logging


class Progress:
  """Logs `what: 120/500 files (24%), 31.2 files/s over the last 40, ETA 0:00:12` as work
  advances: the rate over the work since the previous line (since the start for the first),
  so a slow start (a compile, a warm cache) does not linger in it, and the ETA from it."""

  def __init__(self, what: str, total: int, unit: str, *, every_seconds: float = 5.0,
               log: Callable[[str], None] = logging.info,
               clock: Callable[[], float] = time.monotonic):
    self._what, self._total, self._unit = what, total, unit
    self._every, self._log, self._clock = every_seconds, log, clock
    self._last_log: Optional[float] = None
    self.restart(0)

  def restart(self, done: int):
    """Counts the rate from `done` on (e.g. after a resume or a warm-up)."""
    self._since, self._since_done = self._clock(), done

  def rate(self, done: int) -> float:
    """Units per second since the last line (or the start)."""
    elapsed = self._clock() - self._since
    return (done - self._since_done) / elapsed if elapsed > 0 else 0.0

  def line(self, done: int, extra: str = "") -> str:
    rate = self.rate(done)
    eta = (datetime.timedelta(seconds=round((self._total - done) / rate))
           if rate > 0 else "?")
    percent = 100.0 * done / self._total if self._total else 100.0
    text = (f"{self._what}: {done}/{self._total} {self._unit} ({percent:.0f}%), "
            f"{rate:.3g} {self._unit}/s over the last {done - self._since_done}, ETA {eta}")
    return f"{text}, {extra}" if extra else text

  def update(self, done: int, extra: str = "", *, force: bool = False):
    """Logs a line if `every_seconds` passed since the last one (or `force`)."""
    now = self._clock()
    if force or done >= self._total or self._last_log is None or (
        now - self._last_log >= self._every):
      self._last_log = now
      self._log(self.line(done, extra))
      self.restart(done)
