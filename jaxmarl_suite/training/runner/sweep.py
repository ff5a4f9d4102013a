"""Sweeps: one YAML file describes a grid over tasks x algorithms x hyperparameters x seeds
(``jaxmarl-suite sweep SWEEP.yaml``).

A **block** is one (task, algorithm) pair. Its hyperparameter lists form its grid, its seeds are vmapped,
and it trains as one compiled program into its own run folder, ``<out>/<task>/<algorithm>/``. Each block's
values go to ``build_experiment``, the function ``jaxmarl-suite train`` ends in, so presets, validation and
the run folder are exactly those of a ``train`` run. The whole sweep is validated (every block's env and
trainer built) before the first block trains. A re-run skips the blocks that already finished and resumes
the interrupted ones from their newest checkpoint. ``jaxmarl_suite.pipeline.run_sweep`` adds what comes
after the runs: each block's plot and GIF, and the report comparing every block.

The YAML schema, the resumption rules and an example are in ``docs/sweeps.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import itertools
import json
import math
import re
import sys
import time
import traceback
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import yaml

# Only the light config module is imported here: the ``jaxmarl-suite`` parser imports this module to
# declare the ``sweep`` flags, and ``--help`` should not pay for importing JAX. The runner and checkpoints
# are imported where they are used.
from jaxmarl_suite.errors import ConfigError, IncompatibleEnvError
from jaxmarl_suite.training.runner.config import (
    Experiment,
    baseline_module,
    build_experiment,
    check_values,
    experiment_identity,
    known_baselines,
    resume_experiment,
    to_plain,
)
from jaxmarl_suite.training.runner.logger import FINAL_FRACTION
from jaxmarl_suite.training.runner.run_folder import is_finished, is_run_dir, read_run_config

SWEEP_KEYS = ("name", "description", "out", "seed", "seeds", "tasks", "algorithms", "config", "hparams",
              "skip", "wandb", "progress", "artifacts", "report")
"""Top-level keys of a sweep file."""
ALGORITHM_KEYS = ("baseline", "preset", "config", "hparams")
"""Keys of one entry of ``algorithms``."""
SKIP_KEYS = ("task", "algorithm")
"""Keys of one entry of ``skip``."""
REPORT_KEYS = ("reps", "final_fraction", "seed", "confidence", "normalize")
"""Keys of ``report`` (the arguments of ``write_report``)."""
WANDB_MODES = ("disabled", "offline", "online")

_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
"""What an algorithm entry's name (a folder name) may look like."""


# ------------------------------------------------------------------------------------------ the file
@dataclasses.dataclass(frozen=True)
class AlgorithmEntry:
    """One entry of ``algorithms``: a baseline with its own settings."""

    name: str
    """The entry's key: the run folder's name and how logs refer to it."""
    baseline: str
    """Baseline module (``ippo``, ``mappo``); defaults to ``name``."""
    preset: str | None
    """Preset name or path passed as ``--preset`` (default: ``<baseline>_<task>`` when it exists)."""
    config: dict[str, Any]
    """``Config`` fields for this entry, over the sweep's shared ``config``."""
    hparams: dict[str, Any]
    """``HParams`` fields (a value, or a list of values to sweep), over the sweep's shared ``hparams``."""


@dataclasses.dataclass(frozen=True)
class ReportOptions:
    """Arguments of ``write_report`` for the report written at the end."""

    reps: int = 2000
    """Bootstrap resamples."""
    final_fraction: float = FINAL_FRACTION
    """A run's score is its mean return over this last fraction of logged updates."""
    seed: int = 0
    """Bootstrap seed."""
    confidence: float = 0.95
    """Confidence level of the intervals."""
    normalize: dict[str, tuple[float, float]] | None = None
    """Fixed ``(min, max)`` score range per task; None: the package's reference scores (0 = a random
    policy, 1 = a strong score; docs/evaluation.md)."""


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A validated sweep file."""

    source: str
    """Where it came from (a path, or ``<mapping>``), for error messages."""
    name: str
    """Shown in logs; the default ``out`` is ``runs/sweeps/<name>``."""
    out: Path
    """Root folder: blocks go to ``<out>/<task>/<algorithm>/``, the report to ``<out>/report/``."""
    seed: int
    """Base seed of every block."""
    seeds: int
    """Seeds per grid point, vmapped in each block's program."""
    tasks: tuple[str, ...]
    """Env ids."""
    algorithms: tuple[AlgorithmEntry, ...]
    """Algorithm entries, in file order."""
    config: dict[str, Any]
    """``Config`` fields shared by every algorithm."""
    hparams: dict[str, Any]
    """``HParams`` fields shared by every algorithm."""
    skip: frozenset[tuple[str, str]]
    """``(task, algorithm)`` pairs left out on purpose."""
    wandb: str
    """wandb mode of every block (``disabled`` unless the file says otherwise)."""
    progress: bool
    """Print each block's progress."""
    artifacts: bool
    """Write each block's returns plot and policy GIF."""
    report: ReportOptions | None
    """Options of the final report; None when the file says ``report: false``."""


def _where(source: str, *keys: str | int) -> str:
    """``source: a.b[2].c``, the place in the file an error is about."""
    path = ""
    for key in keys:
        path += f"[{key}]" if isinstance(key, int) else (f".{key}" if path else key)
    return f"{source}: {path}" if path else source


def _reject_unknown(data: Mapping[str, Any], allowed: Sequence[str], where: str, what: str = "key") -> None:
    unknown = [key for key in data if key not in allowed]
    if not unknown:
        return
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(str(key), list(allowed), n=1)
        parts.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ConfigError(f"{where}: unknown {what}(s) {', '.join(parts)}; allowed: {list(allowed)}")


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping, got {value!r}")
    return {str(key): item for key, item in value.items()}


def _integer(value: Any, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
        bound = f" >= {minimum}" if minimum is not None else ""
        raise ConfigError(f"{where}: expected an integer{bound}, got {value!r}")
    return value


def _number(value: Any, where: str, low: float, high: float, *, open_high: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and low < value
    ok = ok and (value < high if open_high else value <= high)
    if not ok:
        raise ConfigError(f"{where}: expected a number in ({low}, {high}{')' if open_high else ']'}, "
                          f"got {value!r}")
    return float(value)


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _check_fields(values: dict[str, Any], cls: type, where: str, *, static: bool) -> None:
    """A sweep's rules on top of the one check of config values (``config.check_values``): the env of a
    block comes from ``tasks``, and a static (``Config``) field takes one value, since changing it
    recompiles; a traceable (``HParams``) field takes a value or a non-empty list of values."""
    if static:
        hints = typing.get_type_hints(cls)
        for name, value in values.items():
            at = f"{where}.{name}"
            if name == "env_id":
                raise ConfigError(f"{at}: the env of each block comes from `tasks`; list it there")
            kind = hints.get(name)
            container = kind in (tuple, dict) or typing.get_origin(kind) in (tuple, dict)
            if kind is not None and isinstance(value, list) and not container:
                raise ConfigError(
                    f"{at}: Config fields are static (changing one recompiles), so a block takes one value, "
                    f"got {value!r}. To compare values, add one algorithm entry per value (an entry may set "
                    f"`baseline:` and its own `config:`), or sweep an HParams field instead")
    check_values(cls, values, where=where, grid=not static)


def available_sweeps() -> list[str]:
    """Names of the sweep files shipped in ``baselines/configs/sweeps/`` (without ``.yaml``)."""
    from jaxmarl_suite.training.runner.config import preset_dirs

    return sorted({p.stem for d in preset_dirs() for p in (d / "sweeps").glob("*.yaml")})


def resolve_sweep_file(source: str | Path) -> Path:
    """A sweep file by path, or by name as presets are (``mpe_small`` is
    ``baselines/configs/sweeps/mpe_small.yaml``); an unknown name lists the closest shipped ones."""
    from jaxmarl_suite.training.runner.config import preset_dirs

    path = Path(source)
    if path.is_file():
        return path
    if not path.suffix and len(path.parts) == 1:
        for folder in preset_dirs():
            candidate = folder / "sweeps" / f"{path}.yaml"
            if candidate.is_file():
                return candidate
    close = difflib.get_close_matches(path.stem, available_sweeps(), n=3, cutoff=0.4)
    raise ConfigError(f"{path}: no such sweep file, and no shipped sweep of that name (closest: "
                      f"{close or 'none'}; all: {available_sweeps()})")


def load_sweep(source: str | Path | Mapping[str, Any], *, out: str | Path | None = None) -> Sweep:
    """Read and validate a sweep file (or an already parsed mapping); ``out`` overrides the file's ``out``.

    Checks the schema, every key (unknown ones fail with the closest match) and the field names of every
    algorithm entry against its baseline. The blocks' values are checked by ``plan_sweep``.
    """
    from jaxmarl_suite.core.registry import env_spec
    if isinstance(source, Mapping):
        where, data, stem = "<mapping>", dict(source), "sweep"
    else:
        path = resolve_sweep_file(source)
        where, stem = str(path), path.stem
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: not valid YAML: {error}") from error
    data = _mapping(data, where)
    _reject_unknown(data, SWEEP_KEYS, where)

    name = _string(data.get("name", stem), _where(where, "name"))
    if "description" in data:
        _string(data["description"], _where(where, "description"))
    out_dir = Path(out) if out is not None else Path(_string(data.get("out", f"runs/sweeps/{name}"),
                                                             _where(where, "out")))
    seed = _integer(data.get("seed", 0), _where(where, "seed"))
    seeds = _integer(data.get("seeds", 1), _where(where, "seeds"), minimum=1)

    tasks_value = data.get("tasks")
    if not isinstance(tasks_value, list) or not tasks_value:
        raise ConfigError(f"{_where(where, 'tasks')}: expected a non-empty list of env ids, "
                          f"got {tasks_value!r}")
    tasks = []
    for index, task in enumerate(tasks_value):
        at = _where(where, "tasks", index)
        task = _string(task, at)
        try:
            env_spec(task)
        except ValueError as error:
            raise ConfigError(f"{at}: {error}") from None
        if task in tasks:
            raise ConfigError(f"{at}: {task!r} is listed twice")
        tasks.append(task)

    algorithms_value = data.get("algorithms")
    if not isinstance(algorithms_value, dict) or not algorithms_value:
        raise ConfigError(f"{_where(where, 'algorithms')}: expected a mapping of algorithm entries, e.g. "
                          f"`ippo: {{}}`, got {algorithms_value!r}")
    baselines = known_baselines()
    shared_config = _mapping(data.get("config"), _where(where, "config"))
    shared_hparams = _mapping(data.get("hparams"), _where(where, "hparams"))
    entries = []
    for key, value in algorithms_value.items():
        entry_name = str(key)
        at = _where(where, "algorithms", entry_name)
        if not _FOLDER_NAME.fullmatch(entry_name):
            raise ConfigError(f"{at}: an entry name is a folder name: letters, digits, '_', '.', '+', '-'")
        entry = _mapping(value, at)
        _reject_unknown(entry, ALGORITHM_KEYS, at)
        baseline = _string(entry.get("baseline", entry_name), f"{at}.baseline")
        if baseline not in baselines:
            close = difflib.get_close_matches(baseline, baselines, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            hint += "" if "baseline" in entry else "; an entry named otherwise needs `baseline: NAME`"
            raise ConfigError(f"{at}: unknown baseline {baseline!r}{hint}; known: {baselines}")
        module = baseline_module(baseline)
        for section, cls, static in (("config", module.Config, True), ("hparams", module.HParams, False)):
            _check_fields(shared_config if static else shared_hparams, cls, _where(where, section),
                          static=static)
            _check_fields(_mapping(entry.get(section), f"{at}.{section}"), cls, f"{at}.{section}",
                          static=static)
        preset = entry.get("preset")
        entries.append(AlgorithmEntry(
            entry_name, baseline, None if preset is None else _string(preset, f"{at}.preset"),
            _mapping(entry.get("config"), f"{at}.config"), _mapping(entry.get("hparams"), f"{at}.hparams")))

    skip_value = data.get("skip") or []
    if not isinstance(skip_value, list):
        raise ConfigError(f"{_where(where, 'skip')}: expected a list of {{task, algorithm}} mappings")
    skip = set()
    for index, item in enumerate(skip_value):
        at = _where(where, "skip", index)
        pair = _mapping(item, at)
        _reject_unknown(pair, SKIP_KEYS, at)
        if set(pair) != set(SKIP_KEYS):
            raise ConfigError(f"{at}: needs both `task` and `algorithm`, got {item!r}")
        # A skip entry that matches no block is a typo that would silently let the block run.
        for key, known in (("task", tasks), ("algorithm", [e.name for e in entries])):
            if pair[key] not in known:
                close = difflib.get_close_matches(str(pair[key]), known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigError(f"{at}.{key}: {pair[key]!r} is not in `{key}s`{hint}; known: {known}")
        skip.add((str(pair["task"]), str(pair["algorithm"])))

    wandb = data.get("wandb", "disabled")
    if wandb not in WANDB_MODES:
        raise ConfigError(f"{_where(where, 'wandb')}: expected one of {list(WANDB_MODES)}, got {wandb!r}")
    progress = _boolean(data.get("progress", True), _where(where, "progress"))
    artifacts = _boolean(data.get("artifacts", True), _where(where, "artifacts"))
    return Sweep(where, name, out_dir, seed, seeds, tuple(tasks), tuple(entries), shared_config,
                 shared_hparams, frozenset(skip), str(wandb), progress, artifacts,
                 _report_options(data.get("report", {}), where, tasks))


def _report_options(value: Any, where: str, tasks: Sequence[str]) -> ReportOptions | None:
    if value is False:
        return None
    at = _where(where, "report")
    options = _mapping(value, at)
    _reject_unknown(options, REPORT_KEYS, at)
    defaults = ReportOptions()
    normalize = None
    if options.get("normalize") is not None:
        ranges = _mapping(options["normalize"], f"{at}.normalize")
        missing = [t for t in tasks if t not in ranges]
        if missing:
            raise ConfigError(f"{at}.normalize: needs a [min, max] for every task; missing {missing}")
        normalize = {}
        for task, bounds in ranges.items():
            ok = (isinstance(bounds, list) and len(bounds) == 2
                  and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds))
            ok = ok and math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and bounds[0] < bounds[1]
            if not ok:
                raise ConfigError(f"{at}.normalize.{task}: expected [min, max] with min < max, "
                                  f"got {bounds!r}")
            normalize[task] = (float(bounds[0]), float(bounds[1]))
    return ReportOptions(
        reps=_integer(options.get("reps", defaults.reps), f"{at}.reps", minimum=1),
        final_fraction=_number(options.get("final_fraction", defaults.final_fraction),
                               f"{at}.final_fraction", 0.0, 1.0),
        seed=_integer(options.get("seed", defaults.seed), f"{at}.seed"),
        confidence=_number(options.get("confidence", defaults.confidence), f"{at}.confidence", 0.0, 1.0,
                           open_high=True),
        normalize=normalize,
    )


# ---------------------------------------------------------------------------------------------- blocks
@dataclasses.dataclass(frozen=True)
class Block:
    """One (task, algorithm) of a sweep: one experiment, one compiled program, one run folder."""

    task: str
    algorithm: str
    """The algorithm entry's name."""
    module: ModuleType
    """The baseline module."""
    experiment: Experiment
    """What ``run_experiment`` gets (a resumed experiment when ``status`` is ``resume``)."""
    status: str
    """``new``, ``done`` (a finished run of the same experiment is there: skipped), ``resume`` (an
    interrupted one with a checkpoint: continued from it) or ``restart`` (an interrupted one without)."""
    start_update: int = 0
    """Update a resumed block continues from."""
    env: Any = None
    """The block's env, built once while planning and handed to ``run_experiment``."""

    @property
    def name(self) -> str:
        """``<task>/<algorithm>``, the run folder relative to the sweep's ``out``."""
        return f"{self.task}/{self.algorithm}"

    @property
    def run_dir(self) -> Path:
        """The block's run folder."""
        return self.experiment.run_dir


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    """Every block of a sweep, validated, in the order they train (task by task, in file order)."""

    sweep: Sweep
    blocks: tuple[Block, ...]
    skipped: tuple[tuple[str, str], ...]
    """``(task, algorithm)`` pairs listed under ``skip``."""


def block_values(sweep: Sweep, entry: AlgorithmEntry, task: str
                 ) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The ``config`` and swept ``hparams`` values of one block: the sweep's settings, then the entry's
    (which win), and the task as ``env_id``. A single hyperparameter value is a grid of one."""
    config = {**sweep.config, **entry.config, "env_id": task}
    hparams = {name: list(value) if isinstance(value, list | tuple) else [value]
               for name, value in {**sweep.hparams, **entry.hparams}.items()}
    return config, hparams


def _set_at(sweep: Sweep, entry: AlgorithmEntry, field: str) -> str | None:
    """Where in the sweep file ``field`` was set for ``entry`` (None: by a preset or the default)."""
    for section in ("config", "hparams"):
        if field in getattr(entry, section):
            return f"algorithms.{entry.name}.{section}.{field}"
    for section in ("config", "hparams"):
        if field in getattr(sweep, section):
            return f"{section}.{field}"
    return None


def _build_block(sweep: Sweep, entry: AlgorithmEntry, task: str, module: ModuleType, where: str
                 ) -> tuple[Experiment, Any]:
    """The block's experiment and env, validated the way ``train`` validates them, or ``ConfigError``
    naming the block and where in the sweep file the bad value was set."""
    from jaxmarl_suite.training.runner.experiment import build_trainer

    config, hparams = block_values(sweep, entry, task)
    try:
        experiment = build_experiment(
            entry.baseline, module.Config, module.HParams, config=config, hparams=hparams,
            preset=entry.preset, seeds=sweep.seeds, seed=sweep.seed, run_dir=sweep.out / task / entry.name,
            wandb=sweep.wandb, progress=sweep.progress)
        # Building the env and the trainer catches pairs that parse but cannot train (an action space the
        # baseline does not support, groups that param_sharing=all cannot merge) without compiling anything.
        env = build_trainer(module, experiment.config).env
    except IncompatibleEnvError as error:
        raise ConfigError(f"{where}: {error}; list the pair under `skip:` to leave it out") from None
    except ConfigError as error:
        field = str(error).split(":", 1)[0]
        # The tasks were checked up front, so an env_id or env_kwargs error here is about the env's
        # arguments or the pairing: right for one task and wrong for another.
        env_arguments = field in ("env_id", "env_kwargs")
        origin = _set_at(sweep, entry, "env_kwargs" if env_arguments else field)
        hint = (f"; if {entry.name} cannot run on {task}, list the pair under `skip:`" if env_arguments
                else "")
        raise ConfigError(f"{where}" + (f" (set at {origin})" if origin else "") + f": {error}{hint}"
                          ) from None
    return experiment, env


def _differences(saved: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    found = []
    for key, value in expected.items():
        if key == "config" and isinstance(saved.get(key), dict):
            # a field added since the folder was written, at an empty default (extensions: []), is no change
            fields = sorted(f for f in set(value) | set(saved[key])
                            if f in saved[key] or value.get(f) not in ([], {}, None))
            found += [f"config.{f}: folder has {saved[key].get(f)!r}, sweep wants {value.get(f)!r}"
                      for f in fields if saved[key].get(f) != value.get(f)]
        elif saved.get(key) != value:
            found.append(f"{key}: folder has {saved.get(key)!r}, sweep wants {value!r}")
    return found


def _folder_status(experiment: Experiment, where: str) -> tuple[str, int]:
    """``(status, start_update)`` of a block's run folder (see ``Block.status``)."""
    from jaxmarl_suite.training.runner.checkpoint import list_checkpoints, read_meta

    run_dir = experiment.run_dir
    if not is_run_dir(run_dir):
        return "new", 0
    saved = json.loads(json.dumps(read_run_config(run_dir), default=str))
    differences = _differences(saved, experiment_identity(experiment))
    if differences:
        # Never overwrite results: a changed sweep file or a reused `out` must be a conscious decision.
        raise ConfigError(
            f"{where}: {run_dir} already holds a different experiment ({'; '.join(differences)}). Delete the "
            "folder to retrain it, or give the sweep another `out` (or --out)")
    if is_finished(run_dir):
        return "done", experiment.config.num_updates
    checkpoints = list_checkpoints(run_dir)
    if checkpoints:
        return "resume", int(read_meta(checkpoints[-1])["update"])
    return "restart", 0


def plan_sweep(sweep: Sweep) -> SweepPlan:
    """Build and validate every block, reading nothing but the sweep and the run folders already there.

    Raises ``ConfigError`` naming the block on the first one that fails, so a mistake in the last block is
    found before the first one trains.
    """
    blocks, skipped = [], []
    for task, entry in itertools.product(sweep.tasks, sweep.algorithms):
        if (task, entry.name) in sweep.skip:
            skipped.append((task, entry.name))
            continue
        where = f"{sweep.source}: block {task}/{entry.name}"
        module = baseline_module(entry.baseline)
        experiment, env = _build_block(sweep, entry, task, module, where)
        status, start = _folder_status(experiment, where)
        if status == "resume":
            experiment = resume_experiment(entry.baseline, module.Config, module.HParams, experiment.run_dir,
                                           wandb=sweep.wandb, progress=sweep.progress)
        elif status == "restart":  # its folder holds this block's config but no checkpoint: start over
            experiment = dataclasses.replace(experiment, overwrite=True)
        blocks.append(Block(task, entry.name, module, experiment, status, start, env))
    return SweepPlan(sweep, tuple(blocks), tuple(skipped))


def _swept(experiment: Experiment) -> str:
    """The hyperparameters that vary over a block's grid, as ``name=[a, b]``."""
    points = [to_plain(p) for p in experiment.grid]
    varying = [n for n in points[0] if len({json.dumps(p[n]) for p in points}) > 1]
    return " ".join(f"{n}=[{', '.join(f'{v:g}' for v in dict.fromkeys(p[n] for p in points))}]"
                    for n in varying) or "-"


def programs(block: Block) -> int:
    """Compiled training programs a block still needs: one per distinct chunk length (one unless
    ``checkpoint_every`` cuts the run unevenly); 0 when it is done."""
    from jaxmarl_suite.training.runner.experiment import chunk_lengths

    if block.status == "done":
        return 0
    config = block.experiment.config
    return len(set(chunk_lengths(block.start_update, config.num_updates, config.checkpoint_every)))


def format_plan(plan: SweepPlan) -> str:
    """The blocks as a table (what ``--dry-run`` prints)."""
    sweep = plan.sweep
    header = ["block", "grid", "seeds", "runs", "updates", "env steps/run", "programs", "status", "swept"]
    rows = []
    for block in plan.blocks:
        config, grid = block.experiment.config, len(block.experiment.grid)
        status = {"done": "done: skip", "new": "train", "restart": "train (restart)",
                  "resume": f"resume from update {block.start_update}"}[block.status]
        rows.append([block.name, str(grid), str(block.experiment.num_seeds),
                     str(grid * block.experiment.num_seeds), str(config.num_updates),
                     f"{config.num_updates * config.batch_size:,}", str(programs(block)), status,
                     _swept(block.experiment)])
    rows += [[f"{task}/{name}", "-", "-", "-", "-", "-", "0", "skip (listed)", "-"]
             for task, name in plan.skipped]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [f"sweep {sweep.name!r} ({sweep.source}) -> {sweep.out}", ""]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
              for row in [header, *rows]]
    todo = [b for b in plan.blocks if b.status != "done"]
    lines += ["", f"{len(plan.blocks)} block(s): {len(todo)} to train as {sum(map(programs, todo))} compiled "
                  f"program(s), {len(plan.blocks) - len(todo)} already done, {len(plan.skipped)} skipped by "
                  f"`skip:`; {sum(len(b.experiment.grid) * b.experiment.num_seeds for b in todo)} run(s) "
                  "to train"]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ run
@dataclasses.dataclass
class SweepResult:
    """What ``run_sweep`` did."""

    plan: SweepPlan
    trained: list[Block] = dataclasses.field(default_factory=list)
    """Blocks trained (or resumed) by this call."""
    reused: list[Block] = dataclasses.field(default_factory=list)
    """Blocks skipped because their run folder already held the finished run."""
    failed: list[tuple[Block, str]] = dataclasses.field(default_factory=list)
    """Blocks that raised while training (only with ``keep_going``), with the error."""
    report: Path | None = None
    """``report.md``, when one was written."""


BlockRunner = Callable[[Block], Any]
"""Trains one block; ``jaxmarl_suite.pipeline`` passes one that also writes the block's plot and GIF."""


def train_blocks(plan: SweepPlan, run_block: BlockRunner | None = None, *, keep_going: bool = False,
                 stream: TextIO | None = None) -> SweepResult:
    """Train the plan's blocks one after the other (``run_experiment`` on each, with the env built while
    planning, unless ``run_block`` is given), skipping the finished ones.

    By default the first block that fails stops the sweep (the blocks before it stay done, so a re-run
    carries on); ``keep_going`` trains the others. Progress lines go to ``stream`` (stdout); each block's
    own log goes to stderr as with ``train``. The report is ``jaxmarl_suite.pipeline.run_sweep``'s step.
    """
    from jaxmarl_suite.training.runner.experiment import run_experiment

    def train(block: Block) -> Any:
        return run_experiment(block.module, block.experiment, block.env)

    run_block = run_block or train
    stream = stream or sys.stdout
    sweep, result = plan.sweep, SweepResult(plan)
    total = len(plan.blocks)
    print(f"sweep {sweep.name!r}: {total} block(s) -> {sweep.out}", file=stream, flush=True)
    for index, block in enumerate(plan.blocks, 1):
        head = f"[{index}/{total}] {block.name}"
        if block.status == "done":
            print(f"{head}: already done, skipped ({block.run_dir})", file=stream, flush=True)
            result.reused.append(block)
            continue
        action = f"resuming from update {block.start_update}" if block.status == "resume" else "training"
        print(f"{head}: {action} {len(block.experiment.grid)} grid point(s) x {block.experiment.num_seeds} "
              f"seed(s)", file=stream, flush=True)
        started = time.perf_counter()
        try:
            run_block(block)
        except Exception as error:
            if not keep_going:
                print(f"{head}: failed; the finished blocks are kept and a re-run skips them", file=stream,
                      flush=True)
                raise
            traceback.print_exc()
            result.failed.append((block, f"{type(error).__name__}: {error}"))
            print(f"{head}: FAILED ({type(error).__name__}: {error}); going on", file=stream, flush=True)
            continue
        result.trained.append(block)
        print(f"{head}: done in {time.perf_counter() - started:.1f} s", file=stream, flush=True)
    return result


def finished_run_dirs(result: SweepResult) -> list[Path]:
    """The run folders of the blocks that are done (trained now or before), in plan order."""
    names = {b.name for b in result.trained + result.reused}
    return [b.run_dir for b in result.plan.blocks if b.name in names]


# ---------------------------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``sweep`` flags (shared by ``jaxmarl-suite sweep`` and ``scripts/sweep.py``)."""
    parser.add_argument("sweep_file", metavar="SWEEP",
                        help="sweep file, or the name of one in baselines/configs/sweeps/ (e.g. mpe_small; "
                             "schema: docs/sweeps.md)")
    parser.add_argument("--out", default=None, help="root folder of the run folders and the report "
                                                    "(default: the file's `out`, else runs/sweeps/<name>)")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate every block and print them (grid, seeds, compiled programs, status) "
                             "without training")
    parser.add_argument("--keep-going", action="store_true",
                        help="when a block fails, train the others and report on the finished ones")
