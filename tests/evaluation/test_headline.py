"""A run's headline score is its evaluation policy's: the value-based baselines' greedy episodes
(``greedy_return_mean``), not their exploring envs' ``return_mean``, in ``summary.json``, the returns plot and
``report``; the exploring curve is drawn beside it, labelled. Hand-written run folders with known values."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from jaxmarl_suite.baselines import iql
from jaxmarl_suite.evaluation.plots import returns_figure
from jaxmarl_suite.evaluation.report import compare, load_runs
from jaxmarl_suite.training.runner.config import Experiment, run_record
from jaxmarl_suite.training.runner.logger import headline_metrics
from jaxmarl_suite.training.runner.run_folder import write_summary

UPDATES = 20  # a score is the mean over the last 2 logged updates
EXPLORING = [0.1 * u for u in range(1, UPDATES + 1)]
GREEDY = [0.5 + 0.1 * u for u in range(1, UPDATES + 1)]
EXPLORING_WINS = [0.02 * u for u in range(1, UPDATES + 1)]
GREEDY_WINS = [0.03 * u for u in range(1, UPDATES + 1)]


def write_value_based_run(path: Path, *, greedy: bool = True) -> Path:
    """One seed of IQL on SMAX_3m: exploring and (unless ``greedy`` is False: NaN) greedy columns."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump(
        {"algorithm": "iql", "preset": None, "seed": 0, "num_seeds": 1,
         "config": {"env_id": "SMAX_3m", "num_envs": 8, "num_steps": 8}, "grid": [{"lr": 0.001}]}))
    columns = ["update", "env_steps", "seed", "grid_index", "return_mean", "episode_length", "episodes",
               "wall_s", "win_rate", "greedy_return_mean", "greedy_win_rate"]
    with (path / "metrics.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for u in range(UPDATES):
            shown = [GREEDY[u], GREEDY_WINS[u]] if greedy else ["nan", "nan"]
            writer.writerow([u + 1, (u + 1) * 64, 0, 0, EXPLORING[u], 20, 3, u, EXPLORING_WINS[u], *shown])
    return path


def test_greedy_episodes_are_the_headline_where_they_were_logged() -> None:
    assert headline_metrics([{"return_mean": 1.0, "greedy_return_mean": 2.0}]) == (
        "greedy_return_mean", "greedy_win_rate")
    no_greedy = [{"return_mean": 1.0, "greedy_return_mean": math.nan}]
    assert headline_metrics(no_greedy) == ("return_mean", "win_rate")
    assert headline_metrics([{"return_mean": 1.0}]) == ("return_mean", "win_rate")


def test_summary_headline_is_the_greedy_score(tmp_path: Path) -> None:
    run_dir = write_value_based_run(tmp_path / "iql")
    experiment = Experiment("iql", iql.Config(env_id="SMAX_3m"), (iql.HParams(),), 1, 0, run_dir, None, None,
                            None)
    summary = json.loads(write_summary(run_dir, run_record(experiment), 1.0).read_text())
    assert summary["score_metric"] == "greedy_return_mean"
    assert summary["final_score"] == [[pytest.approx((GREEDY[-1] + GREEDY[-2]) / 2)]]
    assert summary["final_win_score"] == [[pytest.approx((GREEDY_WINS[-1] + GREEDY_WINS[-2]) / 2)]]
    # the exploring score stays in the summary, under its own name
    assert summary["final_return_mean"] == [[pytest.approx((EXPLORING[-1] + EXPLORING[-2]) / 2)]]


def test_without_greedy_episodes_the_headline_is_return_mean(tmp_path: Path) -> None:
    run_dir = write_value_based_run(tmp_path / "iql", greedy=False)
    experiment = Experiment("iql", iql.Config(env_id="SMAX_3m"), (iql.HParams(),), 1, 0, run_dir, None, None,
                            None)
    summary = json.loads(write_summary(run_dir, run_record(experiment), 1.0).read_text())
    assert summary["score_metric"] == "return_mean"
    assert summary["final_score"] == summary["final_return_mean"]


def test_report_scores_value_based_runs_on_greedy_episodes(tmp_path: Path) -> None:
    runs = load_runs([write_value_based_run(tmp_path / "iql")])
    comparison = compare(runs, normalize=None)
    assert [run.metric for run in comparison.runs] == ["greedy_return_mean"]
    assert comparison.runs[0].score == pytest.approx((GREEDY[-1] + GREEDY[-2]) / 2)


def test_plot_draws_the_greedy_curve_and_the_exploring_one_labelled(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    figure = returns_figure(write_value_based_run(tmp_path / "iql"))
    try:
        returns_panel, wins_panel = figure.axes[:2]
        handles, labels = returns_panel.get_legend_handles_labels()
        by_label = dict(zip(labels, handles, strict=True))
        scored = next(h for label, h in by_label.items() if label.startswith("greedy (scored)"))
        exploring = next(h for label, h in by_label.items() if label.startswith("exploring (epsilon-greedy)"))
        np.testing.assert_allclose(scored.get_ydata(), GREEDY)
        np.testing.assert_allclose(exploring.get_ydata(), EXPLORING)
        assert exploring.get_linestyle() == ":" and exploring.get_linewidth() < scored.get_linewidth()
        win_lines = {tuple(np.round(line.get_ydata(), 6)) for line in wins_panel.lines}
        assert tuple(np.round(GREEDY_WINS, 6)) in win_lines
        assert tuple(np.round(EXPLORING_WINS, 6)) in win_lines
    finally:
        plt.close(figure)
