"""marl-eval's JSON results layout: writing runs in it and reading files in it back.

marl-eval (Gorsane et al., 2022, ``id-marl-eval``) is the evaluation protocol Mava and BenchMARL log to.
One file holds, nested: environment -> task -> algorithm -> run -> evaluation step::

    {"smax": {"SMAX_2s3z": {"mappo": {"seed_0": {
        "step_0": {"step_count": 16384, "episode_return": [3.1], "win_rate": [0.0]},
        "step_1": {...},
        "absolute_metrics": {"episode_return": [19.8], "win_rate": [1.0]}}}}}}

Every step has ``step_count`` (env steps so far) and, per metric, a list of values (marl-eval averages a
list; Mava writes one value per list). ``absolute_metrics`` holds the run's final score. marl-eval reads
keys case-insensitively and refuses algorithm names with commas.

This module converts between that layout and ``MarlEvalRun`` records; ``report`` (``report.py``) maps
records to and from its runs, so that runs of this suite and of Mava or BenchMARL sit in one report.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jaxmarl_suite.errors import ConfigError

FILE_NAME = "marl_eval.json"
"""What ``report`` writes beside ``report.md``."""

RETURN_METRIC = "episode_return"
"""The name this suite writes its headline return under (Mava's name for it)."""

RETURN_NAMES = (RETURN_METRIC, "mean_episode_return", "return", "reward")
"""The names a return goes by in files from other suites (older Mava logs ``mean_episode_return``), in the
order ``read`` looks for them when no metric is given."""

ABSOLUTE = "absolute_metrics"
_STEP = re.compile(r"step_(\d+)")


@dataclass
class MarlEvalRun:
    """One run (one seed of one algorithm on one task) in marl-eval's terms."""

    environment: str
    task: str
    algorithm: str
    run: str
    step_counts: np.ndarray
    """Env steps at each evaluation step, in order."""
    metrics: dict[str, list[list[float]]]
    """Per metric, per evaluation step, its values (an empty list where the step measured none)."""
    absolute: dict[str, list[float]] = field(default_factory=dict)
    """The run's ``absolute_metrics``."""

    def means(self, metric: str) -> np.ndarray:
        """The metric's mean at each step, NaN where the step has no value."""
        return np.array([float(np.mean(v)) if len(v) else math.nan for v in self.metrics[metric]])


def _values(value: Any, where: str = "") -> list[float]:
    """Finite floats, for JSON (which has no NaN): a NaN or missing value is no value. Anything else
    (text, nested lists) raises ConfigError naming ``where``."""
    items = value if isinstance(value, list | tuple | np.ndarray) else [value]
    try:
        return [float(v) for v in items if v is not None and math.isfinite(float(v))]
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected a number or a list of numbers, got {value!r}") from None


def to_layout(runs: Sequence[MarlEvalRun]) -> dict[str, Any]:
    """The nested dict marl-eval reads. Raises ValueError for an algorithm name with a comma (marl-eval
    refuses those) and for two runs under the same keys."""
    data: dict[str, Any] = {}
    for r in runs:
        if "," in r.algorithm:
            raise ValueError(f"marl-eval refuses algorithm names with commas: {r.algorithm!r}")
        algorithm = data.setdefault(r.environment, {}).setdefault(r.task, {}).setdefault(r.algorithm, {})
        if r.run in algorithm:
            raise ValueError(f"two runs named {r.run!r} of {r.algorithm} on {r.environment}/{r.task}")
        steps: dict[str, Any] = {}
        for k, count in enumerate(r.step_counts):
            steps[f"step_{k}"] = {"step_count": int(count),
                                  **{name: _values(per_step[k]) for name, per_step in r.metrics.items()}}
        steps[ABSOLUTE] = {name: _values(values) for name, values in r.absolute.items()}
        algorithm[r.run] = steps
    return data


def write(path: str | Path, runs: Sequence[MarlEvalRun]) -> Path:
    """Write ``runs`` to ``path`` in marl-eval's layout (``to_layout``); returns the path."""
    path = Path(path)
    path.write_text(json.dumps(to_layout(runs), indent=1, allow_nan=False) + "\n")
    return path


def _mapping(value: Any, where: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"{where}: expected a non-empty mapping of {what}, got {type(value).__name__}")
    return value


def read(path: str | Path) -> list[MarlEvalRun]:
    """Every run in a marl-eval JSON file (as Mava's and BenchMARL's loggers write them, or ``write``),
    steps in order. Raises ConfigError naming the place in the file that does not follow the layout."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not a readable JSON file ({error})") from None
    runs = []
    for environment, tasks in _mapping(data, str(path), "environments").items():
        for task, algorithms in _mapping(tasks, f"{path}: {environment}", "tasks").items():
            for algorithm, named_runs in _mapping(algorithms, f"{path}: {environment}/{task}",
                                                  "algorithms").items():
                for name, entries in _mapping(named_runs, f"{path}: {environment}/{task}/{algorithm}",
                                              "runs").items():
                    where = f"{path}: {environment}/{task}/{algorithm}/{name}"
                    runs.append(_read_run(_mapping(entries, where, "steps"), where,
                                          environment, task, algorithm, name))
    return runs


def _read_run(entries: Mapping[str, Any], where: str, environment: str, task: str, algorithm: str,
              name: str) -> MarlEvalRun:
    steps = sorted((int(m.group(1)), key) for key in entries if (m := _STEP.fullmatch(key)))
    unknown = [k for k in entries if not _STEP.fullmatch(k) and "absolute" not in k.lower()]
    if unknown or not steps:
        raise ConfigError(f"{where}: expected step_0, step_1, ... and absolute_metrics, "
                          f"got {sorted(entries)}")
    counts, metrics = [], {}
    for index, (_, key) in enumerate(steps):
        step = _mapping(entries[key], f"{where}/{key}", "metrics")
        if not isinstance(step.get("step_count"), int | float):
            raise ConfigError(f"{where}/{key}: no numeric step_count")
        counts.append(int(step["step_count"]))
        for metric, value in step.items():
            if metric in ("step_count", "elapsed_time"):
                continue
            # a metric first logged at a later step has no values before it
            values = _values(value, f"{where}/{key}/{metric}")
            metrics.setdefault(metric, [[] for _ in range(index)]).append(values)
        for per_step in metrics.values():
            if len(per_step) == index:
                per_step.append([])
    absolute_key = next((k for k in entries if "absolute" in k.lower()), None)
    absolute = ({m: _values(v, f"{where}/{absolute_key}/{m}")
                 for m, v in _mapping(entries[absolute_key], f"{where}/{absolute_key}", "metrics").items()}
                if absolute_key else {})
    return MarlEvalRun(environment, task, algorithm, name, np.asarray(counts, np.int64), metrics, absolute)


def return_metric(run: MarlEvalRun, metric: str | None = None) -> str:
    """The metric ``report`` scores ``run`` by: ``metric`` when given, else the first of ``RETURN_NAMES``
    it logs (a file may mix suites that name the return differently). Raises ConfigError naming the run
    and what it logs when it has none."""
    if metric is not None and metric in run.metrics:
        return metric
    if metric is None:
        for name in RETURN_NAMES:
            if name in run.metrics:
                return name
    wanted = repr(metric) if metric is not None else f"a return ({', '.join(RETURN_NAMES)})"
    raise ConfigError(f"{run.environment}/{run.task}/{run.algorithm}/{run.run} logs no {wanted}; it logs "
                      f"{sorted(run.metrics) or 'nothing'}: pick one with --marl-eval-metric")
