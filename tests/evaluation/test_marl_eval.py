"""marl-eval's JSON layout: ``report`` writes every run in it, reads files in it (ours, and the shape Mava's
``JsonLogger`` writes) back into a report, and refuses malformed ones with the place named.

The Mava-shaped file is written here by hand from its logger's layout (``marl_eval/json_tools/json_logger.py``
of ``id-marl-eval``: ``absolute_metrics`` first, then ``step_K`` with ``step_count``, ``elapsed_time`` and
one-value lists, older Mava's ``mean_episode_return``). marl-eval itself does not install here (it pins
pandas 1.4.4, which does not build on this Python); where its modules import, the last test runs its own
checker and aggregation on our file."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from jaxmarl_suite.cli import main
from jaxmarl_suite.evaluation import marl_eval
from jaxmarl_suite.evaluation.report import load_runs, run_report, task_for
from jaxmarl_suite.training.runner.config import ConfigError

TASK = "SMAX_2s3z"
UPDATES = 10  # final fraction 0.1: a run's score is its last logged update


def write_run(path: Path, algorithm: str, returns: list[list[float]], wins: list[list[float]]) -> Path:
    """A run folder of ``len(returns)`` seeds on SMAX 2s3z with base seed 3, one logged update per list
    entry of 1,000 env steps each (NaN: no episode finished)."""
    path.mkdir(parents=True)
    config = {"algorithm": algorithm, "seed": 3, "num_seeds": len(returns),
              "config": {"env_id": TASK, "env_kwargs": {}, "log_every": 1},
              "grid": [{"lr": 0.001}]}
    (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    with (path / "metrics.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["update", "env_steps", "seed", "grid_index", "return_mean", "win_rate", "wall_s"])
        for update in range(len(returns[0])):
            for seed, (ret, win) in enumerate(zip(returns, wins, strict=True)):
                writer.writerow([update + 1, 1000 * (update + 1), seed, 0, ret[update], win[update], 0.1])
    return path


def ours(tmp_path: Path) -> Path:
    climb = [[math.nan, *[2.0 * u for u in range(1, UPDATES)]],
             [1.0 * u for u in range(UPDATES)]]
    wins = [[0.0] * (UPDATES - 1) + [1.0], [0.0] * (UPDATES - 1) + [0.5]]
    return write_run(tmp_path / "mappo_run", "mappo", climb, wins)


def mava_file(path: Path, environment: str = "SMAX", task: str = "2s3z", algorithm: str = "ff_mappo") -> Path:
    """Two seeds of three evaluations each, in the shape Mava's logger writes."""
    def run(returns: list[float]) -> dict:
        steps = {f"step_{k}": {"step_count": 50_000 * (k + 1), "elapsed_time": 2.5 * k,
                               "steps_per_second": [1e4], "mean_episode_return": [value]}
                 for k, value in enumerate(returns)}
        return {"absolute_metrics": {"steps_per_second": [1e4], "mean_episode_return": [returns[-1] + 1]},
                **steps}

    seeds = {"seed_0": run([1.0, 5.0, 9.0]), "seed_1": run([2.0, 4.0, 12.0])}
    data = {environment: {task: {algorithm: seeds}}}
    path.write_text(json.dumps(data, indent=4))
    return path


def test_report_writes_every_run_in_marl_eval_layout(tmp_path: Path) -> None:
    run_dir = ours(tmp_path)
    output = run_report([run_dir], tmp_path / "out", reps=20)
    layout = json.loads((tmp_path / "out" / marl_eval.FILE_NAME).read_text())
    assert output.path == tmp_path / "out" / "report.md"
    assert list(layout) == ["smax"] and list(layout["smax"]) == [TASK]
    assert list(layout["smax"][TASK]) == ["mappo"]
    runs = layout["smax"][TASK]["mappo"]
    assert list(runs) == ["seed_0", "seed_1"]  # named by position, so marl-eval pairs them across algorithms
    first = runs["seed_0"]
    # seed 3 finished no episode in the first update: that update is left out for both runs (marl-eval
    # averages each step's values and takes no empty list), so step_0 is the second update
    assert list(first) == [*(f"step_{k}" for k in range(UPDATES - 1)), "absolute_metrics"]
    assert first["step_0"] == {"step_count": 2000, "episode_return": [2.0], "win_rate": [0.0]}
    assert first["step_8"] == {"step_count": 10_000, "episode_return": [18.0], "win_rate": [1.0]}
    assert first["absolute_metrics"] == {"episode_return": [18.0], "win_rate": [1.0]}
    assert runs["seed_1"]["step_0"]["episode_return"] == [1.0]
    assert runs["seed_1"]["absolute_metrics"] == {"episode_return": [9.0], "win_rate": [0.5]}


def test_marl_eval_format_writes_the_file_alone(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run_dir = ours(tmp_path)
    assert main(["report", str(run_dir), "--out", str(tmp_path / "out"), "--format", "marl-eval"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [marl_eval.FILE_NAME]
    assert f"wrote {tmp_path / 'out' / marl_eval.FILE_NAME}" in capsys.readouterr().out


def test_a_mava_file_is_read_as_runs(tmp_path: Path) -> None:
    path = mava_file(tmp_path / "metrics.json")
    runs = load_runs([path])
    assert [r.algorithm for r in runs] == [f"ff_mappo [{path}]"] * 2
    assert {r.task for r in runs} == {TASK}  # SMAX / 2s3z is this suite's SMAX_2s3z
    assert [r.metric for r in runs] == ["mean_episode_return"] * 2
    np.testing.assert_array_equal(runs[0].env_steps, [50_000, 100_000, 150_000])
    np.testing.assert_array_equal(runs[1].returns, [2.0, 4.0, 12.0])
    picked = load_runs([tmp_path / "metrics.json"], marl_eval_metric="steps_per_second")
    np.testing.assert_array_equal(picked[0].returns, [1e4] * 3)


def test_task_names_map_to_registered_envs_or_stay_their_own() -> None:
    assert task_for("smax", "SMAX_2s3z") == TASK
    assert task_for("smax", "2s3z") == TASK
    assert task_for("MPE", "simple_spread_v3") == "MPE_simple_spread_v3"
    assert task_for("Matrax", "Climbing-stateless-v0") == "Matrax/Climbing-stateless-v0"


def test_our_runs_and_a_mava_file_sit_in_one_report(tmp_path: Path) -> None:
    run_dir = ours(tmp_path)
    mava = mava_file(tmp_path / "metrics.json")
    output = run_report([run_dir, mava], tmp_path / "out", reps=20)
    table = [line for line in output.path.read_text().splitlines() if line.startswith(f"| {TASK} | ")]
    # per task: the algorithm, its runs, and the mean final return (last 10% of steps: the last one)
    assert any("| mappo | 2 | 13.5" in line for line in table), table
    assert any(f"| ff_mappo [{mava}] | 2 | 10.5" in line for line in table), table
    # the file written back holds both, Mava's runs as they were read (elapsed_time is not carried)
    layout = json.loads((tmp_path / "out" / marl_eval.FILE_NAME).read_text())
    assert set(layout["smax"][TASK]) == {"mappo"}
    mava_back = layout["SMAX"]["2s3z"]["ff_mappo"]["seed_1"]
    assert mava_back["step_2"] == {"step_count": 150_000, "steps_per_second": [1e4],
                                   "mean_episode_return": [12.0]}
    assert mava_back["absolute_metrics"] == {"steps_per_second": [1e4], "mean_episode_return": [13.0]}
    # and it reads back into the same runs; given twice, the second copy's runs are renamed, not lost
    again = tmp_path / "out" / marl_eval.FILE_NAME
    assert sorted(r.algorithm for r in load_runs([again])) == ([f"ff_mappo [{again}]"] * 2
                                                               + [f"mappo [{again}]"] * 2)
    twice = run_report([again, again], tmp_path / "twice", format="marl-eval").path
    assert set(json.loads(twice.read_text())["smax"][TASK]["mappo"]) == {"seed_0", "seed_1", "seed_0_2",
                                                                          "seed_1_2"}


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["SMAX"]["2s3z"]["ff_mappo"]["seed_0"]["step_1"].pop("step_count"),
     "SMAX/2s3z/ff_mappo/seed_0/step_1: no numeric step_count"),
    (lambda d: d["SMAX"]["2s3z"]["ff_mappo"]["seed_0"].update(last={}),
     "SMAX/2s3z/ff_mappo/seed_0: expected step_0, step_1, ... and absolute_metrics"),
    (lambda d: d["SMAX"].update({"3m": []}), "SMAX/3m: expected a non-empty mapping of algorithms"),
    (lambda d: d["SMAX"]["2s3z"]["ff_mappo"]["seed_1"]["step_0"].update(mean_episode_return=["high"]),
     r"seed_1/step_0/mean_episode_return: expected a number or a list of numbers, got \['high'\]"),
])
def test_a_malformed_file_is_refused_with_its_place(tmp_path: Path, change, message: str) -> None:
    path = mava_file(tmp_path / "metrics.json")
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message):
        load_runs([path])


def test_a_metric_not_every_run_logs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"SMAX/2s3z/ff_mappo/seed_0 logs no 'win_rate'; it logs "
                                          r"\['mean_episode_return', 'steps_per_second'\]"):
        load_runs([mava_file(tmp_path / "metrics.json")], marl_eval_metric="win_rate")


def test_commas_and_duplicate_runs_cannot_be_written(tmp_path: Path) -> None:
    record = marl_eval.MarlEvalRun("smax", TASK, "mappo (lr=1, gamma=2)", "seed_0", np.array([1]),
                                   {"episode_return": [[1.0]]})
    with pytest.raises(ValueError, match="refuses algorithm names with commas"):
        marl_eval.write(tmp_path / "x.json", [record])
    record.algorithm = "mappo"
    with pytest.raises(ValueError, match="two runs named 'seed_0' of mappo on smax/SMAX_2s3z"):
        marl_eval.write(tmp_path / "x.json", [record, record])


def test_a_json_file_that_is_not_marl_eval_is_skipped_with_the_reason(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    run_dir = ours(tmp_path)
    stray = tmp_path / "notes.json"
    stray.write_text('{"a": 1}')
    assert main(["report", str(run_dir), str(stray), "--out", str(tmp_path / "out"), "--reps", "20"]) == 0
    printed = capsys.readouterr().out
    assert (f"skipped {stray}: a JSON file but not marl-eval results ({stray}: a: expected a non-empty "
            f"mapping of tasks, got int)") in printed


def test_marl_eval_own_checker_accepts_our_file(tmp_path: Path) -> None:
    diagnose = pytest.importorskip(
        "marl_eval.utils.diagnose_data_errors",
        reason="id-marl-eval does not install here (it pins pandas 1.4.4); put its sources and colorama "
               "on PYTHONPATH to run it")
    processing = pytest.importorskip("marl_eval.utils.data_processing_utils")
    run_report([ours(tmp_path), mava_file(tmp_path / "metrics.json")], tmp_path / "out",
               format="marl-eval")
    data = json.loads((tmp_path / "out" / marl_eval.FILE_NAME).read_text())
    ours_only = {"smax": data["smax"]}
    assert all(diagnose.DiagnoseData(ours_only).check_data()["smax"].values())
    processed = processing.data_process_pipeline(ours_only, metrics_to_normalize=[])
    means = processing.get_and_aggregate_data_single_task(processed, "episode_return", [], TASK, "smax")
    # step 1 is the third update (the first is left out): seed 3 logged 4.0, seed 4 logged 2.0
    assert means["mappo"]["mean"][1] == pytest.approx(3.0)
