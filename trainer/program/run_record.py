"""The run's whole configuration, recorded in model_dir/run_config.json when training starts and compared when it resumes."""

import dataclasses
import json
import os
from typing import Dict, Tuple

from absl import logging

from common import files
from trainer.program.config import configs as configs_lib

RUN_CONFIG_FILE = "run_config.json"
# The step from which a record's flags are assumed: a run trained before runs kept records.
ASSUMED = "assumed_from_step"
# What the input stream, the updates and the schedule are counted in: a resume that changes
# these would continue another run (the model's own flags are bound by its card).
BINDING = ("global_batch_size", "accumulate_steps")


def flags(configs: configs_lib.Configs) -> Dict[str, object]:
  """Every flag of `configs` by name, as JSON reads it back."""
  values = {}
  for part in (configs.run, configs.data, configs.model, configs.optimization):
    values.update(dataclasses.asdict(part))
  return json.loads(json.dumps(values))  # tuples become lists, as in the file


def _stored(model_dir: str):
  return files.read_json(os.path.join(model_dir, RUN_CONFIG_FILE),
                         {"flags": dict, "changes": list},
                         fix="it records the run's flags; restore it from a copy, or move "
                         "it aside to record the flags afresh.")


def _changes(before: Dict, now: Dict) -> Dict[str, Tuple]:
  return {name: (before.get(name), now.get(name)) for name in sorted(set(before) | set(now))
          if before.get(name) != now.get(name)}


def check(model_dir: str, configs: configs_lib.Configs):
  """Raises ValueError if resuming the run in `model_dir` with `configs` would continue
  another run (a BINDING flag differs), naming the flags."""
  stored = _stored(model_dir)
  if stored is None:
    return
  binding = {name: change for name, change in _changes(stored["flags"], flags(configs)).items()
             if name in BINDING}
  if binding and stored.get(ASSUMED) is not None:  # the run's own values are not known
    logging.warning(
        "%s recorded no flags before step %d (it was trained before runs kept a record), so "
        "its batch and accumulation are not known: not holding this resume's %s to the "
        "values assumed then (%s).", model_dir, stored[ASSUMED],
        ", ".join(f"--{n}={new}" for n, (_, new) in binding.items()),
        ", ".join(f"--{n}={old}" for n, (old, _) in binding.items()))
    return
  retyped = {n: old for n, (old, new) in binding.items() if str(old) == str(new)}
  if retyped:
    raise ValueError(
        f"{os.path.join(model_dir, RUN_CONFIG_FILE)} holds "
        f"{', '.join(f'{n}={old!r}' for n, old in retyped.items())}, of another type than "
        "the flag's: it was edited by hand. Restore it from a copy, or write the value as "
        "the flag's type (e.g. 8, not \"8\").")
  if binding:
    raise ValueError(
        f"{model_dir} was trained with "
        f"{', '.join(f'--{n}={old}' for n, (old, _) in binding.items())}, but the flags say "
        f"{', '.join(f'--{n}={new}' for n, (_, new) in binding.items())}: resuming would count "
        "the input and the updates differently. Use the run's values, or a new --model_dir.")


def record(model_dir: str, configs: configs_lib.Configs, *, step: int, replace: bool = False):
  """Writes `configs` to `model_dir/run_config.json` as the run (re)starts at `step`. Flags
  changed since the last start are logged in one line and kept in its `changes`; `replace`
  (a run with no checkpoint yet) starts the record afresh."""
  now = flags(configs)
  stored = None if replace else _stored(model_dir)
  assumed = stored.get(ASSUMED) if stored else None
  if stored is None and not replace:  # checkpoints from before runs kept a record
    assumed = step
    logging.warning(
        "%s has checkpoints but no %s: it was trained before runs recorded their flags. The "
        "model card holds its model; its batch, accumulation and schedule cannot be known. "
        "Recording this resume's flags as assumed from step %d; later resumes are not held "
        "to them.", model_dir, RUN_CONFIG_FILE, step)
  history = stored["changes"] if stored else []
  changed = _changes(stored["flags"], now) if stored else {}
  if changed:
    logging.warning("Resuming at step %d with flags changed since the run last started: %s.",
                    step, ", ".join(f"--{n} {old} -> {new}" for n, (old, new) in changed.items()))
    history.append(dict(step=step, changed={n: list(change) for n, change in changed.items()}))
  written = dict(flags=now, changes=history)
  if assumed is not None:
    written[ASSUMED] = assumed
  files.write_json(os.path.join(model_dir, RUN_CONFIG_FILE), written)
