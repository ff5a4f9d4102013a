"""A run folder never mixes or loses a run: used folders are refused, ``--overwrite`` clears them, resume
checks every flag that cannot change and the rows it builds on, the summary covers the whole run, Ctrl-C
ends with one line, and the progress line shows elapsed time and an ETA."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.training.runner.checkpoint import list_checkpoints
from jaxmarl_suite.training.runner.config import ConfigError, parse_experiment, run_record
from jaxmarl_suite.training.runner.experiment import JAX_CALLBACK_LOGGER, load_run, run_experiment
from jaxmarl_suite.training.runner.logger import MetricsLogger, final_score
from jaxmarl_suite.training.runner.run_folder import write_summary
from jaxmarl_suite.training.runner.sweep import load_sweep

TINY = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2", "--update-epochs", "2",
        "--hidden-sizes", "[16]", "--wandb", "disabled", "--no-progress"]
"""64 env steps per update."""


def parse(*argv: str):
    return parse_experiment("ippo", ippo.Config, ippo.HParams, [*TINY, *argv])


def rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def done_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run: 4 updates (256 steps), 2 seeds, lr 0.001, checkpoints at updates 2 and 4."""
    run_dir = tmp_path_factory.mktemp("runs") / "done"
    run_experiment(ippo, parse("--run-dir", str(run_dir), "--seeds", "2", "--lr", "0.001",
                               "--total-timesteps", "256", "--checkpoint-every", "2"))
    return run_dir


@pytest.fixture
def no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the run gets as far as building its trainer (which precedes any compiling)."""
    def refuse(*args: object) -> None:
        raise AssertionError("the run went on to build its trainer")
    monkeypatch.setattr(ippo, "make_trainer", refuse)


def test_a_used_run_folder_is_refused_before_compiling(done_run: Path, no_compiling: None) -> None:
    before = sorted(p.name for p in done_run.rglob("*"))
    with pytest.raises(ConfigError) as error:
        run_experiment(ippo, parse("--run-dir", str(done_run), "--total-timesteps", "128"))
    message = str(error.value)
    for way_on in (str(done_run), f"--resume {done_run}", "another --run-dir", "--overwrite"):
        assert way_on in message
    assert sorted(p.name for p in done_run.rglob("*")) == before  # nothing touched


def test_overwrite_clears_only_run_folders(tmp_path: Path, no_compiling: None) -> None:
    stranger = tmp_path / "notes"
    stranger.mkdir()
    (stranger / "thesis.tex").write_text("keep me")
    with pytest.raises(ConfigError, match="holds no jaxmarl-suite run"):
        run_experiment(ippo, parse("--run-dir", str(stranger), "--overwrite"))
    assert (stranger / "thesis.tex").read_text() == "keep me"


def test_an_unwritable_run_folder_fails_with_one_line(tmp_path: Path, no_compiling: None) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=r"^run_dir: cannot write to .*a_file/run") as error:
        run_experiment(ippo, parse("--run-dir", str(blocker / "run")))
    assert "\n" not in str(error.value)


def test_overwrite_replaces_the_old_run_whole(done_run: Path, tmp_path: Path) -> None:
    """The old run's checkpoints go with it, so pruning keeps the new ones and eval loads the new weights."""
    run_dir = tmp_path / "reused"
    shutil.copytree(done_run, run_dir)
    (run_dir / "returns.png").write_bytes(b"old plot")
    run_experiment(ippo, parse("--run-dir", str(run_dir), "--overwrite", "--lr", "0.003",
                               "--total-timesteps", "128", "--checkpoint-every", "1"))
    assert [int(p.name) for p in list_checkpoints(run_dir)] == [1, 2]
    assert not (run_dir / "returns.png").exists()
    assert {r["update"] for r in rows(run_dir)} == {"1", "2"} and len(rows(run_dir)) == 2
    _, experiment, _, meta = load_run(run_dir)
    assert meta["update"] == 2 and experiment.grid[0].lr == pytest.approx(0.003)
    assert experiment.num_seeds == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "3"], r"\['--seeds'\] differ"),
        (["--seed", "7"], r"\['--seed'\] differ"),
        (["--env", "MPE_simple_tag_v3"], r"\['env_id'\] differ"),
        (["--num-envs", "8"], r"\['num_envs'\] differ"),
        (["--lr", "0.1"], r"\['lr'\] differ"),
        (["--preset", "ippo_MPE_simple_spread_v3_fast"], r"\['--preset'\] differ"),
        (["--total-timesteps", "256"], r"already at 256 steps"),
        (["--total-timesteps", "128"], r"already at 256 steps"),
        (["--overwrite"], r"pick one"),
    ],
)
def test_resume_refuses_what_cannot_change(done_run: Path, argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_experiment("ippo", ippo.Config, ippo.HParams, ["--resume", str(done_run), *argv])


def test_resume_refuses_another_run_dir(done_run: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\['--run-dir'\] differ"):
        parse_experiment("ippo", ippo.Config, ippo.HParams,
                         ["--resume", str(done_run), "--run-dir", str(tmp_path / "elsewhere")])
    # the same folder, however it is spelled, and the flags it already has are fine
    same = parse_experiment("ippo", ippo.Config, ippo.HParams,
                            ["--resume", str(done_run / "checkpoints"), "--run-dir", str(done_run),
                             "--seeds", "2", "--seed", "0", "--num-envs", "4", "--total-timesteps", "512",
                             "--extend", "hold"])
    assert same.config.total_timesteps == 512 and same.num_seeds == 2


def test_resume_with_missing_rows_fails_and_keeps_what_was_logged(done_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(done_run, copy)
    kept = [r for r in rows(copy) if int(r["update"]) <= 3]  # update 4, which checkpoint 4 covers, is cut
    with (copy / "metrics.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(kept[0]))
        writer.writeheader()
        writer.writerows(kept)
    text = (copy / "metrics.csv").read_text()
    with pytest.raises(ConfigError, match=r"has 0 of the 2 rows of update 4.*checkpoint at update 4"):
        parse_experiment("ippo", ippo.Config, ippo.HParams,
                         ["--resume", str(copy), "--total-timesteps", "512", "--extend", "hold"])
    assert (copy / "metrics.csv").read_text() == text
    (copy / "metrics.csv").unlink()
    with pytest.raises(ConfigError, match=r"metrics.csv is missing"):
        parse_experiment("ippo", ippo.Config, ippo.HParams,
                         ["--resume", str(copy), "--total-timesteps", "512", "--extend", "hold"])


def test_summary_scores_the_whole_metrics_file(tmp_path: Path) -> None:
    """20 logged updates: the final score is the mean over the last 10% (updates 19 and 20), skipping an
    update in which no episode finished; the values are written by hand here."""
    experiment = parse("--run-dir", str(tmp_path), "--seeds", "2")
    returns = {(19, 0): 5.0, (20, 0): 7.0, (19, 1): float("nan"), (20, 1): -1.0}
    with (tmp_path / "metrics.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["update", "env_steps", "seed", "grid_index", "return_mean", "wall_s"])
        for update in range(1, 21):
            for seed in (0, 1):
                writer.writerow([update, update * 64, seed, 0, returns.get((update, seed), 100.0), 1.0])
    summary = json.loads(write_summary(tmp_path, run_record(experiment), 3.0).read_text())
    assert summary["final_return_mean"] == [[6.0, -1.0]]
    assert summary["updates_logged"] == 20 and summary["final_fraction"] == 0.1
    assert final_score([1.0, 2.0, 3.0, 4.0], 0.5) == 3.5


def test_progress_line_shows_elapsed_and_eta_and_redraws_cleanly() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    logger = MetricsLogger(Path("unused"), ["return_mean"], batch_size=64, num_updates=10, num_seeds=1,
                           grid_size=1, log_every=1, stream=stream, enabled=False)
    logger.started -= 30.0  # 30 s ago, and 5 of 10 updates done after 20 s of compute
    logger.compute_started = time.perf_counter() - 20.0
    logger._report(5, 320, -3.0, last=False)
    line = stream.getvalue()
    assert line.startswith("\r\x1b[K[")  # back to the start and erase what a longer line left
    assert "elapsed 0:30" in line and "eta 0:20" in line


def test_train_help_lists_the_algorithms(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    for text in ("ippo", "mappo", "presets: mappo_", "mappo_SMAX_3m", "examples:",
                 "jaxmarl-suite train ippo --env"):
        assert text in out
    with pytest.raises(SystemExit):
        cli_main(["train", "mappo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    # every section's whole docstring, not its first line cut mid-sentence
    assert "shared with the other PPO baselines" in text and "team_returns" in text


def test_sweep_files_resolve_by_name() -> None:
    assert load_sweep("mpe_small").source.endswith(os.path.join("sweeps", "mpe_small.yaml"))
    with pytest.raises(ConfigError, match=r"closest: \['mpe_small'"):
        load_sweep("mpe_smal")


def test_ctrl_c_ends_with_one_line_naming_the_checkpoint(tmp_path: Path) -> None:
    run_dir = tmp_path / "long"
    # PYTHONFAULTHANDLER: if the run ever outlives its Ctrl-C, SIGABRT makes it print every thread's stack
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONFAULTHANDLER": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "jaxmarl_suite.cli", "train", "ippo", *TINY, "--run-dir", str(run_dir),
         "--total-timesteps", "10000000", "--checkpoint-every", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 240
        while not list_checkpoints(run_dir) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        assert list_checkpoints(run_dir), "no checkpoint was written"
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            _, err = process.communicate(timeout=30)
            pytest.fail(f"the run outlived its Ctrl-C by 60 s; its threads when aborted:\n{err[-12000:]}")
    finally:
        # a run that outlives a failed test (10M steps) would take a core from the rest of the suite
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"interrupted; last checkpoint {run_dir / 'checkpoints'}")
    assert last.endswith(f"Resume with: jaxmarl-suite train ippo --resume {run_dir}")
    assert "Traceback" not in err and "Event loop is closed" not in err


def test_ctrl_c_inside_the_logging_callback_is_a_keyboard_interrupt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """On the CPU the logging callback runs on the main thread, so Ctrl-C can land inside it; XLA reports
    that as a JaxRuntimeError (the test above then exited with status 1 and a traceback, about once in a
    suite run on a loaded machine). ``run_experiment`` raises it again as the KeyboardInterrupt that the
    CLI turns into its one line, and jax's report of the callback does not reach the log."""
    original = MetricsLogger.on_update

    def interrupted(self: MetricsLogger, update: object, metrics: dict) -> None:
        if int(np.asarray(update)) == 3:  # in the second chunk, after update 2's checkpoint
            raise KeyboardInterrupt
        original(self, update, metrics)

    monkeypatch.setattr(MetricsLogger, "on_update", interrupted)
    run_dir = tmp_path / "run"
    experiment = parse_experiment("ippo", ippo.Config, ippo.HParams, [
        *TINY, "--total-timesteps", str(4 * 16 * 4), "--checkpoint-every", "2", "--run-dir", str(run_dir)])
    with pytest.raises(KeyboardInterrupt):
        run_experiment(ippo, experiment)
    assert [p.name for p in list_checkpoints(run_dir)] == ["2"]
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    assert not logging.getLogger(JAX_CALLBACK_LOGGER).filters  # the run's filter left with it


def test_a_ctrl_c_during_a_checkpoint_save_waits_for_the_save(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Ctrl-C lands inside the save of update 2's checkpoint: the save finishes (its ``meta.json`` is
    written, so it is the newest complete checkpoint), and only then does the run stop."""
    from jaxmarl_suite.training.runner import experiment as experiment_module

    original = experiment_module.save_checkpoint
    calls = []

    def save_with_a_ctrl_c(run_dir: Path, state: object, meta: dict, **kwargs: Any) -> Path:
        calls.append(meta["update"])
        if meta["update"] == 2:
            os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode: inside the save
            time.sleep(0.05)
        return original(run_dir, state, meta, **kwargs)

    monkeypatch.setattr(experiment_module, "save_checkpoint", save_with_a_ctrl_c)
    handler = signal.getsignal(signal.SIGINT)
    run_dir = tmp_path / "run"
    experiment = parse_experiment("ippo", ippo.Config, ippo.HParams, [
        *TINY, "--total-timesteps", str(5 * 16 * 4), "--checkpoint-every", "1", "--run-dir", str(run_dir)])
    with pytest.raises(KeyboardInterrupt):
        run_experiment(ippo, experiment)
    assert calls == [1, 2]
    assert [p.name for p in list_checkpoints(run_dir)] == ["1", "2"]
    assert (run_dir / "checkpoints" / "2" / "meta.json").is_file()
    assert signal.getsignal(signal.SIGINT) is handler  # the handler is put back
