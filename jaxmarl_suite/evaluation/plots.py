"""Plots of run folders: returns against env steps, mean and a 95% band over seeds per grid point."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from jaxmarl_suite.evaluation.policy import mean_ci


def plot_returns(run_dir: Path, path: Path, title: str = "") -> Path:
    """Plot ``metrics.csv``'s ``return_mean`` per grid point: the mean over seeds and its 95% t-interval
    (updates where no episode finished are skipped). Writes a PNG and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmarl_suite.training.logger import read_metrics

    by_point: dict[int, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in read_metrics(run_dir):
        if np.isfinite(row["return_mean"]):
            by_point[int(row["grid_index"])][row["env_steps"]].append(row["return_mean"])
    figure, axes = plt.subplots(figsize=(6, 4), dpi=100)
    for grid_index, curve in sorted(by_point.items()):
        steps = np.array(sorted(curve))
        stats = np.array([mean_ci(np.array(curve[s])) for s in steps])
        seeds = max(len(v) for v in curve.values())
        axes.plot(steps, stats[:, 0], label=f"grid point {grid_index} ({seeds} seed{'s' * (seeds > 1)})")
        if seeds > 1:
            axes.fill_between(steps, stats[:, 1], stats[:, 2], alpha=0.25)
    axes.set_xlabel("env steps per run")
    axes.set_ylabel("mean episode return per agent")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    if by_point:
        axes.legend(fontsize=8)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path)
    plt.close(figure)
    return path
