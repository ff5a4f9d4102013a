"""The sweep runner: one run folder per (task, algorithm) block, the whole sweep validated before anything
trains, finished blocks skipped on a re-run, the dry run, and the report at the end.

One tiny sweep (2 tasks x IPPO/MAPPO, 2 learning rates, 2 seeds, 8 updates of 256 env steps) trains once
per module; every other test only plans, which compiles nothing.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.pipeline import run_sweep
from jaxmarl_suite.training.runner.config import ConfigError, baseline_module
from jaxmarl_suite.training.runner.sweep import format_plan, load_sweep, plan_sweep

REPO = Path(__file__).resolve().parents[2]
SPREAD, REFERENCE = "MPE_simple_spread_v3", "MPE_simple_reference_v3"
ALGORITHMS = ("ippo", "mappo")
UPDATES = 8  # 2048 env steps / (16 envs x 16 steps)
TINY: dict[str, Any] = {
    "name": "tiny",
    "seed": 0,
    "seeds": 2,
    "tasks": [SPREAD, REFERENCE],
    "config": {"total_timesteps": 2048, "num_envs": 16, "num_steps": 16, "num_minibatches": 2,
               "update_epochs": 2, "hidden_sizes": [32]},
    "hparams": {"lr": [0.001, 0.003]},
    "algorithms": {"ippo": {}, "mappo": {}},
    "progress": False,
    "artifacts": False,  # the GIFs would double the time; test_runner covers them
    "report": {"reps": 200},
}


def sweep_dict(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(TINY)
    data.update(changes)
    return data


def write_sweep(path: Path, **changes: Any) -> Path:
    path.write_text(yaml.safe_dump(sweep_dict(**changes), sort_keys=False))
    return path


def metric_rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


Builds = dict[str, list[tuple[int, bool]]]


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[tuple[Path, Path, str, int], Builds]:
    """The tiny sweep trained once through ``jaxmarl-suite sweep``: (sweep file, out, stdout, status), and
    every ``make_env`` call of each algorithm as ``(num_envs, auto_reset)``."""
    root = tmp_path_factory.mktemp("sweep")
    sweep_file = write_sweep(root / "tiny.yaml")
    out = root / "out"
    printed = io.StringIO()
    builds: Builds = {}
    with pytest.MonkeyPatch.context() as patch:
        for name in ALGORITHMS:
            module = baseline_module(name)
            builds[name] = calls = []

            def counting(config: Any, num_envs: int | None = None, auto_reset: bool = True, *,
                         calls: list[tuple[int, bool]] = calls, original: Any = module.make_env) -> Any:
                calls.append((config.num_envs if num_envs is None else num_envs, auto_reset))
                return original(config, num_envs, auto_reset)

            patch.setattr(module, "make_env", counting)
        with redirect_stdout(printed):
            status = cli_main(["sweep", str(sweep_file), "--out", str(out)])
    return (sweep_file, out, printed.getvalue(), status), builds


@pytest.fixture(scope="module")
def swept(sweep_run: tuple[tuple[Path, Path, str, int], Builds]) -> tuple[Path, Path, str, int]:
    """(sweep file, out, stdout, status) of the tiny sweep."""
    return sweep_run[0]


def test_each_block_builds_its_env_once(sweep_run: tuple[tuple[Path, Path, str, int], Builds]) -> None:
    # built while the sweep is validated, then trained on; no GIF env, as the sweep makes no artifacts
    assert sweep_run[1] == {name: [(16, True)] * 2 for name in ALGORITHMS}


def test_every_block_has_a_run_folder(swept) -> None:
    _, out, _, status = swept
    assert status == 0
    for task in (SPREAD, REFERENCE):
        for algorithm in ALGORITHMS:
            run_dir = out / task / algorithm
            for name in ("config.yaml", "metrics.csv", "summary.json"):
                assert (run_dir / name).is_file(), run_dir / name
            assert (run_dir / "checkpoints" / str(UPDATES) / "meta.json").is_file()
            saved = yaml.safe_load((run_dir / "config.yaml").read_text())
            assert saved["algorithm"] == algorithm and saved["config"]["env_id"] == task
            assert [point["lr"] for point in saved["grid"]] == [0.001, 0.003]
            assert saved["num_seeds"] == 2
            table = metric_rows(run_dir)
            assert len(table) == UPDATES * 2 * 2  # every update x grid point x seed, from one program
            assert {(r["grid_index"], r["seed"]) for r in table} == {("0", "0"), ("0", "1"), ("1", "0"),
                                                                     ("1", "1")}


def test_report_compares_every_block(swept) -> None:
    _, out, printed, _ = swept
    report = out / "report" / "report.md"
    assert f"report: {report}" in printed
    text = report.read_text()
    for algorithm in ALGORITHMS:
        for lr in ("0.001", "0.003"):
            assert f"{algorithm} (lr={lr})" in text
    for task in (SPREAD, REFERENCE):
        for algorithm in ALGORITHMS:
            assert f"`{out / task / algorithm}`" in text
    for figure in ("aggregates.png", "sample_efficiency.png", "performance_profile.png"):
        assert (out / "report" / figure).is_file()
    # and every block's runs in marl-eval's layout: env family -> task -> algorithm -> seed
    layout = json.loads((out / "report" / "marl_eval.json").read_text())
    for task in (SPREAD, REFERENCE):
        for algorithm in ALGORITHMS:
            for lr in ("0.001", "0.003"):
                assert set(layout["mpe"][task][f"{algorithm} (lr={lr})"]) == {"seed_0", "seed_1"}


def test_rerun_skips_finished_blocks(swept) -> None:
    sweep_file, out, _, _ = swept
    written = {p: p.stat().st_mtime_ns for p in out.glob("*/*/*")
               if p.name in ("metrics.csv", "summary.json")}
    assert len(written) == 8
    printed = io.StringIO()
    result = run_sweep(sweep_file, out=out, stream=printed)
    assert not result.trained and len(result.reused) == 4
    assert printed.getvalue().count("already done, skipped") == 4
    assert {p: p.stat().st_mtime_ns for p in written} == written
    assert result.report == out / "report" / "report.md" and result.report.is_file()


def test_interrupted_blocks_resume_or_restart(swept, tmp_path: Path) -> None:
    sweep_file, out, _, _ = swept
    copied = tmp_path / "out"
    shutil.copytree(out, copied)
    (copied / SPREAD / "ippo" / "summary.json").unlink()  # stopped after its last checkpoint
    (copied / SPREAD / "mappo" / "summary.json").unlink()  # stopped before any checkpoint
    shutil.rmtree(copied / SPREAD / "mappo" / "checkpoints")
    plan = plan_sweep(load_sweep(sweep_file, out=copied))
    status = {block.name: (block.status, block.start_update) for block in plan.blocks}
    assert status == {f"{SPREAD}/ippo": ("resume", UPDATES), f"{SPREAD}/mappo": ("restart", 0),
                      f"{REFERENCE}/ippo": ("done", UPDATES), f"{REFERENCE}/mappo": ("done", UPDATES)}
    assert plan.blocks[0].experiment.resume == copied / SPREAD / "ippo"
    assert f"resume from update {UPDATES}" in format_plan(plan)


def test_changed_sweep_never_overwrites_results(swept, tmp_path: Path) -> None:
    _, out, _, _ = swept
    changed = write_sweep(tmp_path / "changed.yaml", hparams={"lr": [0.001, 0.01]})
    with pytest.raises(ConfigError, match="already holds a different experiment") as error:
        plan_sweep(load_sweep(changed, out=out))
    assert "grid" in str(error.value) and f"block {SPREAD}/ippo" in str(error.value)


def test_a_bad_last_block_fails_before_anything_trains(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # A typo in the last algorithm entry.
    typo = write_sweep(tmp_path / "typo.yaml", algorithms={"ippo": {}, "mappo": {"hparams": {"lrr": 0.01}}})
    with pytest.raises(ConfigError, match=r"algorithms\.mappo\.hparams: unknown HParams field.*'lrr' "
                                          r"\(did you mean 'lr'\?\)"):
        run_sweep(typo, out=out)
    # A value only the last block's env rejects: simple_reference takes no num_agents.
    bad_value = write_sweep(tmp_path / "kwargs.yaml", algorithms={
        "ippo": {}, "mappo": {"config": {"env_kwargs": {"num_agents": 3}}}})
    with pytest.raises(ConfigError) as error:
        run_sweep(bad_value, out=out)
    message = str(error.value)
    assert f"block {REFERENCE}/mappo" in message and "num_agents" in message
    assert "algorithms.mappo.config.env_kwargs" in message and "skip:" in message
    assert not out.exists()


@pytest.mark.parametrize(("changes", "expected"), [
    ({"taks": [SPREAD]}, r"unknown key\(s\) 'taks' \(did you mean 'tasks'\?\)"),
    ({"tasks": [SPREAD, "MPE_simple_sprad_v3"]}, r"tasks\[1\]: .*MPE_simple_spread_v3"),
    ({"algorithms": {"ipo": {}}}, r"algorithms\.ipo: unknown baseline 'ipo' \(did you mean 'ippo'\?\)"),
    ({"algorithms": {"ippo": {"hparam": {}}}}, r"did you mean 'hparams'\?"),
    ({"config": {"num_envs": [16, 32]}}, r"config\.num_envs: Config fields are static"),
    ({"config": {"env_id": SPREAD}}, r"config\.env_id: the env of each block comes from `tasks`"),
    ({"hparams": {"lr": []}}, r"hparams\.lr: an empty list sweeps nothing"),
    # the values themselves, by the runner's one check (config.check_values), before any block is built
    ({"hparams": {"lr": [0.01, True]}}, r"hparams\.lr: expected float, got True"),
    ({"config": {"num_envs": "many"}}, r"config\.num_envs: expected int, got 'many'"),
    ({"algorithms": {"ippo": {"config": {"recurrent": "maybe"}}}},
     r"algorithms\.ippo\.config\.recurrent: expected bool"),
    ({"seeds": 0}, r"seeds: expected an integer >= 1"),
    ({"skip": [{"task": SPREAD, "algorithm": "mapo"}]}, r"skip\[0\]\.algorithm: 'mapo'.*'mappo'"),
    ({"report": {"final_fraction": 2}}, r"report\.final_fraction: expected a number in \(0\.0, 1\.0\]"),
    ({"wandb": "on"}, r"wandb: expected one of"),
])
def test_schema_errors_name_the_key(tmp_path: Path, changes: dict[str, Any], expected: str) -> None:
    path = write_sweep(tmp_path / "bad.yaml", **changes)
    with pytest.raises(ConfigError, match=expected) as error:
        load_sweep(path)
    assert str(error.value).startswith(str(path))


def test_skip_leaves_incompatible_pairs_out(tmp_path: Path) -> None:
    algorithms = {"ippo": {}, "ippo_4": {"baseline": "ippo", "config": {"env_kwargs": {"num_agents": 4}}}}
    with pytest.raises(ConfigError, match=f"block {REFERENCE}/ippo_4"):
        plan_sweep(load_sweep(sweep_dict(algorithms=algorithms), out=tmp_path))
    plan = plan_sweep(load_sweep(sweep_dict(algorithms=algorithms,
                                            skip=[{"task": REFERENCE, "algorithm": "ippo_4"}]), out=tmp_path))
    assert [b.name for b in plan.blocks] == [f"{SPREAD}/ippo", f"{SPREAD}/ippo_4", f"{REFERENCE}/ippo"]
    assert plan.skipped == ((REFERENCE, "ippo_4"),)
    spread_4 = plan.blocks[1].experiment
    assert spread_4.algorithm == "ippo" and spread_4.config.env_kwargs == {"num_agents": 4}
    assert spread_4.run_dir == tmp_path / SPREAD / "ippo_4"
    assert "skip (listed)" in format_plan(plan)


def test_blocks_are_train_command_lines(tmp_path: Path) -> None:
    """Shared settings, entry settings (which win), presets and booleans reach the experiment."""
    data = sweep_dict(algorithms={"ippo": {"config": {"num_envs": 8, "recurrent": True},
                                           "hparams": {"ent_coef": [0.0, 0.01]}}})
    plan = plan_sweep(load_sweep(data, out=tmp_path))
    spread, reference = (b.experiment for b in plan.blocks)
    assert spread.config.num_envs == 8 and spread.config.recurrent and spread.config.hidden_sizes == (32,)
    assert [(p.lr, p.ent_coef) for p in spread.grid] == [(0.001, 0.0), (0.001, 0.01), (0.003, 0.0),
                                                          (0.003, 0.01)]
    assert spread.preset == f"ippo_{SPREAD}" and reference.preset is None  # the default preset applies
    assert spread.grid[0].clip_eps == 0.2 and spread.wandb == "disabled" and not spread.progress
    assert spread.seed == 0 and spread.num_seeds == 2


def test_dry_run_trains_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli_main(["sweep", str(write_sweep(tmp_path / "tiny.yaml")), "--out", str(out), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    for task in (SPREAD, REFERENCE):
        for algorithm in ALGORITHMS:
            assert f"{task}/{algorithm}" in printed
    assert "4 to train as 4 compiled program(s)" in printed and "lr=[0.001, 0.003]" in printed
    assert not out.exists()
    assert cli_main(["sweep", str(write_sweep(tmp_path / "bad.yaml", seeds=-1)), "--dry-run"]) == 2
    assert "seeds: expected an integer >= 1" in capsys.readouterr().err


def test_script_and_example_sweep(tmp_path: Path) -> None:
    """scripts/sweep.py is the same entry point; the example sweep file is valid."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "sweep.py"),
                           str(REPO / "baselines" / "configs" / "sweeps" / "mpe_small.yaml"),
                           "--out", str(out), "--dry-run"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "4 to train as 4 compiled program(s)" in done.stdout
    assert not out.exists()


def test_pairs_that_parse_but_cannot_train_fail_at_planning(tmp_path: Path) -> None:
    """param_sharing=all cannot merge speaker_listener's two Box action spaces: found by building the
    trainer, before anything compiles."""
    algorithms = {"ippo": {"config": {"param_sharing": "all", "env_kwargs": {"continuous_actions": True}}}}
    data = sweep_dict(tasks=[SPREAD, "MPE_simple_speaker_listener_v4"], algorithms=algorithms)
    with pytest.raises(ConfigError, match="block MPE_simple_speaker_listener_v4/ippo: ippo cannot train on "
                                          "MPE_simple_speaker_listener_v4: FlattenGroups"):
        plan_sweep(load_sweep(data, out=tmp_path))


def test_a_failing_block_stops_the_sweep_unless_keep_going(swept, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import jaxmarl_suite.pipeline as pipeline

    sweep_file, out, _, _ = swept
    copied = tmp_path / "out"
    shutil.copytree(out, copied)
    (copied / SPREAD / "mappo" / "summary.json").unlink()  # the one block left to train

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "run_experiment", broken)
    printed = io.StringIO()
    with pytest.raises(RuntimeError, match="boom"):
        run_sweep(sweep_file, out=copied, stream=printed)
    assert f"{SPREAD}/mappo: failed; the finished blocks are kept" in printed.getvalue()
    result = run_sweep(sweep_file, out=copied, keep_going=True, stream=io.StringIO())
    assert [block.name for block, _ in result.failed] == [f"{SPREAD}/mappo"] and len(result.reused) == 3
    assert result.report is not None and f"{SPREAD}/mappo" not in result.report.read_text()


def test_a_rerun_sweep_prints_the_reports_notes(swept, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block is done, so a re-run trains nothing and writes the report again; its notes (one added
    here, the tiny sweep's report has none of its own) reach the console as `report`'s do."""
    from jaxmarl_suite import pipeline

    sweep_file, out, _, _ = swept
    real = pipeline.run_report

    def with_a_note(*args: Any, **kwargs: Any) -> Any:
        output = real(*args, **kwargs)
        output.notes.append("`runs/x` and `runs/y` both ran ippo; counted twice")
        return output

    monkeypatch.setattr(pipeline, "run_report", with_a_note)
    printed = io.StringIO()
    result = pipeline.run_sweep(sweep_file, out=out, stream=printed)
    assert result.trained == [] and len(result.reused) == 4
    assert "note: runs/x and runs/y both ran ippo; counted twice" in printed.getvalue()
