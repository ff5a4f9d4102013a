"""The returns plot of a run folder (``returns.png``): the headline return against env steps per grid point
(``return_mean``; for the value-based baselines ``greedy_return_mean``, their evaluation policy's, with the
exploring envs' ``return_mean`` drawn faint beside it), a dotted line where the run was extended, and below
it ``win_rate`` for envs that report wins (SMAX) and the social-dilemma measures (collective return,
equality, cooperative share of pick-ups) for envs that report them.

With 3 or more seeds a grid point is drawn as the mean over seeds with a 95% Student-t band. With 1 or 2
seeds a t-interval says little (with 2 seeds its half-width is 12.7 standard errors), so each seed's curve
is drawn instead. The legend says which, and labels grid points by the hyperparameters that differ
between them (from ``config.yaml``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxmarl_suite.evaluation.policy import mean_ci

Curve = tuple[np.ndarray, np.ndarray]
"""One seed's ``(env_steps, values)``."""

MIN_SEEDS_FOR_BAND = 3

EXTRA_PANELS: tuple[tuple[str, str, tuple[float, float] | None], ...] = (
    ("win_rate", "win rate", (0.0, 1.0)),
    ("collective_return", "collective return", None),
    ("equality", "equality (1 - Gini)", (0.0, 1.0)),
    ("cooperative_share", "cooperative share of pick-ups", (0.0, 1.0)),
)
"""Panels below the returns, each drawn when ``metrics.csv`` has finite values of its column: wins (SMAX)
and the social-dilemma measures (``env.social_measures``)."""
"""Fewer seeds than this: draw each seed's curve rather than a mean and a t-interval."""


def grid_labels(grid: Sequence[Mapping[str, Any]]) -> list[str]:
    """One label per grid point: the hyperparameters whose values differ between points, e.g.
    ``"lr=0.001, ent_coef=0.01"`` (empty strings for a single point)."""
    keys = list(dict.fromkeys(k for point in grid for k in point))
    varying = [k for k in keys if len({repr(point.get(k)) for point in grid}) > 1]
    return [", ".join(f"{k}={_show(point.get(k))}" for k in varying) for point in grid]


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _read_grid(run_dir: Path) -> list[dict[str, Any]] | None:
    from jaxmarl_suite.errors import ConfigError
    from jaxmarl_suite.training.runner.run_folder import read_run_config

    try:
        grid = read_run_config(run_dir)["grid"]
    except ConfigError:
        return None
    return grid if isinstance(grid, list) and all(isinstance(g, dict) for g in grid) else None


def extension_points(run_dir: Path) -> list[tuple[float, str]]:
    """``(env steps, mode)`` of each point where the run was extended (``train --resume --extend``), from
    ``config.yaml``'s ``config.extensions``; empty when it never was or the file cannot be read."""
    from jaxmarl_suite.errors import ConfigError
    from jaxmarl_suite.training.runner.run_folder import read_run_config

    try:
        config = read_run_config(run_dir)["config"]
        batch = int(config["num_envs"]) * int(config["num_steps"])
        return [(float(update) * batch, str(mode)) for update, _, mode in config.get("extensions") or []]
    except (ConfigError, KeyError, TypeError, ValueError):
        return []


def _curves(rows: Sequence[Mapping[str, float]], column: str) -> dict[int, dict[int, Curve]]:
    """``{grid_index: {seed: (env_steps, values)}}`` of ``column``'s finite values, in step order."""
    points: dict[int, dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        value = row.get(column, math.nan)
        if np.isfinite(value):
            points[int(row["grid_index"])][int(row["seed"])].append((row["env_steps"], value))
    out: dict[int, dict[int, Curve]] = {}
    for grid_index, seeds in sorted(points.items()):
        out[grid_index] = {}
        for seed, pairs in sorted(seeds.items()):
            pairs.sort()
            out[grid_index][seed] = (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
    return out


def _draw(axes: Any, curves: Mapping[int, Mapping[int, Curve]],
          labels: Mapping[int, str], colors: Any, bounds: tuple[float, float] | None = None,
          tag: str = "", faint: bool = False) -> bool:
    """Each grid point: the mean and a 95% t-band over seeds, or with few seeds one line per seed; ``tag``
    prefixes the labels, and ``faint`` draws thin dotted lines with no band (a curve beside the headline).
    Returns whether some grid point was drawn seed by seed."""
    per_seed = False
    for grid_index, seeds in curves.items():
        color = colors(grid_index % 10)
        name = tag + (f"{labels[grid_index]}: " if labels[grid_index] else "")
        if faint:
            for n, (steps, values) in enumerate(seeds.values()):
                axes.plot(steps, values, color=color, lw=0.9, alpha=0.55, ls=":",
                          label=f"{name}each seed".rstrip() if n == 0 else None)
            continue
        if len(seeds) < MIN_SEEDS_FOR_BAND:
            for n, (seed, (steps, values)) in enumerate(seeds.items()):
                what = "1 seed" if len(seeds) == 1 else f"seed {seed}"
                axes.plot(steps, values, color=color, lw=1.3, alpha=0.9, ls=("-", "--")[n % 2],
                          label=f"{name}{what}")
            per_seed = True
            continue
        by_step: dict[float, list[float]] = defaultdict(list)
        for steps, values in seeds.values():
            for step, value in zip(steps, values, strict=True):
                by_step[float(step)].append(float(value))
        steps = np.array(sorted(by_step))
        stats = np.array([mean_ci(np.array(by_step[s])) for s in steps])
        # where fewer than 3 seeds logged a value the interval is too wide to mean anything: no band there
        enough = np.array([len(by_step[s]) >= MIN_SEEDS_FOR_BAND for s in steps])
        low, high = stats[:, 1], stats[:, 2]
        if bounds is not None:
            low, high = np.clip(low, *bounds), np.clip(high, *bounds)
        axes.plot(steps, stats[:, 0], color=color, lw=1.6,
                  label=f"{name}mean and 95% t-interval over {len(seeds)} seeds")
        axes.fill_between(steps, low, high, where=enough, color=color, alpha=0.22, lw=0)
    return per_seed


def returns_figure(run_dir: Path, title: str = "") -> Any:
    """The matplotlib figure of ``plot_returns`` (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmarl_suite.training.runner.run_folder import headline_metrics, read_metrics

    run_dir = Path(run_dir)
    rows = read_metrics(run_dir)
    score, wins = headline_metrics(rows)
    greedy = score != "return_mean"
    returns = _curves(rows, score)
    # a value-based run is scored on its greedy episodes; the exploring envs' curves are drawn faint beside
    exploring = {"return_mean": _curves(rows, "return_mean"), "win_rate": _curves(rows, "win_rate")} \
        if greedy else {}
    columns = {"win_rate": wins}
    extra = [(curves, label, bounds, column) for column, label, bounds in EXTRA_PANELS
             if (curves := _curves(rows, columns.get(column, column)))]
    grid = _read_grid(run_dir)
    indices = sorted(set(returns).union(*(curves for curves, _, _, _ in extra), *exploring.values()))
    if grid is not None and all(0 <= g < len(grid) for g in indices):
        named = grid_labels(grid)
        labels = {g: named[g] for g in indices}
    else:  # no readable config.yaml: fall back to indices
        labels = {g: f"grid point {g}" for g in indices}
    if len(indices) > 1 and not any(labels.values()):  # several points with identical hparams
        labels = {g: f"grid point {g}" for g in indices}

    panels = 1 + len(extra)
    figure, axes = plt.subplots(panels, 1, figsize=(7, 3.6 * min(panels, 2) + 2.4 * max(panels - 2, 0) + 0.6),
                                dpi=100, sharex=True, squeeze=False)
    colors = plt.get_cmap("tab10")
    top = axes[0, 0]
    tag = "greedy (scored): " if greedy else ""
    per_seed = _draw(top, returns, labels, colors, tag=tag)
    if exploring:
        _draw(top, exploring["return_mean"], labels, colors, tag="exploring (epsilon-greedy): ", faint=True)
    top.set_ylabel("mean episode return per agent")
    top.set_title(title)
    for ax, (curves, label, bounds, column) in zip(axes[1:, 0], extra, strict=True):
        _draw(ax, curves, labels, colors, bounds=bounds, tag=tag if column == "win_rate" else "")
        if column == "win_rate" and exploring.get("win_rate"):
            _draw(ax, exploring["win_rate"], labels, colors, bounds=bounds, faint=True)
        ax.set_ylabel(label)
        if bounds is not None:
            ax.set_ylim(bounds[0] - 0.03, bounds[1] + 0.03)
    for n, (steps, mode) in enumerate(extension_points(run_dir)):
        for ax in axes[:, 0]:
            ax.axvline(steps, color="0.25", ls=":", lw=1.2,
                       label=f"extended here ({mode}; docs/training.md)" if ax is top and n == 0 else None)
    for ax in axes[:, 0]:
        ax.grid(alpha=0.3)
    if top.get_legend_handles_labels()[0]:  # the other panels have the same lines: one legend
        top.legend(fontsize=8, loc="best", title_fontsize=8,
                   title=f"fewer than {MIN_SEEDS_FOR_BAND} seeds: each seed's curve, no interval"
                   if per_seed else None)
    axes[-1, 0].set_xlabel("env steps per run")
    if not returns:
        top.text(0.5, 0.5, "no episode finished yet", ha="center", va="center", transform=top.transAxes)
    figure.tight_layout()
    return figure


def plot_returns(run_dir: Path, path: Path, title: str = "") -> Path:
    """Plot ``metrics.csv``'s headline return (``return_mean``, or ``greedy_return_mean`` with the exploring
    ``return_mean`` drawn faint beside it for the value-based baselines; ``headline_metrics``) and
    ``EXTRA_PANELS``' columns where present, per grid point
    against env steps: the mean over seeds and its 95% t-interval, or each seed's curve when there are
    fewer than 3 seeds. Grid points are labelled by the hyperparameters that differ between them (from
    ``config.yaml``). Updates where no episode finished are skipped. Writes a PNG; returns its path."""
    figure = returns_figure(run_dir, title)  # selects the Agg backend before pyplot is imported here
    import matplotlib.pyplot as plt

    path = Path(path)
    figure.savefig(path)
    plt.close(figure)
    return path
