"""Command-line tools end an error in one line: a refused argument as its flag, any other expected error in its own words, a SIGINT or SIGTERM as what it stopped."""

import contextlib
import signal
import sys
from typing import List, Optional, Sequence, Tuple, Type

from absl import app
from absl import flags

from common import checks
from common import requirements

HELP = ("--help", "-help", "--helpshort", "-helpshort", "-h", "-?")
flags.DEFINE_bool(requirements.TENSORFLOW_LOGS_FLAG[2:], False, "Keep TensorFlow's C++ info "
                  "and warning lines (CPU features, GPU libraries, ...), which the commands "
                  "leave out so that their own lines are what they print.")


class Stopped(BaseException):
  """SIGINT or SIGTERM arrived (`stop_on_signals`); `str()` names the signal. Like
  KeyboardInterrupt, not an Exception: no `except Exception` takes it for an error."""

  def __init__(self, signum: int):
    self.signum = signum
    super().__init__(signal.Signals(signum).name)

  def exit(self, message: str):
    """Ends the program with `message` on stderr and the shell's status for the signal."""
    print(message, file=sys.stderr)
    sys.exit(128 + self.signum)


_received: List[int] = []  # the signals stop_on_signals has turned into Stopped


def received(error: BaseException) -> Optional[Stopped]:
  """The Stopped behind `error`: itself, or, if a signal arrived, one for it (a signal raised
  inside TensorFlow's own code can come out as another exception)."""
  if isinstance(error, Stopped):
    return error
  return Stopped(_received[-1]) if _received else None


@contextlib.contextmanager
def stop_on_signals():
  """`with stop_on_signals():` SIGINT and SIGTERM raise `Stopped` where the program is, so
  what it writes is finished or removed (files.atomic_writer) instead of cut off."""

  def stop(signum, _):
    _received.append(signum)
    raise Stopped(signum)

  previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
  try:
    yield
  finally:
    for signum, handler in previous.items():
      signal.signal(signum, handler)


@contextlib.contextmanager
def one_line_errors(program: str, *errors: Type[Exception]):
  """`with one_line_errors("trainer.export", CheckpointError):` exits non-zero with one line
  for an ArgumentError (`program: --flag=value problem`), a ValueError, OSError or one of
  `errors` (`program: message`), or a signal `stop_on_signals` turned into `Stopped`
  (`program: stopped by SIGINT ...`); anything else is a bug and keeps its traceback."""
  try:
    yield
  except BaseException as e:  # pylint: disable=broad-except
    stopped = received(e)
    if stopped is not None:
      stopped.exit(f"{program}: stopped by {stopped}; nothing more was written.")
    if isinstance(e, checks.ArgumentError):
      sys.exit(f"{program}: {e.flag()}")
    if isinstance(e, (ValueError, OSError, *errors)):
      sys.exit(f"{program}: {e}")
    raise


def parse_flags(argv: List[str],
                groups: Optional[Sequence[Tuple[str, Sequence[str]]]] = None) -> List[str]:
  """absl's flags parser (for `app.run(flags_parser=...)`), except that --help (-h, -?,
  --helpshort) prints the program's own flags and exits 0: `groups` of (title, flag names),
  else the flags its __main__ defines (absl's own --help lists only those and exits 1;
  --helpfull still lists every flag, TensorFlow's and absl's included)."""
  if not any(arg in HELP for arg in argv[1:]):
    return app.parse_flags_with_usage(argv)
  doc = (sys.modules["__main__"].__doc__ or "").strip()
  print(doc + "\n")
  if groups is None:
    print(flags.FLAGS.main_module_help())
  for title, names in groups or ():
    print(f"{title}:")
    for name in names:
      flag = flags.FLAGS[name]
      print(f"  --{'[no]' if flag.boolean else ''}{name}: {flag.help}\n"
            f"    (default: {flag.default_as_str})")
    print()
  print("Every flag, TensorFlow's and absl's included: --helpfull")
  sys.exit(0)
