"""Comparing run folders: final returns per task, aggregates over tasks with stratified-bootstrap intervals,
probability of improvement, performance profiles and sample-efficiency curves, written as ``report.md``
plus three PNGs (``jaxmarl-suite report RUN_DIRS...``).

What is a run, a task and an algorithm here:

- **task**: the env id (``config.env_id`` of the run folder's ``config.yaml``).
- **algorithm**: the baseline's name plus whichever hyperparameters (grid point ``HParams``) or ``Config``
  fields take more than one value among the runs of that baseline on one task; so grid points, or run
  folders with e.g. a different ``--recurrent``, are compared as different algorithms, while presets that
  differ only *between* tasks do not split an algorithm. ``log_every`` and ``checkpoint_every`` never do.
- **run**: one seed of one grid point of one run folder. Its **score** is its final return,
  ``final_score`` (``training.runner.run_folder``; ``summary.json`` uses it): the mean of its headline return
  (``return_mean``; ``greedy_return_mean`` for the value-based baselines, ``headline_metrics``) over the
  last ``final_fraction`` (default ``FINAL_FRACTION``) of its logged updates, NaNs (updates in which no
  episode finished) ignored. A run with no finished episode in that window is left out and listed.

Before aggregating across tasks, scores are normalised per task to ``(score - low) / (high - low)`` with
fixed ``low``/``high`` that do not depend on the runs given, so numbers compare across reports:

- ``normalize`` (``--normalize ENV_ID=MIN:MAX``) when it names the task; otherwise
- the package's reference scores (``reference.py``, ``reference_scores.yaml``): ``low`` is what a uniformly
  random policy scores and ``high`` a documented strong score, so 0 = random and 1 = strong. They were
  measured with the env's default arguments and are used only when every run of the task used those.
- A task with neither: a report on that task alone shows raw per-agent returns (and no optimality gap,
  which needs a target); a report over several tasks stops with an error naming the task and the flag,
  because raw returns of different tasks cannot be aggregated.

Aggregates, probability of improvement and the performance profile use only the algorithms that have runs
on every task, since comparing aggregates over different task sets is meaningless; the per-task table
lists everything.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.evaluation import marl_eval
from jaxmarl_suite.evaluation.policy import mean_ci
from jaxmarl_suite.evaluation.reference import REFERENCE_FILE, reference_for
from jaxmarl_suite.evaluation.stats import (
    AGGREGATE_METRICS,
    Band,
    Interval,
    aggregate_with_ci,
    pairwise_improvement,
    performance_profile,
    sample_efficiency_curve,
)
from jaxmarl_suite.training.runner.run_folder import (
    FINAL_FRACTION,
    final_score,
    headline_metrics,
    is_run_dir,
    read_metrics,
    read_run_config,
)

FORMATS = ("markdown", "marl-eval")
"""What ``report`` writes: ``markdown`` (``report.md``, its figures and ``marl_eval.json``) or ``marl-eval``
(``marl_eval.json`` alone)."""

EXTRA_METRICS = ("win_rate",)
"""Columns of ``metrics.csv`` that the marl-eval file carries beside the return, where a run logged them."""

METRIC_TITLES = {"iqm": "IQM", "mean": "mean", "median": "median", "optimality_gap": "optimality gap"}

_NOT_ALGORITHM = {"env_id", "log_every", "checkpoint_every"}
"""Config fields that never make runs different algorithms (the task, and logging/checkpoint cadence)."""

_CURVE_POINTS = 30
"""Most env-step points on the sample-efficiency curve."""

SOCIAL_MEASURES = {
    "collective_return": "collective return",
    "equality": "equality (1 - Gini)",
    "cooperative_share": "cooperative share of pick-ups",
    "cooperative_pickups": "cooperative pick-ups per agent",
    "defecting_pickups": "defecting pick-ups per agent",
}
"""The social-dilemma columns of ``metrics.csv`` (``training.kit.envs.episode_metrics``) that the report
tabulates and plots for the runs that logged them."""


@dataclass
class Run:
    """One seed of one grid point of one run folder."""

    source: Path
    algorithm: str
    task: str
    grid_index: int
    seed_index: int
    base_seed: int
    hparams: dict[str, Any]
    config: dict[str, Any]
    env_steps: np.ndarray
    returns: np.ndarray
    """The run's headline return per logged update (NaN where no episode finished), in update order:
    ``return_mean``, or ``greedy_return_mean`` for the value-based baselines (``metric``)."""
    measures: dict[str, np.ndarray] = field(default_factory=dict)
    """The social measures (``SOCIAL_MEASURES``) this run logged, per logged update."""
    score: float = math.nan
    label: str = ""
    metric: str = "return_mean"
    """The column ``returns`` holds: the evaluation policy's (``run_folder.headline_metrics``)."""
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    """Other headline columns this run logged (``EXTRA_METRICS``), per logged update."""
    foreign: marl_eval.MarlEvalRun | None = None
    """For a run read from a marl-eval file (another suite's), the record it was read from."""


@dataclass
class Cell:
    """The runs of one algorithm on one task."""

    runs: list[Run] = field(default_factory=list)

    @property
    def scores(self) -> np.ndarray:
        """Final returns of the runs that have one."""
        values = np.array([r.score for r in self.runs], dtype=np.float64)
        return values[np.isfinite(values)]


# ----------------------------------------------------------------------------------------- loading
def load_runs(run_dirs: Sequence[Path], marl_eval_metric: str | None = None) -> list[Run]:
    """Every run (seed x grid point) of the given run folders, and every run of the given marl-eval JSON
    files (``load_marl_eval``, scored by ``marl_eval_metric``), with a clear error for anything that is
    neither."""
    if not run_dirs:
        raise ConfigError("report: no run folders given")
    runs = []
    for run_dir in map(Path, run_dirs):
        if run_dir.is_file() and run_dir.suffix == ".json":
            runs += load_marl_eval(run_dir, marl_eval_metric)
            continue
        if not run_dir.is_dir():
            raise ConfigError(f"report: {run_dir} is not a folder")
        if not is_run_dir(run_dir) and any(map(is_run_dir, run_dir.iterdir())):
            raise ConfigError(f"report: {run_dir} is not a run folder but holds run folders; pass them "
                              f"instead (e.g. {run_dir}/*)")
        config = read_run_config(run_dir)
        env_config = config["config"]
        if not isinstance(env_config, dict) or "env_id" not in env_config:
            raise ConfigError(f"report: {run_dir}/config.yaml has no config.env_id")
        grid = config["grid"]
        if not isinstance(grid, list) or not all(isinstance(g, dict) for g in grid):
            raise ConfigError(f"report: {run_dir}/config.yaml: grid must be a list of hparams mappings")
        if not (run_dir / "metrics.csv").is_file():
            raise ConfigError(f"report: {run_dir} has no metrics.csv; has the run logged an update yet?")
        rows = read_metrics(run_dir)
        missing = {"update", "env_steps", "seed", "grid_index", "return_mean"} - set(rows[0] if rows else {})
        if not rows or missing:
            raise ConfigError(f"report: {run_dir}/metrics.csv has no rows or lacks columns {sorted(missing)}")
        metric = headline_metrics(rows)[0]
        by_run: dict[tuple[int, int], list[dict[str, float]]] = {}
        for row in rows:
            by_run.setdefault((int(row["grid_index"]), int(row["seed"])), []).append(row)
        for (grid_index, seed_index), logged in sorted(by_run.items()):
            if not 0 <= grid_index < len(grid):
                raise ConfigError(f"report: {run_dir}/metrics.csv has grid_index {grid_index}, but the grid "
                                  f"has {len(grid)} point(s)")
            logged.sort(key=lambda r: r["update"])
            runs.append(Run(
                source=run_dir, algorithm=str(config["algorithm"]), task=str(env_config["env_id"]),
                grid_index=grid_index, seed_index=seed_index, base_seed=int(config["seed"]),
                hparams=dict(grid[grid_index]),
                config={k: v for k, v in env_config.items() if k not in _NOT_ALGORITHM},
                env_steps=np.array([r["env_steps"] for r in logged]),
                returns=np.array([r.get(metric, math.nan) for r in logged]), metric=metric,
                measures={m: np.array([r.get(m, math.nan) for r in logged]) for m in SOCIAL_MEASURES
                          if m in rows[0]},
                extra={m: np.array([r.get(m, math.nan) for r in logged]) for m in EXTRA_METRICS
                       if m in rows[0]},
            ))
    return runs


def task_for(environment: str, task: str) -> str:
    """The task a marl-eval file's ``environment``/``task`` is here: the task itself when it is a
    registered env id (what this suite writes), else ``ENVIRONMENT_TASK`` when that is one, ignoring case
    (Mava's ``smax``/``2s3z`` is ``SMAX_2s3z``), else ``environment/task``, a task of its own."""
    from jaxmarl_suite.core.registry import env_spec, registered_envs

    try:
        return env_spec(task).env_id
    except (ValueError, TypeError):
        pass
    wanted = f"{environment}_{task}".lower()
    return next((e for e in registered_envs() if e.lower() == wanted), f"{environment}/{task}")


def load_marl_eval(path: Path, metric: str | None = None) -> list[Run]:
    """The runs of a marl-eval JSON file (``marl_eval.read``) as report runs: each scored like a run
    folder's, from the mean of ``metric`` (``marl_eval.return_metric``: by default the first return name
    the run logs) at each evaluation step. Their algorithm is the file's name for it, marked with the
    file's path as given, so that it is never pooled with this suite's runs, or another file's, of the same
    name."""
    runs = []
    for index, record in enumerate(marl_eval.read(path)):
        chosen = marl_eval.return_metric(record, metric)
        runs.append(Run(
            source=path, algorithm=f"{record.algorithm} [{path}]",
            task=task_for(record.environment, record.task), grid_index=0, seed_index=index, base_seed=0,
            hparams={}, config={}, env_steps=record.step_counts.astype(np.float64),
            returns=record.means(chosen), metric=chosen, foreign=record,
        ))
    return runs


def marl_eval_records(runs: Sequence[Run], final_fraction: float = FINAL_FRACTION
                      ) -> list[marl_eval.MarlEvalRun]:
    """``runs`` in marl-eval's terms: environment = the env's family, task = the env id, algorithm = the
    report's label (commas, which marl-eval refuses, as semicolons), run = ``seed_K`` for the algorithm's
    K-th run on the task (marl-eval pairs runs of different algorithms by these names), a step per logged
    update with the headline return as ``episode_return`` (and ``EXTRA_METRICS``), and the final score
    (``final_score``) as the absolute metric. Updates in which one of an algorithm's runs on a task finished
    no episode are left out for all its runs, so that every run has a value at every step (marl-eval
    averages each step's values and cannot take an empty list). Runs read from a marl-eval file are
    written back as they were read, renamed ``NAME_2``, ... where a name is taken twice."""
    from jaxmarl_suite.core.registry import env_spec

    if any(not r.label for r in runs):
        assign_labels(runs)
    ours = [r for r in runs if r.foreign is None]
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in ours:
        groups.setdefault((run.task, run.label.replace(",", ";")), []).append(run)
    records: list[marl_eval.MarlEvalRun] = []
    for (task, algorithm), members in groups.items():
        try:
            environment = env_spec(task).family
        except ValueError:  # an env registered only in the process that trained it
            environment = "user"
        length = min(len(r.returns) for r in members)
        keep = np.all([np.isfinite(r.returns[:length]) for r in members], axis=0)
        for k, run in enumerate(members):
            columns = {marl_eval.RETURN_METRIC: run.returns, **run.extra}
            metrics = {m: [[v] for v in values[:length][keep].tolist()] for m, values in columns.items()}
            absolute = {m: [final_score(values, final_fraction)] for m, values in columns.items()}
            records.append(marl_eval.MarlEvalRun(environment, task, algorithm, f"seed_{k}",
                                                 run.env_steps[:length][keep].astype(np.int64), metrics,
                                                 absolute))
    taken = {(r.environment, r.task, r.algorithm, r.run) for r in records}
    for run in runs:
        if run.foreign is None:
            continue
        record, copy = run.foreign, 1
        while (record.environment, record.task, record.algorithm, record.run) in taken:
            copy += 1
            record = dataclasses.replace(run.foreign, run=f"{run.foreign.run}_{copy}")
        taken.add((record.environment, record.task, record.algorithm, record.run))
        records.append(record)
    return records


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_show(v) for v in value) + "]"
    return str(value)


def assign_labels(runs: Sequence[Run]) -> None:
    """Set each run's algorithm label: the baseline plus the settings that vary within a task."""
    varying: dict[str, list[str]] = {}
    for algorithm in dict.fromkeys(r.algorithm for r in runs):
        mine = [r for r in runs if r.algorithm == algorithm]
        names: list[str] = []
        for task in dict.fromkeys(r.task for r in mine):
            on_task = [r for r in mine if r.task == task]
            for source in ("hparams", "config"):
                keys = dict.fromkeys(k for r in on_task for k in getattr(r, source))
                for k in keys:
                    values = {_key(getattr(r, source).get(k)) for r in on_task}
                    if len(values) > 1 and k not in names:
                        names.append(k)
        varying[algorithm] = names
    for run in runs:
        settings = {**run.config, **run.hparams}
        shown = [f"{k}={_show(settings.get(k))}" for k in varying[run.algorithm]]
        run.label = f"{run.algorithm} ({', '.join(shown)})" if shown else run.algorithm


# ------------------------------------------------------------------------------------------ scoring
@dataclass(frozen=True)
class TaskScale:
    """How one task's scores are normalised: ``(score - low) / (high - low)``."""

    low: float
    high: float
    method: str
    """``normalize`` (given ranges), ``reference`` (random and strong scores) or ``raw`` (none)."""
    source: str
    """Where ``high`` comes from, or for ``raw`` why there is no scale, for the report."""


def task_scales(tasks: Sequence[str], runs: Sequence[Run],
                normalize: Mapping[str, tuple[float, float]] | None) -> dict[str, TaskScale]:
    """Each task's normalisation (see the module docstring). Raises ValueError when several tasks are
    reported and one of them has neither a ``normalize`` range nor a reference score."""
    normalize = normalize or {}
    scales: dict[str, TaskScale] = {}
    missing: dict[str, str] = {}
    for task in tasks:
        if task in normalize:
            low, high = (float(v) for v in normalize[task])
            if not (math.isfinite(low) and math.isfinite(high) and high > low):
                raise ValueError(f"normalize: {task} needs finite min < max, got ({low}, {high})")
            scales[task] = TaskScale(low, high, "normalize", "--normalize")
            continue
        reference = reference_for(task)
        kwargs = sorted({_key(r.config.get("env_kwargs") or {}) for r in runs if r.task == task} - {"{}"})
        if reference is None or reference.range is None:
            missing[task] = "it has no reference score" if reference is None else (
                "it has a random-policy score but no strong score")
        elif kwargs:
            missing[task] = (f"its runs set env_kwargs {', '.join(kwargs)}, and its reference scores are for "
                             f"the env's defaults")
        else:
            low, high = reference.range
            scales[task] = TaskScale(low, high, "reference", reference.strong_source or "")
    if missing and len(tasks) > 1:
        reasons = "; ".join(f"{task}: {why}" for task, why in missing.items())
        flags = " ".join(f"--normalize {task}=MIN:MAX" for task in missing)
        raise ValueError(f"report: cannot aggregate over {len(tasks)} tasks without a common scale "
                         f"({reasons}). Pass {flags} (e.g. a random-policy and a strong return), or report "
                         f"each task on its own to see raw returns.")
    for task, why in missing.items():  # a single task: its raw returns are the scores
        scales[task] = TaskScale(0.0, 1.0, "raw", why)
    return scales


def _normalise(values: np.ndarray, scale: TaskScale) -> np.ndarray:
    return (values - scale.low) / (scale.high - scale.low)


def _curves(runs_by_task: Mapping[str, Sequence[Run]], scales: Mapping[str, TaskScale]
            ) -> tuple[np.ndarray, list[list[np.ndarray]]] | None:
    """Normalised returns of every run interpolated onto common env steps: ``(steps, per point: per task:
    runs)``, or None when the runs share no env-step range."""
    spans = []
    for runs in runs_by_task.values():
        for run in runs:
            finite = np.isfinite(run.returns)
            if finite.any():
                spans.append((run.env_steps[finite][0], run.env_steps[finite][-1], int(finite.sum())))
    if not spans:
        return None
    start, stop = max(s[0] for s in spans), min(s[1] for s in spans)
    if stop <= start:
        return None
    steps = np.linspace(start, stop, min(_CURVE_POINTS, max(2, max(s[2] for s in spans))))
    per_task = []
    for task, runs in runs_by_task.items():
        values = []
        for run in runs:
            finite = np.isfinite(run.returns)
            if finite.any():
                values.append(np.interp(steps, run.env_steps[finite], run.returns[finite]))
        per_task.append(_normalise(np.array(values), scales[task]))  # [runs, points]
    return steps, [[task[:, p] for task in per_task] for p in range(len(steps))]


# ------------------------------------------------------------------------------------------- plots
def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _empty_figure(path: Path, message: str) -> Path:
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6, 2), dpi=100)
    axes.axis("off")
    axes.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    figure.savefig(path)
    plt.close(figure)
    return path


def plot_aggregates(results: Mapping[str, Mapping[str, Interval]], path: Path,
                    xlabel: str = "normalised score") -> Path:
    """One panel per metric: each algorithm's point estimate and interval."""
    plt = _pyplot()
    labels = list(results)
    metrics = list(next(iter(results.values())))
    figure, axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics) + 2, 0.45 * len(labels) + 1.4),
                                dpi=100, sharey=True, squeeze=False)
    colors = plt.get_cmap("tab10")
    for column, metric in enumerate(metrics):
        ax = axes[0, column]
        for row, label in enumerate(labels):
            interval = results[label][metric]
            ax.plot([interval.low, interval.high], [row, row], lw=6, alpha=0.5, color=colors(row % 10),
                    solid_capstyle="butt")
            ax.plot([interval.point], [row], "|", ms=14, mew=2, color="black")
        ax.set_title(METRIC_TITLES.get(metric, metric))
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(range(len(labels)), labels)
    axes[0, 0].set_ylim(-0.6, len(labels) - 0.4)
    axes[0, 0].invert_yaxis()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


def plot_bands(bands: Mapping[str, tuple[np.ndarray, Band]], path: Path, *, xlabel: str, ylabel: str,
               title: str, step: bool = False) -> Path:
    """Each algorithm's curve with its interval band."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.5, 4.2), dpi=100)
    for label, (x, band) in bands.items():
        drawstyle = "steps-post" if step else "default"
        line, = axes.plot(x, band.point, label=label, drawstyle=drawstyle)
        axes.fill_between(x, band.low, band.high, alpha=0.2, color=line.get_color(),
                          step="post" if step else None)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


# ------------------------------------------------------------------------------------------- report
def _interval(value: Interval, digits: int = 4) -> str:
    return f"{value.point:.{digits}f} [{value.low:.{digits}f}, {value.high:.{digits}f}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


@dataclass
class Comparison:
    """Everything the report shows, computed from the runs."""

    runs: list[Run]
    cells: dict[tuple[str, str], Cell]
    tasks: list[str]
    labels: list[str]
    complete: list[str]
    """Labels with scored runs on every task: the ones aggregated across tasks."""
    scales: dict[str, TaskScale]
    normalised: dict[str, list[np.ndarray]]
    notes: list[str]

    @property
    def raw(self) -> bool:
        """Whether scores are raw returns (a single task with no reference score and no range given)."""
        return any(scale.method == "raw" for scale in self.scales.values())

    @property
    def unit(self) -> str:
        """What the aggregated numbers are."""
        return "per-agent return" if self.raw else "normalised score"

    @property
    def metrics(self) -> tuple[str, ...]:
        """The aggregate metrics shown: no optimality gap on raw returns, which have no target."""
        return tuple(m for m in AGGREGATE_METRICS if not (self.raw and m == "optimality_gap"))


def compare(runs: list[Run], *, normalize: Mapping[str, tuple[float, float]] | None,
            final_fraction: float = FINAL_FRACTION) -> Comparison:
    """Score, group and normalise the runs (see the module docstring)."""
    assign_labels(runs)
    notes: list[str] = []
    seen: dict[tuple[str, str, int, int], Path] = {}
    for run in runs:
        run.score = final_score(run.returns, final_fraction)
        if not math.isfinite(run.score):
            notes.append(f"`{run.source}` grid point {run.grid_index}, seed {run.seed_index}: no episode "
                         f"finished in the final {final_fraction:.0%} of updates; left out.")
        key = (run.task, run.label, run.base_seed, run.seed_index)
        if key in seen and seen[key] != run.source:
            notes.append(f"`{seen[key]}` and `{run.source}` both ran {run.label} on {run.task} with base "
                         f"seed {run.base_seed}, seed {run.seed_index}: probably the same run counted twice.")
        seen.setdefault(key, run.source)

    cells: dict[tuple[str, str], Cell] = {}
    for run in runs:
        cells.setdefault((run.task, run.label), Cell()).runs.append(run)
    cells = {k: c for k, c in cells.items() if c.scores.size}
    if not cells:
        raise ValueError("report: no run has a final return (no episode finished in any final window)")
    tasks = sorted({t for t, _ in cells})
    labels = list(dict.fromkeys(label for _, label in cells))
    scales = task_scales(tasks, runs, normalize)
    unused = sorted(set(normalize or {}) - set(tasks))
    if unused:
        notes.append(f"--normalize names {unused}, which no scored run is on; ignored.")
    complete = [label for label in labels if all((t, label) in cells for t in tasks)]
    for label in labels:
        if label not in complete:
            covered = [t for t in tasks if (t, label) in cells]
            notes.append(f"{label} has runs on {covered} only, not on every task; it is left out of the "
                         f"aggregates, the probability of improvement and the figures.")
    normalised = {label: [_normalise(cells[t, label].scores, scales[t]) for t in tasks] for label in complete}
    return Comparison(runs, cells, tasks, labels, complete, scales, normalised, notes)


def _write_figures(comparison: Comparison, aggregates: Mapping[str, Mapping[str, Interval]], out: Path, *,
                   reps: int, confidence: float, seed: int) -> list[str]:
    names = ["aggregates.png", "sample_efficiency.png", "performance_profile.png"]
    if not aggregates:
        for name in names:
            _empty_figure(out / name, "no algorithm has runs on every task")
        return names
    unit = comparison.unit
    plot_aggregates(aggregates, out / "aggregates.png", xlabel=unit)

    normalised = comparison.normalised
    pooled = np.concatenate([s for per_task in normalised.values() for s in per_task])
    low, high = float(pooled.min()), float(pooled.max())
    if comparison.raw:  # no 0 and 1 to include: span the scores, with a margin so the ends show
        margin = 0.05 * (high - low) or 1.0
        low, high = low - margin, high + margin
    else:
        low, high = min(0.0, low), max(1.0, high)
    taus = np.linspace(low, high, 101)
    profiles = performance_profile(normalised, taus, reps=reps, confidence=confidence, seed=seed)
    plot_bands({label: (taus, band) for label, band in profiles.items()}, out / "performance_profile.png",
               xlabel=f"{unit} τ", ylabel="fraction of runs with score > τ",
               title="Performance profile (run-score distribution)", step=True)

    curves: dict[str, tuple[np.ndarray, Band]] = {}
    for label in comparison.complete:
        scored = {t: [r for r in comparison.cells[t, label].runs if math.isfinite(r.score)]
                  for t in comparison.tasks}
        common = _curves(scored, comparison.scales)
        if common is None:
            comparison.notes.append(f"{label}: its runs share no env-step range with returns; no "
                                    f"sample-efficiency curve.")
            continue
        steps, per_point = common
        band = sample_efficiency_curve({label: per_point}, "iqm", reps=reps, confidence=confidence,
                                       seed=seed)[label]
        curves[label] = (steps, band)
    if curves:
        plot_bands(curves, out / "sample_efficiency.png", xlabel="env steps per run",
                   ylabel=f"IQM of {unit}", title="Sample efficiency")
    else:
        _empty_figure(out / "sample_efficiency.png", "no algorithm has curves over a common env-step range")
    if any(r.measures for r in comparison.runs):
        names.append(plot_social_measures(comparison, out / "social_measures.png"))
    return names


def _measure_curve(runs: Sequence[Run], measure: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The mean over ``runs`` of one measure per logged update, over the updates all of them logged."""
    logged = [r for r in runs if measure in r.measures]
    if not logged:
        return None
    length = min(r.env_steps.size for r in logged)
    values = np.stack([r.measures[measure][:length] for r in logged])
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an update where no run finished an episode
        return logged[0].env_steps[:length], np.nanmean(values, axis=0)


def plot_social_measures(comparison: Comparison, path: Path) -> str:
    """One panel per social measure any run logged: each (task, algorithm)'s mean curve over its runs.
    Returns the file's name."""
    plt = _pyplot()
    measures = [m for m in SOCIAL_MEASURES if any(m in r.measures for r in comparison.runs)]
    figure, axes = plt.subplots(len(measures), 1, figsize=(6.5, 2.6 * len(measures) + 0.8), dpi=100,
                                sharex=True, squeeze=False)
    several_tasks = len(comparison.tasks) > 1
    for ax, measure in zip(axes[:, 0], measures, strict=True):
        for (task, label), cell in comparison.cells.items():
            curve = _measure_curve(cell.runs, measure)
            if curve is not None:
                ax.plot(*curve, label=f"{task}: {label}" if several_tasks else label)
        ax.set_ylabel(SOCIAL_MEASURES[measure], fontsize=8)
        ax.grid(alpha=0.3)
    suffix = "" if several_tasks else f": {comparison.tasks[0]}"
    axes[0, 0].set_title(f"Social measures (mean over runs){suffix}")
    axes[0, 0].legend(fontsize=8)
    axes[-1, 0].set_xlabel("env steps per run")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path.name


def _normalisation_lines(c: Comparison) -> list[str]:
    if c.raw:
        task = c.tasks[0]
        return [f"None: the numbers are raw per-agent returns. {task} has no reference scores to use "
                f"({c.scales[task].source}) and no `--normalize {task}=MIN:MAX` was given, so there is no "
                f"0-to-1 scale and no optimality gap."]
    lines = ["Per task, `(score - low) / (high - low)`, with `low` and `high` fixed in advance (not taken "
             "from these runs), so scores compare across reports. Reference scores (`low` = a uniformly "
             f"random policy, `high` = a strong score) come from `{REFERENCE_FILE.name}` in "
             "`jaxmarl_suite/evaluation`; `--normalize` ranges override them.", ""]
    rows = []
    for task in c.tasks:
        scale = c.scales[task]
        if scale.method == "normalize":
            rows.append([task, "`--normalize`", f"{scale.low:g}", f"{scale.high:g}", "given"])
        else:
            rows.append([task, "reference scores", f"{scale.low:g} (random policy)", f"{scale.high:g}",
                         scale.source])
    return lines + _table(["task", "normalisation", "0 =", "1 =", "source of 1"], rows)


def _score_columns(runs: Sequence[Run]) -> str:
    """The headline columns the runs are scored on, e.g. "`return_mean` or `greedy_return_mean`"."""
    return " or ".join(f"`{m}`" for m in dict.fromkeys(run.metric for run in runs))


def _markdown(comparison: Comparison, aggregates: Mapping[str, Mapping[str, Interval]],
              improvement: Mapping[tuple[str, str], Interval], figures: Sequence[str], *, sources: int,
              final_fraction: float, reps: int, seed: int, confidence: float) -> str:
    c = comparison
    level = f"{confidence:.0%}"
    lines = [
        "# Evaluation report",
        "",
        f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')} from {sources} run folder(s): "
        f"{sum(math.isfinite(r.score) for r in c.runs)} scored run(s) on {len(c.tasks)} task(s).",
        "",
        f"- Score of a run: mean {_score_columns(c.runs)} (per agent) over its last {final_fraction:.0%} of "
        f"logged updates: each algorithm's evaluation policy (greedy episodes for IQL, VDN, QMIX and PQN).",
        f"- Normalisation: {'none (raw per-agent returns)' if c.raw else 'reference scores or given ranges'}"
        f"; see below.",
        f"- Intervals: {level} stratified bootstrap (percentile), {reps} resamples, seed {seed}.",
        "",
        "## Normalisation",
        "",
        *_normalisation_lines(c),
        "",
        f"## Aggregate metrics over tasks ({'raw per-agent returns' if c.raw else 'normalised scores'}, "
        f"{level} CIs)",
        "",
    ]
    if aggregates:
        header = ["algorithm", "tasks", "runs"] + [METRIC_TITLES[m] for m in c.metrics]
        rows = [[label, str(len(c.tasks)), str(sum(c.cells[t, label].scores.size for t in c.tasks))]
                + [_interval(aggregates[label][m]) for m in c.metrics] for label in c.complete]
        lines += _table(header, rows)
        lines += ["", "IQM, mean and median: higher is better." + (
            "" if c.raw else " Optimality gap (shortfall from a normalised score of 1): lower is better.")]
    else:
        lines += ["_No algorithm has runs on every task._"]

    lines += ["", "## Final return per task (raw; mean and 95% Student-t CI over runs)", ""]
    rows = []
    for task in c.tasks:
        for label in c.labels:
            if (task, label) in c.cells:
                scores = c.cells[task, label].scores
                point, low, high = mean_ci(scores)
                ci = f"[{low:.3f}, {high:.3f}]" if scores.size > 1 else "n/a (1 run)"
                row = [task, label, str(scores.size), f"{point:.3f}", ci]
                if not c.raw:
                    row.append(f"{float(_normalise(scores, c.scales[task]).mean()):.3f}")
                rows.append(row)
    lines += _table(["task", "algorithm", "runs", "mean", "95% CI"] + ([] if c.raw else ["normalised mean"]),
                    rows)

    measured = [m for m in SOCIAL_MEASURES if any(m in r.measures for r in c.runs)]
    if measured:
        lines += ["", "## Social measures (final; mean and 95% Student-t CI over runs)", "",
                  "Each run's value is its mean over the same final updates as its score. Collective return "
                  "sums every agent's return; equality is one minus the Gini coefficient of the agents' "
                  "returns; the cooperative share is cooperative pick-ups over all pick-ups.", ""]
        rows = []
        for (task, label), cell in c.cells.items():
            row = [task, label]
            for measure in measured:
                finals = np.array([final_score(r.measures[measure], final_fraction) for r in cell.runs
                                   if measure in r.measures])
                finals = finals[np.isfinite(finals)]
                if finals.size == 0:
                    row.append("n/a")
                    continue
                point, low, high = mean_ci(finals)
                row.append(f"{point:.3f}" + (f" [{low:.3f}, {high:.3f}]" if finals.size > 1 else ""))
            rows.append(row)
        lines += _table(["task", "algorithm"] + [SOCIAL_MEASURES[m] for m in measured], rows)

    lines += ["", "## Probability of improvement", ""]
    if improvement:
        lines += ["P(X > Y): the chance that a run of X scores higher than a run of Y on the same task "
                  "(ties count half), averaged over tasks; 0.5 means no difference.", ""]
        lines += _table(["X", "Y", "P(X > Y)", f"{level} CI"],
                        [[x, y, f"{v.point:.4f}", f"[{v.low:.4f}, {v.high:.4f}]"]
                         for (x, y), v in improvement.items()])
    else:
        lines += ["_Needs at least two algorithms with runs on every task._"]

    lines += ["", "## Figures", ""] + [f"![{name}]({name})" for name in figures]
    lines += ["", "## Runs", ""]
    rows = []
    for label in c.labels:
        for source in dict.fromkeys(r.source for r in c.runs if r.label == label):
            mine = [r for r in c.runs if r.label == label and r.source == source]
            grid_points = ", ".join(str(g) for g in dict.fromkeys(r.grid_index for r in mine))
            rows.append([label, mine[0].task, f"`{source}`", grid_points, str(len(mine))])
    lines += _table(["algorithm", "task", "run folder", "grid points", "runs"], rows)
    if c.notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in c.notes]
    return "\n".join(lines) + "\n"


def default_out_dir(run_dirs: Sequence[str | Path]) -> Path:
    """Where a report goes when no folder is given: ``report/`` in the deepest folder holding every run
    folder (the run folder itself for one run), so it sits next to the runs, never in the working
    directory."""
    if not run_dirs:
        raise ConfigError("report: no run folders given")
    # a marl-eval file's report goes beside the file
    folders = [Path(d).resolve().parent if Path(d).is_file() else Path(d).resolve() for d in run_dirs]
    common = Path(os.path.commonpath(folders))
    if common == Path(common.anchor):
        raise ConfigError(f"report: the run folders share no parent folder but {common}; pass --out")
    return common / "report"


def not_a_run(path: Path) -> str | None:
    """Why ``path`` is not a training run to report on (an output of ``demo``, ``xplay`` or ``report``, a
    file, a folder of runs), or None for a run folder (it holds ``config.yaml``) and for a path that does
    not exist, which ``load_runs`` refuses: a mistyped run must not silently drop out of a comparison."""
    if not path.exists() or is_run_dir(path):
        return None
    if path.is_file() and path.suffix == ".json":  # read as marl-eval results by load_runs
        try:
            marl_eval.read(path)
        except ConfigError as error:
            return f"a JSON file but not marl-eval results ({error})"
        return None
    if not path.is_dir():
        return "a file, not a run folder"
    if (path / "xplay.json").is_file():
        return "an xplay output, not a training run"
    if (path / "report.md").is_file():
        return "a report, not a training run"
    for inside in ("*", "*/*"):  # a sweep's run folders are OUT/TASK/ALGORITHM
        if any(path.glob(f"{inside}/config.yaml")):
            return f"holds run folders but is not one (pass {path}/{inside} to include them)"
    return "not a training run (no config.yaml)"


@dataclass
class ReportOutput:
    """What ``run_report`` wrote and what the console should say about it."""

    path: Path
    """``report.md``."""
    skipped: list[tuple[Path, str]]
    """The folders given that are not runs, each with the reason (``not_a_run``)."""
    notes: list[str]
    """The report's notes (runs left out or counted twice, normalisation), as in ``report.md``."""

    def lines(self) -> list[str]:
        """The console's lines: a line per skipped folder, where the report went, then its notes."""
        skips = [f"skipped {path}: {reason}" for path, reason in self.skipped]
        notes = [f"note: {note.replace('`', '')}" for note in self.notes]
        return [*skips, f"wrote {self.path}", *notes]


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path | None = None,
    *,
    normalize: Mapping[str, tuple[float, float]] | None = None,
    final_fraction: float = FINAL_FRACTION,
    reps: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    format: str = "markdown",
    marl_eval_metric: str | None = None,
) -> Path:
    """Compare the runs of ``run_dirs`` and write ``report.md``, ``aggregates.png``,
    ``sample_efficiency.png``, ``performance_profile.png``, when runs logged social-dilemma measures
    ``social_measures.png``, and every run in marl-eval's layout, ``marl_eval.json``
    (``marl_eval_records``), into ``out_dir`` (default: ``default_out_dir``); returns the markdown's path.
    With ``format="marl-eval"`` only ``marl_eval.json`` is written, and its path returned.

    ``run_dirs`` may also name marl-eval JSON files (Mava's, BenchMARL's, or an earlier report's
    ``marl_eval.json``): their runs join the comparison (``load_marl_eval``), scored by
    ``marl_eval_metric`` (default: the return).

    ``normalize`` maps tasks to fixed ``(min, max)`` returns, over the package's reference scores (see the
    module docstring); ``final_fraction`` is the share of logged updates a run's score averages
    (``final_score``); ``reps``, ``seed`` and ``confidence`` set the bootstrap. Paths that are not training
    runs (``not_a_run``: what ``demo``, ``xplay`` or an earlier ``report`` wrote beside the runs, files,
    folders of runs) are skipped with a note, so ``report runs/*`` works; it is an error only when no run
    is left. ``run_report`` does the same and also returns what was skipped and the notes."""
    return run_report(run_dirs, out_dir, normalize=normalize, final_fraction=final_fraction, reps=reps,
                      seed=seed, confidence=confidence, format=format, marl_eval_metric=marl_eval_metric).path


def run_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path | None = None,
    *,
    normalize: Mapping[str, tuple[float, float]] | None = None,
    final_fraction: float = FINAL_FRACTION,
    reps: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    format: str = "markdown",
    marl_eval_metric: str | None = None,
) -> ReportOutput:
    """``write_report``, returning the report's path with the skipped folders and the notes, which
    ``jaxmarl-suite report`` prints."""
    if format not in FORMATS:
        raise ConfigError(f"report: format must be one of {', '.join(FORMATS)}, got {format!r}")
    given = [Path(d) for d in run_dirs]
    reasons = [(p, not_a_run(p)) for p in given]
    skipped = [(p, why) for p, why in reasons if why is not None]
    paths = [p for p, why in reasons if why is None]
    if not paths:
        if not given:
            raise ConfigError("report: no run folders given")
        listing = "; ".join(f"{p}: {why}" for p, why in skipped)
        raise ConfigError(f"report: none of the folders given is a training run ({listing})")
    out = Path(out_dir) if out_dir is not None else default_out_dir(paths)
    runs = load_runs(paths, marl_eval_metric)
    if format == "marl-eval":
        out.mkdir(parents=True, exist_ok=True)
        written = marl_eval.write(out / marl_eval.FILE_NAME, marl_eval_records(runs, final_fraction))
        return ReportOutput(written, skipped, [])
    comparison = compare(runs, normalize=normalize, final_fraction=final_fraction)
    normalised = comparison.normalised
    aggregates = (aggregate_with_ci(normalised, comparison.metrics, reps=reps, confidence=confidence,
                                    seed=seed) if normalised else {})
    improvement = (pairwise_improvement(normalised, reps=reps, confidence=confidence, seed=seed)
                   if len(normalised) > 1 else {})
    out.mkdir(parents=True, exist_ok=True)
    figures = _write_figures(comparison, aggregates, out, reps=reps, confidence=confidence, seed=seed)
    notes = list(comparison.notes)
    if comparison.raw:  # report.md says this under Normalisation; the console has no such section
        task = comparison.tasks[0]
        notes.insert(0, f"raw per-agent returns, not normalised: {task} has no scale "
                        f"({comparison.scales[task].source}); --normalize {task}=MIN:MAX gives one.")
    comparison.notes += [f"`{p}`: {why}; skipped." for p, why in skipped]
    marl_eval.write(out / marl_eval.FILE_NAME, marl_eval_records(runs, final_fraction))
    path = out / "report.md"
    path.write_text(_markdown(comparison, aggregates, improvement, figures, sources=len(paths),
                              final_fraction=final_fraction, reps=reps, seed=seed, confidence=confidence))
    return ReportOutput(path, skipped, notes)


def parse_range(text: str) -> tuple[str, tuple[float, float]]:
    """``ENV_ID=MIN:MAX`` (as given to ``--normalize``) as ``(env_id, (min, max))``."""
    task, sep, bounds = text.rpartition("=")
    low, colon, high = bounds.partition(":")
    try:
        if not (sep and colon and task):
            raise ValueError
        return task, (float(low), float(high))
    except ValueError:
        raise ValueError(f"--normalize: expected ENV_ID=MIN:MAX, got {text!r}") from None
