"""``write_report`` and ``jaxmarl-suite report`` on hand-written run folders with known final returns.

Scores are normalised by the package's reference scores (read here straight from the YAML file) or by
``normalize`` ranges; simple_tag (competitive) has no strong score, so it needs a range in a multi-task
report and is reported raw on its own."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from jaxmarl_suite.cli import build_parser, main
from jaxmarl_suite.evaluation import report as report_module
from jaxmarl_suite.evaluation.report import default_out_dir, load_runs, parse_range, write_report
from jaxmarl_suite.training.runner import logger
from jaxmarl_suite.training.runner.config import ConfigError

SPREAD, TAG = "MPE_simple_spread_v3", "MPE_simple_tag_v3"
UPDATES = 20  # final_fraction 0.1 -> a run's score is the mean of its last 2 logged updates
HPARAMS = {"lr": 0.0005, "gamma": 0.99, "ent_coef": 0.01}
TAG_GRID = [{**HPARAMS, "lr": 0.001}]


REFERENCE = yaml.safe_load(
    (Path(report_module.__file__).parent / "reference_scores.yaml").read_text())
TAG_RANGE = {TAG: (0.0, 20.0)}


def reference_range(task):
    return REFERENCE[task]["random"], REFERENCE[task]["strong"]


def write_run(path, algorithm, env_id, finals, *, base_seed=0, grid=None, batch=64, empty_cells=False,
              env_kwargs=None):
    """A run folder in the runner's format. ``finals[g][s]`` is the final return of seed ``s`` at grid
    point ``g``: the last two updates log ``final - 1`` and ``final + 1`` (so their mean is ``final``), and
    earlier updates climb towards it with no episode finished on every third update."""
    grid = grid or [HPARAMS]
    path.mkdir(parents=True)
    config = {"algorithm": algorithm, "preset": f"{algorithm}_{env_id}", "seed": base_seed,
              "num_seeds": len(finals[0]),
              "config": {"env_id": env_id, "env_kwargs": env_kwargs or {}, "num_envs": batch // 16,
                         "num_steps": 16,
                         "hidden_sizes": [64, 64], "recurrent": False, "log_every": 1},
              "grid": grid}
    (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    columns = ["update", "env_steps", "seed", "grid_index", "return_mean", "episode_length", "episodes",
               "wall_s", "total_loss"]
    with (path / "metrics.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for update in range(1, UPDATES + 1):
            for g, seeds in enumerate(finals):
                for s, final in enumerate(seeds):
                    if update == UPDATES - 1:
                        value = final - 1.0
                    elif update == UPDATES:
                        value = final + 1.0
                    elif update % 3 == 0:
                        value = math.nan
                    else:
                        value = final * update / UPDATES - 5.0
                    shown = ("" if empty_cells else "nan") if math.isnan(value) else f"{value:.6g}"
                    writer.writerow([update, update * batch, s, g, shown, 25, 4, 0.1 * update, 1.0])
    return path


# Final returns per task and algorithm, seed counts deliberately unequal (ippo on tag spans two folders).
FINALS = {
    (SPREAD, "ippo"): [-40.0, -35.0, -30.0],
    (SPREAD, "mappo"): [-33.0, -28.0, -31.0, -26.0],
    (TAG, "ippo"): [5.0, 9.0, 7.0, 12.0, 4.0],
    (TAG, "mappo"): [10.0, 15.0],
}


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    dirs = [
        write_run(root / "ippo_spread", "ippo", SPREAD, [FINALS[SPREAD, "ippo"]]),
        write_run(root / "mappo_spread", "mappo", SPREAD, [FINALS[SPREAD, "mappo"]], batch=128),
        # ippo's tag runs use another lr (as a per-env preset would) and span two folders
        write_run(root / "ippo_tag_a", "ippo", TAG, [FINALS[TAG, "ippo"][:3]], base_seed=0, grid=TAG_GRID),
        write_run(root / "ippo_tag_b", "ippo", TAG, [FINALS[TAG, "ippo"][3:]], base_seed=1, grid=TAG_GRID),
        write_run(root / "mappo_tag", "mappo", TAG, [FINALS[TAG, "mappo"]], empty_cells=True),
    ]
    return dirs


def normalised_by_hand(algorithm, ranges):
    """Scores of ``algorithm`` on both tasks, scaled by ``ranges[task] = (low, high)``."""
    out = []
    for task in (SPREAD, TAG):
        low, high = ranges[task]
        out += [(s - low) / (high - low) for s in FINALS[task, algorithm]]
    return out


def iqm_by_hand(values):
    ordered = sorted(values)
    cut = len(ordered) // 4
    kept = ordered[cut:len(ordered) - cut]
    return sum(kept) / len(kept)


def table_rows(markdown, heading):
    """The rows (lists of cells) of the first table after ``heading``."""
    lines = markdown.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def aggregate_cell(markdown, algorithm, column):
    row = next(r for r in table_rows(markdown, "## Aggregate metrics") if r[0] == algorithm)
    point, low, high = row[column].replace("[", " ").replace("]", " ").replace(",", " ").split()
    return float(point), float(low), float(high)


def test_the_report_scores_runs_with_the_loggers_final_score():
    assert report_module.final_score is logger.final_score  # one definition, shared with summary.json
    assert build_parser().parse_args(["report", "run"]).final_fraction == logger.FINAL_FRACTION


def test_report_matches_hand_computation(runs, tmp_path):
    # spread is scaled by its reference scores (random policy = 0, strong = 1), tag by a given range
    ranges = {SPREAD: reference_range(SPREAD), **TAG_RANGE}
    path = write_report(runs, tmp_path / "report", normalize=TAG_RANGE, reps=500, seed=0)
    assert path == tmp_path / "report" / "report.md"
    for name in ("report.md", "aggregates.png", "sample_efficiency.png", "performance_profile.png"):
        assert (tmp_path / "report" / name).stat().st_size > 0
    markdown = path.read_text()
    for text in ("ippo", "mappo", SPREAD, TAG, "P(X > Y)", "![aggregates.png](aggregates.png)"):
        assert text in markdown
    assert "lr=" not in markdown.split("## Runs")[0]  # presets differing across tasks don't split ippo

    scales = {r[0]: r for r in table_rows(markdown, "## Normalisation")}
    assert scales[SPREAD][1] == "reference scores" and scales[TAG][1] == "`--normalize`"
    assert float(scales[SPREAD][2].split()[0]) == pytest.approx(reference_range(SPREAD)[0])
    assert float(scales[SPREAD][3]) == pytest.approx(reference_range(SPREAD)[1])
    assert "min-max" not in markdown

    for algorithm in ("ippo", "mappo"):
        scores = normalised_by_hand(algorithm, ranges)
        iqm, low, high = aggregate_cell(markdown, algorithm, 3)
        assert iqm == pytest.approx(iqm_by_hand(scores), abs=1e-4)
        assert low <= iqm <= high
        by_task = [scores[:len(FINALS[SPREAD, algorithm])], scores[len(FINALS[SPREAD, algorithm]):]]
        mean, _, _ = aggregate_cell(markdown, algorithm, 4)
        assert mean == pytest.approx(np.mean([np.mean(t) for t in by_task]), abs=1e-4)
        gap, _, _ = aggregate_cell(markdown, algorithm, 6)
        assert gap == pytest.approx(np.mean([np.mean([1 - s for s in t]) for t in by_task]), abs=1e-4)

    raw = {(r[0], r[1]): r for r in table_rows(markdown, "## Final return per task")}
    for (task, algorithm), finals in FINALS.items():
        row = raw[task, algorithm]
        assert int(row[2]) == len(finals)
        assert float(row[3]) == pytest.approx(np.mean(finals), abs=1e-3)

    (x, y, p, _), = table_rows(markdown, "## Probability of improvement")
    assert (x, y) == ("ippo", "mappo")
    wins = []
    for task in (SPREAD, TAG):
        pairs = [(a, b) for a in FINALS[task, "ippo"] for b in FINALS[task, "mappo"]]
        wins.append(sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs) / len(pairs))
    assert float(p) == pytest.approx(np.mean(wins), abs=1e-4)


def test_fixed_normalisation_ranges(runs, tmp_path):
    ranges = {SPREAD: (-60.0, -20.0), TAG: (0.0, 20.0)}
    markdown = write_report(runs, tmp_path / "fixed", normalize=ranges, reps=200).read_text()
    iqm, _, _ = aggregate_cell(markdown, "mappo", 3)
    assert iqm == pytest.approx(iqm_by_hand(normalised_by_hand("mappo", ranges)), abs=1e-4)
    assert [r[1] for r in table_rows(markdown, "## Normalisation")] == ["`--normalize`"] * 2
    with pytest.raises(ValueError, match="min < max"):
        write_report(runs, tmp_path / "bad", normalize={SPREAD: (1.0, 1.0), TAG: (0.0, 1.0)}, reps=10)


def test_several_tasks_without_a_common_scale_is_an_error_naming_the_task_and_flag(runs, tmp_path):
    with pytest.raises(ValueError, match=f"{TAG}: it has a random-policy score but no strong score.*"
                                         f"--normalize {TAG}=MIN:MAX"):
        write_report(runs, tmp_path / "out", reps=10)
    assert not (tmp_path / "out").exists()  # nothing written before the error


def test_a_single_task_without_reference_scores_is_reported_raw(tmp_path):
    finals = [3.0, 9.0, 4.0, 12.0, 7.0]
    folder = write_run(tmp_path / "tag", "ippo", TAG, [finals])
    markdown = write_report([folder], tmp_path / "out", reps=200).read_text()
    assert "None: the numbers are raw per-agent returns" in markdown
    assert "--normalize MPE_simple_tag_v3=MIN:MAX" in markdown
    header = markdown.split("## Aggregate metrics", 1)[1].splitlines()[2]
    assert "optimality gap" not in header  # raw returns have no target
    iqm, low, high = aggregate_cell(markdown, "ippo", 3)
    assert iqm == pytest.approx(iqm_by_hand(finals), abs=1e-4) and low <= iqm <= high


def test_reference_scores_are_not_used_for_other_env_kwargs(tmp_path):
    folder = write_run(tmp_path / "continuous", "ippo", SPREAD, [[-30.0, -25.0, -20.0]],
                       env_kwargs={"continuous_actions": True})
    markdown = write_report([folder], tmp_path / "out", reps=100).read_text()
    assert "raw per-agent returns" in markdown and "continuous_actions" in markdown
    iqm, _, _ = aggregate_cell(markdown, "ippo", 3)
    assert iqm == pytest.approx(-25.0, abs=1e-4)


def test_grid_points_and_config_differences_are_separate_algorithms(tmp_path):
    grid = [{**HPARAMS, "lr": 0.001}, {**HPARAMS, "lr": 0.003}]
    folder = write_run(tmp_path / "sweep", "ippo", SPREAD, [[-30.0, -31.0], [-20.0, -22.0]], grid=grid)
    recurrent = write_run(tmp_path / "rnn", "ippo", SPREAD, [[-25.0, -26.0, -27.0]])
    text = (recurrent / "config.yaml").read_text().replace("recurrent: false", "recurrent: true")
    (recurrent / "config.yaml").write_text(text)
    markdown = write_report([folder, recurrent], tmp_path / "out", reps=100).read_text()
    labels = [row[0] for row in table_rows(markdown, "## Aggregate metrics")]
    assert labels == ["ippo (lr=0.001, recurrent=False)", "ippo (lr=0.003, recurrent=False)",
                      "ippo (lr=0.0005, recurrent=True)"]
    assert len(table_rows(markdown, "## Probability of improvement")) == 3


def test_single_algorithm_single_task_and_left_out_runs(tmp_path):
    folder = write_run(tmp_path / "one", "ippo", SPREAD, [[-30.0, -20.0, -10.0]])
    rows = (folder / "metrics.csv").read_text().splitlines()
    # seed 2 finishes no episode in its last two updates: it has no score
    rows = [r if not (r.split(",")[0] in {"19", "20"} and r.split(",")[2] == "2") else
            ",".join(r.split(",")[:4] + ["nan"] + r.split(",")[5:]) for r in rows]
    (folder / "metrics.csv").write_text("\n".join(rows) + "\n")
    markdown = write_report([folder], tmp_path / "out", reps=100).read_text()
    low, high = reference_range(SPREAD)
    expected = [(-30.0 - low) / (high - low), (-20.0 - low) / (high - low)]
    iqm, _, _ = aggregate_cell(markdown, "ippo", 3)
    assert iqm == pytest.approx(np.mean(expected), abs=1e-4)  # not min-max: that would give 0.5
    gap, _, _ = aggregate_cell(markdown, "ippo", 6)
    assert gap == pytest.approx(np.mean([max(1 - e, 0) for e in expected]), abs=1e-4)
    assert "at least two algorithms" in markdown
    assert "seed 2: no episode finished" in markdown
    for name in ("aggregates.png", "sample_efficiency.png", "performance_profile.png"):
        assert (tmp_path / "out" / name).is_file()


def test_algorithm_missing_a_task_is_left_out_of_aggregates(runs, tmp_path):
    extra = write_run(tmp_path / "vdn", "vdn", SPREAD, [[-29.0, -27.0]])
    markdown = write_report([*runs, extra], tmp_path / "out", normalize=TAG_RANGE, reps=100).read_text()
    assert [r[0] for r in table_rows(markdown, "## Aggregate metrics")] == ["ippo", "mappo"]
    assert ("MPE_simple_spread_v3", "vdn") in {(r[0], r[1]) for r in table_rows(markdown, "## Final return")}
    assert "vdn has runs on ['MPE_simple_spread_v3'] only" in markdown


def test_cli_report(runs, tmp_path, monkeypatch, capsys):
    out = tmp_path / "cli"
    tag = f"--normalize={TAG}=0:20"
    assert main(["report", *map(str, runs), "--out", str(out), "--reps", "200", "--seed", "3", tag]) == 0
    assert f"wrote {out / 'report.md'}" in capsys.readouterr().out
    markdown = (out / "report.md").read_text()
    assert "200 resamples, seed 3" in markdown
    iqm, _, _ = aggregate_cell(markdown, "ippo", 3)
    ranges = {SPREAD: reference_range(SPREAD), **TAG_RANGE}
    assert iqm == pytest.approx(iqm_by_hand(normalised_by_hand("ippo", ranges)), abs=1e-4)
    for name in ("aggregates.png", "sample_efficiency.png", "performance_profile.png"):
        assert (out / name).is_file()
    assert main(["report", *map(str, runs), "--reps", "10"]) == 2
    assert f"--normalize {TAG}=MIN:MAX" in capsys.readouterr().err


def test_the_default_report_folder_is_beside_the_runs(runs, tmp_path, monkeypatch, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["report", *map(str, runs), "--reps", "50", f"--normalize={TAG}=0:20"]) == 0
    report = runs[0].parent / "report" / "report.md"  # the runs' common folder
    assert f"wrote {report}" in capsys.readouterr().out
    assert report.is_file() and not any(elsewhere.iterdir())
    # `report runs/*` again: the report folder among the runs is skipped, with a note
    again = sorted(runs[0].parent.iterdir())
    assert main(["report", *map(str, again), "--reps", "50", f"--normalize={TAG}=0:20"]) == 0
    assert "a report, not a training run; skipped" in report.read_text()
    assert default_out_dir([runs[0]]) == runs[0].resolve() / "report"  # one run: inside its folder
    with pytest.raises(ConfigError, match="share no parent folder"):
        default_out_dir([tmp_path, Path("/nonexistent-root-folder/run")])


def test_report_runs_star_skips_what_is_not_a_run_and_prints_the_notes(tmp_path, capsys):
    root = tmp_path / "runs"
    write_run(root / "ippo_spread", "ippo", SPREAD, [[-30.0, -25.0, -20.0]])
    write_run(root / "ippo_spread_again", "ippo", SPREAD, [[-29.0, -24.0, -21.0]])  # same seeds again
    demo = root / "demo"  # what `jaxmarl-suite demo` leaves: a GIF, no config.yaml
    demo.mkdir()
    (demo / f"{SPREAD}.gif").write_bytes(b"GIF89a")
    xplay = root / "xplay"
    xplay.mkdir()
    (xplay / "xplay.json").write_text("{}")
    (xplay / "xplay.csv").write_text("")
    sweep = root / "sweep"
    write_run(sweep / SPREAD / "ippo", "ippo", SPREAD, [[-28.0]])
    listing = root / "notes.txt"
    listing.write_text("not a run")

    unused = f"--normalize={TAG}=0:20"
    assert main(["report", *map(str, sorted(root.iterdir())), "--reps", "50", unused]) == 0
    lines = capsys.readouterr().out.splitlines()
    report = root / "report" / "report.md"
    skips = [f"skipped {demo}: not a training run (no config.yaml)",
             f"skipped {listing}: a file, not a run folder",
             f"skipped {sweep}: holds run folders but is not one (pass {sweep}/*/* to include them)",
             f"skipped {xplay}: an xplay output, not a training run"]
    assert lines[:4] == skips and lines[4] == f"wrote {report}"
    notes = lines[5:]
    assert all(line.startswith("note: ") for line in notes) and "`" not in "".join(notes)
    twice = [n for n in notes if "probably the same run counted twice" in n]
    assert len(twice) == 3 and f"{root / 'ippo_spread'} and {root / 'ippo_spread_again'}" in twice[0]
    assert f"note: --normalize names ['{TAG}'], which no scored run is on; ignored." in notes
    markdown = report.read_text()
    assert f"`{demo}`: not a training run (no config.yaml); skipped." in markdown
    assert "2 run folder(s): 6 scored run(s)" in markdown

    # again, now with the report among the folders; and a report on nothing but non-runs is an error
    assert main(["report", *map(str, sorted(root.iterdir())), "--reps", "50"]) == 0
    assert f"skipped {report.parent}: a report, not a training run" in capsys.readouterr().out
    assert main(["report", str(demo), str(xplay)]) == 2
    error = capsys.readouterr().err
    assert "none of the folders given is a training run" in error and "an xplay output" in error


def test_the_console_says_when_returns_are_raw(tmp_path, capsys):
    folder = write_run(tmp_path / "tag", "ippo", TAG, [[3.0, 9.0, 4.0]])
    assert main(["report", str(folder), "--reps", "50"]) == 0
    out = capsys.readouterr().out
    assert (f"note: raw per-agent returns, not normalised: {TAG} has no scale (it has a random-policy score "
            f"but no strong score); --normalize {TAG}=MIN:MAX gives one.") in out


def test_a_report_across_families_needs_no_normalize(tmp_path, capsys):
    """MPE, Hanabi and Overcooked runs aggregate on the reference scores alone."""
    root = tmp_path / "runs"
    finals = {SPREAD: [-30.0, -25.0, -20.0], "Hanabi": [10.0, 15.0, 20.0],
              "Overcooked_cramped_room": [140.0, 200.0, 240.0]}
    folders = [write_run(root / task, "ippo", task, [values]) for task, values in finals.items()]
    assert main(["report", *map(str, folders), "--reps", "100"]) == 0
    assert "note:" not in capsys.readouterr().out
    markdown = (root / "report" / "report.md").read_text()
    scales = {r[0]: r for r in table_rows(markdown, "## Normalisation")}
    assert {task: row[1] for task, row in scales.items()} == dict.fromkeys(finals, "reference scores")
    # Hanabi: random play loses its lives and scores 0; a perfect game scores 25 (five fireworks of five)
    assert float(scales["Hanabi"][2].split()[0]) == 0.0 and float(scales["Hanabi"][3]) == 25.0
    assert "Carroll et al. 2019" in scales["Overcooked_cramped_room"][4]
    ranges = {SPREAD: reference_range(SPREAD), "Hanabi": (0.0, 25.0),
              "Overcooked_cramped_room": reference_range("Overcooked_cramped_room")}
    per_task = {task: np.mean([(v - ranges[task][0]) / (ranges[task][1] - ranges[task][0]) for v in values])
                for task, values in finals.items()}
    rows = {r[0]: r for r in table_rows(markdown, "## Final return per task")}
    assert float(rows["Hanabi"][5]) == pytest.approx(0.6, abs=1e-3)
    for task, value in per_task.items():
        assert float(rows[task][5]) == pytest.approx(value, abs=1e-3)
    mean, low, high = aggregate_cell(markdown, "ippo", 4)
    assert mean == pytest.approx(np.mean(list(per_task.values())), abs=1e-4) and low <= mean <= high


def test_not_a_run_folder_is_a_clear_error(tmp_path, runs, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no config.yaml"):
        write_report([empty], tmp_path / "out")
    assert main(["report", str(empty), "--out", str(tmp_path / "out")]) == 2
    assert "no config.yaml" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="holds run folders"):
        write_report([runs[0].parent], tmp_path / "out")
    with pytest.raises(ConfigError, match="not a folder"):
        write_report([tmp_path / "nowhere"], tmp_path / "out")
    (runs[0] / "metrics.csv").unlink()
    with pytest.raises(ConfigError, match="no metrics.csv"):
        write_report(runs, tmp_path / "out")
    assert main(["report", str(runs[1]), "--reps", "0", "--out", str(tmp_path / "out")]) == 2
    assert "reps must be a positive integer" in capsys.readouterr().err


def test_load_runs_and_parse_range(runs):
    loaded = load_runs(runs)
    assert len(loaded) == sum(len(v) for v in FINALS.values())
    assert {(r.task, r.algorithm) for r in loaded} == set(FINALS)
    assert parse_range("MPE_simple_tag_v3=-1.5:20") == ("MPE_simple_tag_v3", (-1.5, 20.0))
    with pytest.raises(ValueError, match="ENV_ID=MIN:MAX"):
        parse_range("MPE_simple_tag_v3=5")
