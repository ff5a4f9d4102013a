"""Aggregate statistics over runs and tasks with stratified-bootstrap confidence intervals.

Scores come per algorithm as either a ``[runs, tasks]`` matrix or a sequence of per-task 1-D arrays, so
tasks may have different numbers of runs. ``task_scores`` turns either form into a list of per-task arrays;
every function here goes through it. NaN scores are dropped (a run that produced no score is not a run
that scored zero); a task left without scores, or any infinite score, is an error.

How aggregates weigh tasks (with equal run counts all of them equal the rliable definitions):

- ``iqm`` trims the *pooled* run-task scores (``scipy.stats.trim_mean(x, 0.25)`` on all of them), so with
  unequal counts a task with more runs weighs more. Trimming whole runs has no per-task weighting without
  fractional trimming, which would stop it agreeing with the usual IQM.
- ``mean``, ``optimality_gap``, the performance profile and the probability of improvement average over
  tasks of a per-task value, so every task weighs the same however many runs it has. With equal counts this
  is the same as pooling, and it keeps the mean equal to the area under the performance profile.
- ``median`` is the median over tasks of the per-task mean score (rliable's definition).

Confidence intervals come from a stratified bootstrap: each replicate resamples, with replacement and
independently per task, as many runs as that task has, then recomputes the statistic; the interval is
the percentile interval of the replicates. Tasks are fixed (not resampled): the intervals describe
uncertainty from the finite number of runs on *these* tasks.
"""

from __future__ import annotations

import math
import statistics
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

Scores = np.ndarray | Sequence[ArrayLike]
"""A ``[runs, tasks]`` matrix, or one 1-D array of run scores per task (counts may differ)."""

AGGREGATE_METRICS = ("iqm", "mean", "median", "optimality_gap")
"""The metric names ``aggregate_with_ci`` and ``sample_efficiency_curve`` accept."""

_CHUNK_ELEMENTS = 4_000_000
"""Bootstrap replicates are drawn in chunks that hold about this many numbers, to bound memory."""


class Interval(NamedTuple):
    """A point estimate and its confidence interval."""

    point: float
    low: float
    high: float


class Band(NamedTuple):
    """Point estimates and confidence bounds along a curve, each an array of the curve's length."""

    point: np.ndarray
    low: np.ndarray
    high: np.ndarray


# --------------------------------------------------------------------------------------- input checks
def task_scores(scores: Scores, name: str = "scores") -> list[np.ndarray]:
    """Per-task 1-D float64 arrays of finite run scores from either accepted form (NaNs dropped).

    ``name`` labels the input in error messages."""
    if isinstance(scores, np.ndarray):
        if scores.ndim != 2:
            raise ValueError(f"{name}: an array must be [runs, tasks] (2-D), got shape {scores.shape}; pass "
                             f"a list of per-task 1-D arrays for unequal run counts")
        columns: list[ArrayLike] = [scores[:, t] for t in range(scores.shape[1])]
    elif isinstance(scores, str | bytes) or not isinstance(scores, Sequence):
        raise ValueError(f"{name}: expected a [runs, tasks] array or a sequence of per-task arrays, "
                         f"got {type(scores).__name__}")
    else:
        columns = list(scores)
    if not columns:
        raise ValueError(f"{name}: no tasks")
    tasks = []
    for t, column in enumerate(columns):
        try:
            values = np.asarray(column, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{name}: task {t} is not numeric: {error}") from error
        if values.ndim != 1:
            raise ValueError(f"{name}: task {t} must be a 1-D array of run scores, got shape {values.shape}")
        if values.size == 0:
            raise ValueError(f"{name}: task {t} has no runs")
        if np.isinf(values).any():
            raise ValueError(f"{name}: task {t} has an infinite score")
        finite = values[~np.isnan(values)]
        if finite.size == 0:
            raise ValueError(f"{name}: task {t} has only NaN scores")
        tasks.append(finite)
    return tasks


def _tasks_by_algo(scores_by_algo: Mapping[str, Scores]) -> dict[str, list[np.ndarray]]:
    if not scores_by_algo:
        raise ValueError("no algorithms given")
    tasks = {algo: task_scores(scores, name=f"scores of {algo!r}") for algo, scores in scores_by_algo.items()}
    counts = {algo: len(t) for algo, t in tasks.items()}
    if len(set(counts.values())) > 1:
        raise ValueError(f"algorithms must be scored on the same tasks; task counts differ: {counts}")
    return tasks


def _check_bootstrap(reps: int, confidence: float, seed: int) -> None:
    if not isinstance(reps, int | np.integer) or reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def _check_metrics(metrics: Sequence[str]) -> None:
    if isinstance(metrics, str):
        raise ValueError(f"metrics must be a sequence of names, got the string {metrics!r}")
    unknown = [m for m in metrics if m not in AGGREGATE_METRICS]
    if unknown or not metrics:
        raise ValueError(f"metrics: unknown {unknown or 'none given'}; known: {list(AGGREGATE_METRICS)}")


def _rng(seed: int, *keys: str | int) -> np.random.Generator:
    # Each algorithm (and curve point) gets its own stream derived from its name, so its interval does not
    # depend on which other algorithms are in the same call or their order. crc32 is stable across
    # processes, unlike hash().
    words = [int(seed)] + [zlib.crc32(k.encode()) if isinstance(k, str) else int(k) for k in keys]
    return np.random.default_rng(np.random.SeedSequence(words))


# ------------------------------------------------------------------------ batched statistics ([B, n_t])
def _iqm_batched(tasks: list[np.ndarray]) -> np.ndarray:
    pooled = np.sort(np.concatenate(tasks, axis=1), axis=1)
    cut = int(0.25 * pooled.shape[1])  # scipy.stats.trim_mean's convention: whole runs, rounded down
    return pooled[:, cut:pooled.shape[1] - cut].mean(axis=1)


def _task_means(tasks: list[np.ndarray]) -> np.ndarray:
    return np.stack([t.mean(axis=1) for t in tasks], axis=1)


def _mean_batched(tasks: list[np.ndarray]) -> np.ndarray:
    return _task_means(tasks).mean(axis=1)


def _median_batched(tasks: list[np.ndarray]) -> np.ndarray:
    return np.median(_task_means(tasks), axis=1)


def _gap_batched(tasks: list[np.ndarray], gamma: float) -> np.ndarray:
    return np.stack([np.maximum(gamma - t, 0.0).mean(axis=1) for t in tasks], axis=1).mean(axis=1)


def _metric_fn(metric: str, gamma: float) -> Callable[[list[np.ndarray]], np.ndarray]:
    if metric == "iqm":
        return _iqm_batched
    if metric == "mean":
        return _mean_batched
    if metric == "median":
        return _median_batched
    return lambda tasks: _gap_batched(tasks, gamma)


def _improvement_batched(xs: list[np.ndarray], ys: list[np.ndarray]) -> np.ndarray:
    per_task = []
    for x, y in zip(xs, ys, strict=True):
        # Mann-Whitney U / (n m) with ties counted 1/2, by direct comparison of all pairs.
        greater = (x[:, :, None] > y[:, None, :]).sum(axis=(1, 2))
        ties = (x[:, :, None] == y[:, None, :]).sum(axis=(1, 2))
        per_task.append((greater + 0.5 * ties) / (x.shape[1] * y.shape[1]))
    return np.stack(per_task, axis=1).mean(axis=1)


def _profile_batched(tasks: list[np.ndarray], taus: np.ndarray) -> np.ndarray:
    return np.stack([(t[:, :, None] > taus).mean(axis=1) for t in tasks], axis=1).mean(axis=1)


# ------------------------------------------------------------------------------------------ bootstrap
def _point(groups: Sequence[list[np.ndarray]], stat: Callable[..., np.ndarray]) -> np.ndarray:
    return np.asarray(stat(*[[t[None, :] for t in group] for group in groups]))[0]


def _bootstrap(groups: Sequence[list[np.ndarray]], stat: Callable[..., np.ndarray], *, reps: int,
               rng: np.random.Generator, cost_per_rep: int) -> np.ndarray:
    """``stat`` on ``reps`` stratified resamples: every task of every group resampled on its own."""
    chunk = max(1, _CHUNK_ELEMENTS // max(cost_per_rep, 1))
    out = []
    for start in range(0, reps, chunk):
        size = min(chunk, reps - start)
        drawn = [[t[rng.integers(0, t.size, size=(size, t.size))] for t in group] for group in groups]
        out.append(np.asarray(stat(*drawn)))
    return np.concatenate(out, axis=0)


def _percentiles(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail], axis=0)
    return low, high


# ------------------------------------------------------------------------------------ point estimates
def iqm(scores: Scores) -> float:
    """Interquartile mean: the mean of the middle 50% of all pooled run-task scores (25% trimmed from each
    end, rounding the trimmed count down as ``scipy.stats.trim_mean(x, 0.25)`` does)."""
    tasks = task_scores(scores)
    return float(_point([tasks], _iqm_batched))


def mean(scores: Scores) -> float:
    """Mean over tasks of each task's mean run score (every task weighs the same)."""
    tasks = task_scores(scores)
    return float(_point([tasks], _mean_batched))


def median(scores: Scores) -> float:
    """Median over tasks of each task's mean run score."""
    tasks = task_scores(scores)
    return float(_point([tasks], _median_batched))


def optimality_gap(scores: Scores, gamma: float = 1.0) -> float:
    """How far scores fall short of ``gamma``: the mean of ``max(gamma - score, 0)`` (per task, then over
    tasks); scores above ``gamma`` count as ``gamma``. Lower is better."""
    tasks = task_scores(scores)
    return float(_point([tasks], lambda t: _gap_batched(t, gamma)))


def probability_of_improvement(scores_x: Scores, scores_y: Scores) -> float:
    """P(X > Y): per task, the chance that a random run of X beats a random run of Y (ties count half, i.e.
    the Mann-Whitney U statistic over ``n_x * n_y``), averaged over tasks."""
    xs, ys = _paired_tasks(scores_x, scores_y)
    return float(_point([xs, ys], _improvement_batched))


def _paired_tasks(scores_x: Scores, scores_y: Scores) -> tuple[list[np.ndarray], list[np.ndarray]]:
    xs, ys = task_scores(scores_x, name="scores_x"), task_scores(scores_y, name="scores_y")
    if len(xs) != len(ys):
        raise ValueError(f"scores_x has {len(xs)} tasks but scores_y has {len(ys)}; they must match")
    return xs, ys


# --------------------------------------------------------------------------------- with intervals
def aggregate_with_ci(
    scores_by_algo: Mapping[str, Scores],
    metrics: Sequence[str] = AGGREGATE_METRICS,
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    gamma: float = 1.0,
) -> dict[str, dict[str, Interval]]:
    """Aggregate metrics per algorithm with stratified-bootstrap percentile intervals.

    Every metric of an algorithm is computed on the same ``reps`` resamples. ``gamma`` is the optimality
    gap's threshold. Returns ``{algorithm: {metric: Interval(point, low, high)}}``."""
    _check_metrics(metrics)
    _check_bootstrap(reps, confidence, seed)
    fns = [_metric_fn(m, gamma) for m in metrics]

    def stat(tasks: list[np.ndarray]) -> np.ndarray:
        return np.stack([fn(tasks) for fn in fns], axis=1)

    out = {}
    for algo, tasks in _tasks_by_algo(scores_by_algo).items():
        point = _point([tasks], stat)
        replicates = _bootstrap([tasks], stat, reps=reps, rng=_rng(seed, algo),
                                cost_per_rep=sum(t.size for t in tasks))
        low, high = _percentiles(replicates, confidence)
        out[algo] = {name: Interval(float(point[i]), float(low[i]), float(high[i]))
                     for i, name in enumerate(metrics)}
    return out


def probability_of_improvement_with_ci(
    scores_x: Scores, scores_y: Scores, *, reps: int = 2000, confidence: float = 0.95, seed: int = 0
) -> Interval:
    """``probability_of_improvement`` with a stratified-bootstrap interval (X's and Y's runs are resampled
    independently within each task)."""
    _check_bootstrap(reps, confidence, seed)
    xs, ys = _paired_tasks(scores_x, scores_y)
    return _improvement_interval(xs, ys, reps, confidence, _rng(seed, "improvement"))


def _improvement_interval(xs: list[np.ndarray], ys: list[np.ndarray], reps: int, confidence: float,
                          rng: np.random.Generator) -> Interval:
    point = float(_point([xs, ys], _improvement_batched))
    cost = sum(x.size * y.size for x, y in zip(xs, ys, strict=True))
    replicates = _bootstrap([xs, ys], _improvement_batched, reps=reps, rng=rng, cost_per_rep=cost)
    low, high = _percentiles(replicates, confidence)
    return Interval(point, float(low), float(high))


def pairwise_improvement(
    scores_by_algo: Mapping[str, Scores],
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[tuple[str, str], Interval]:
    """P(X > Y) with intervals for each ``(X, Y)`` in ``pairs`` (default: every pair, X before Y in the
    mapping's order; P(Y > X) is one minus P(X > Y))."""
    _check_bootstrap(reps, confidence, seed)
    tasks = _tasks_by_algo(scores_by_algo)
    names = list(tasks)
    if pairs is None:
        pairs = [(x, y) for i, x in enumerate(names) for y in names[i + 1:]]
    missing = sorted({a for pair in pairs for a in pair} - set(names))
    if missing:
        raise ValueError(f"pairs name unknown algorithms {missing}; known: {names}")
    return {(x, y): _improvement_interval(tasks[x], tasks[y], reps, confidence, _rng(seed, x, y))
            for x, y in pairs}


def performance_profile(
    scores_by_algo: Mapping[str, Scores],
    taus: ArrayLike,
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Band]:
    """Run-score distribution per algorithm: at each threshold ``tau``, the fraction of runs scoring above
    ``tau`` (per task, then averaged over tasks so each task weighs the same), with stratified-bootstrap
    bands. Each ``Band`` holds arrays of ``len(taus)``."""
    _check_bootstrap(reps, confidence, seed)
    thresholds = np.asarray(taus, dtype=np.float64)
    if thresholds.ndim != 1 or thresholds.size == 0 or not np.isfinite(thresholds).all():
        raise ValueError(f"taus must be a non-empty 1-D array of finite thresholds, got {taus!r}")

    def stat(tasks: list[np.ndarray]) -> np.ndarray:
        return _profile_batched(tasks, thresholds)

    out = {}
    for algo, tasks in _tasks_by_algo(scores_by_algo).items():
        point = _point([tasks], stat)
        replicates = _bootstrap([tasks], stat, reps=reps, rng=_rng(seed, algo),
                                cost_per_rep=sum(t.size for t in tasks) * thresholds.size)
        low, high = _percentiles(replicates, confidence)
        out[algo] = Band(point, low, high)
    return out


def sample_efficiency_curve(
    scores_by_algo: Mapping[str, Sequence[Scores] | np.ndarray],
    metric: str = "iqm",
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    gamma: float = 1.0,
) -> dict[str, Band]:
    """An aggregate metric with stratified-bootstrap bands at each of several points of training.

    Each algorithm maps to either a ``[runs, tasks, points]`` array or a sequence with one set of scores
    (``Scores``) per point; every point must cover the same tasks. Each ``Band`` holds arrays of the number
    of points."""
    _check_metrics([metric])
    _check_bootstrap(reps, confidence, seed)
    if not scores_by_algo:
        raise ValueError("no algorithms given")
    fn = _metric_fn(metric, gamma)
    out = {}
    task_counts: dict[str, int] = {}
    for algo, per_point in scores_by_algo.items():
        if isinstance(per_point, np.ndarray):
            if per_point.ndim != 3:
                raise ValueError(f"scores of {algo!r}: an array must be [runs, tasks, points], got shape "
                                 f"{per_point.shape}")
            per_point = [per_point[:, :, p] for p in range(per_point.shape[2])]
        if not per_point:
            raise ValueError(f"scores of {algo!r}: no points")
        rows = []
        for p, scores in enumerate(per_point):
            tasks = task_scores(scores, name=f"scores of {algo!r} at point {p}")
            if task_counts.setdefault(algo, len(tasks)) != len(tasks):
                raise ValueError(f"scores of {algo!r}: point {p} has {len(tasks)} tasks, point 0 has "
                                 f"{task_counts[algo]}")
            point = float(_point([tasks], fn))
            replicates = _bootstrap([tasks], fn, reps=reps, rng=_rng(seed, algo, p),
                                    cost_per_rep=sum(t.size for t in tasks))
            low, high = _percentiles(replicates, confidence)
            rows.append((point, float(low), float(high)))
        values = np.array(rows)
        out[algo] = Band(values[:, 0], values[:, 1], values[:, 2])
    if len(set(task_counts.values())) > 1:
        raise ValueError(f"algorithms must be scored on the same tasks; task counts differ: {task_counts}")
    return out


# ---------------------------------------------------------------------------------------- proportions
def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """A proportion (a win rate) and its Wilson score interval.

    Unlike the normal-approximation interval ``p ± z·sqrt(p(1-p)/n)``, Wilson's stays inside [0, 1] and
    keeps a sensible width when ``p`` is 0 or 1 (a policy that won 100 of 100 games), which is where win
    rates of trained policies end up."""
    if not isinstance(trials, int | np.integer) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if not isinstance(successes, int | np.integer) or not 0 <= successes <= trials:
        raise ValueError(f"successes must be an integer in [0, trials={trials}], got {successes!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2.0)
    rate = successes / trials
    shrink = 1.0 + z * z / trials
    centre = (rate + z * z / (2.0 * trials)) / shrink
    half = z / shrink * math.sqrt(rate * (1.0 - rate) / trials + z * z / (4.0 * trials * trials))
    # exact arithmetic puts 0 wins at low = 0 (all wins at high = 1); clamp the rounding error that misses it
    return Interval(rate, min(rate, max(0.0, centre - half)), max(rate, min(1.0, centre + half)))
