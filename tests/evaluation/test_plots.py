"""The returns plot on hand-written run folders: per-seed curves below 3 seeds, a t-band from 3 seeds on,
grid points labelled by the hyperparameters that differ, and a win-rate panel where the env reports wins."""

import csv
import math

import numpy as np
import pytest
import yaml
from scipy import stats as scipy_stats

from jaxmarl_suite.evaluation.plots import grid_labels, plot_returns, returns_figure

GRID = [{"lr": 0.001, "gamma": 0.99, "ent_coef": 0.01}, {"lr": 0.003, "gamma": 0.99, "ent_coef": 0.01}]


def write_run(path, values, grid=GRID, wins=None, config=True):
    """``values[g][s]`` is the list of ``return_mean`` of seed ``s`` at grid point ``g``, one per update;
    ``wins`` the same shape for ``win_rate`` (no column when None)."""
    path.mkdir(parents=True)
    if config:
        (path / "config.yaml").write_text(yaml.safe_dump(
            {"algorithm": "ippo", "seed": 0, "num_seeds": len(values[0]),
             "config": {"env_id": "MPE_simple_spread_v3"}, "grid": grid}, sort_keys=False))
    columns = ["update", "env_steps", "seed", "grid_index", "return_mean"] + (["win_rate"] if wins else [])
    with (path / "metrics.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for update in range(len(values[0][0])):
            for g, seeds in enumerate(values):
                for s, series in enumerate(seeds):
                    row = [update + 1, (update + 1) * 100, s, g, series[update]]
                    writer.writerow(row + ([wins[g][s][update]] if wins else []))
    return path


def close(figure):
    import matplotlib.pyplot as plt  # after returns_figure has picked the Agg backend

    plt.close(figure)


def legend_texts(axes):
    legend = axes.get_legend()
    return [t.get_text() for t in legend.get_texts()], legend.get_title().get_text()


def test_grid_labels_name_the_hyperparameters_that_differ():
    assert grid_labels(GRID) == ["lr=0.001", "lr=0.003"]
    two = [{"lr": 0.001, "ent_coef": 0.0}, {"lr": 0.003, "ent_coef": 0.01}]
    assert grid_labels(two) == ["lr=0.001, ent_coef=0", "lr=0.003, ent_coef=0.01"]
    assert grid_labels([{"lr": 0.001}]) == [""]


def test_two_seeds_are_drawn_one_line_each_with_no_band(tmp_path):
    values = [[[-40.0, -30.0, -20.0], [-41.0, -31.0, -20.03]], [[-50.0, -45.0, -40.0], [-52.0, -44.0, -41.0]]]
    figure = returns_figure(write_run(tmp_path / "run", values), title="IPPO")
    try:
        (axes,) = figure.axes
        assert len(axes.lines) == 4 and not axes.collections  # 2 grid points x 2 seeds, no bands
        texts, title = legend_texts(axes)
        assert texts == ["lr=0.001: seed 0", "lr=0.001: seed 1", "lr=0.003: seed 0", "lr=0.003: seed 1"]
        assert "each seed's curve" in title
        # the y axis spans the curves, not a t-interval around them
        low, high = axes.get_ylim()
        assert low > -60 and high < -15
        np.testing.assert_allclose(axes.lines[1].get_ydata(), values[0][1])
    finally:
        close(figure)


def test_three_or_more_seeds_get_mean_and_t_band(tmp_path):
    values = [[[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 3.0, 4.0], [6.0, 3.0, 4.0]]]
    figure = returns_figure(write_run(tmp_path / "run", values, grid=[GRID[0]]))
    try:
        (axes,) = figure.axes
        (line,) = axes.lines
        texts, title = legend_texts(axes)
        assert texts == ["mean and 95% t-interval over 4 seeds"] and not title
        by_update = np.array(values[0]).T  # [updates, seeds]
        np.testing.assert_allclose(line.get_ydata(), by_update.mean(axis=1))
        (band,) = axes.collections
        half = scipy_stats.t.ppf(0.975, 3) * by_update.std(axis=1, ddof=1) / 2.0
        vertices = band.get_paths()[0].vertices
        for step, mean, width in zip([100, 200, 300], by_update.mean(axis=1), half, strict=True):
            ys = vertices[np.isclose(vertices[:, 0], step), 1]
            assert ys.min() == pytest.approx(mean - width, abs=2e-3)
            assert ys.max() == pytest.approx(mean + width, abs=2e-3)
    finally:
        close(figure)


def test_win_rate_gets_its_own_panel(tmp_path):
    values = [[[1.0, 5.0, 9.0], [2.0, 6.0, 10.0]]]
    wins = [[[0.0, 0.5, math.nan], [0.25, 0.5, 1.0]]]
    run = write_run(tmp_path / "run", values, grid=[GRID[0]], wins=wins)
    figure = returns_figure(run, title="MAPPO on SMAX_3m")
    try:
        top, bottom = figure.axes
        assert top.get_ylabel() == "mean episode return per agent" and bottom.get_ylabel() == "win rate"
        assert len(bottom.lines) == 2
        np.testing.assert_allclose(bottom.lines[0].get_ydata(), [0.0, 0.5])  # the NaN update is skipped
        assert bottom.get_ylim()[0] < 0 < 1 < bottom.get_ylim()[1]
    finally:
        close(figure)
    assert plot_returns(run, tmp_path / "returns.png").stat().st_size > 0


def test_without_config_yaml_grid_points_fall_back_to_indices(tmp_path):
    values = [[[1.0, 2.0]], [[3.0, 4.0]]]
    figure = returns_figure(write_run(tmp_path / "run", values, config=False))
    try:
        assert legend_texts(figure.axes[0])[0] == ["grid point 0: 1 seed", "grid point 1: 1 seed"]
    finally:
        close(figure)
