"""Training steps watched for stalled input: a line while no step finishes, and a stop request honoured during the wait."""

import threading
import time
from typing import Callable, TypeVar

from absl import logging

T = TypeVar("T")


class Abandoned(Exception):
  """A stop was requested while no step finished: the call in flight was left waiting."""

  def __init__(self, waited: float):
    self.waited = waited
    super().__init__(f"stopped after waiting {waited:.0f} s for a step to finish")


class StallWatch:
  """`watch(call, progress, stop_requested, first=False) -> call()`: runs `call` on a helper thread while
  this thread waits, so that signal handlers run and lines are logged during a long wait.

  When `progress()` (e.g. the global step) has not changed for `after_seconds`,
  it logs "no training step has finished ..." with `what_to_check`, and again
  every `after_seconds` while the wait lasts; a stop request
  (`stop_requested()`) during such a stall abandons the call (raises
  Abandoned) instead of waiting on. A slow call that moves on is only logged
  about; the `first` call's line says it may be compiling.
  """

  def __init__(self, after_seconds: float, what_to_check: str, *,
               log: Callable[[str], None] = logging.warning):
    self._after, self._what, self._log = after_seconds, what_to_check, log

  def __call__(self, call: Callable[[], T], progress: Callable[[], int],
               stop_requested: Callable[[], bool] = lambda: False, first: bool = False) -> T:
    outcome = {}
    done = threading.Event()

    def run():
      try:
        outcome["value"] = call()
      except BaseException as e:  # pylint: disable=broad-except
        outcome["error"] = e
      finally:
        done.set()

    threading.Thread(target=run, name="training steps", daemon=True).start()
    last, since = progress(), time.monotonic()
    next_line = since + self._after
    while not done.wait(min(1.0, self._after)):
      now, reached = time.monotonic(), progress()
      if reached != last:
        last, since, next_line = reached, now, now + self._after
        continue
      stalled = now - since >= self._after
      if stalled and stop_requested():
        raise Abandoned(now - since)
      if now >= next_line:
        compiling = "compiling the step (the first call), or " if first else ""
        self._log(f"No training step has finished for {now - since:.0f} s (at step {last}): "
                  f"{compiling}{self._what}")
        next_line = now + self._after
    if "error" in outcome:
      raise outcome["error"]
    return outcome["value"]
