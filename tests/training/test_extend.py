"""Extending a run (``train --resume RUN --total-timesteps N``): schedules that depend on the run's length
continue as ``--extend hold|restart`` says, never jump; a run whose schedules do not depend on it extends
into exactly the longer run; a finished run resumed with nothing to add is left alone."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import shutil
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite import pipeline
from jaxmarl_suite.baselines import ippo, iql
from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.evaluation.plots import returns_figure
from jaxmarl_suite.training.kit import q, schedule
from jaxmarl_suite.training.kit.ppo import annealed_adam
from jaxmarl_suite.training.runner.config import EXTEND_MODES, ConfigError, parse_experiment
from jaxmarl_suite.training.runner.experiment import run_experiment
from jaxmarl_suite.training.runner.run_folder import read_run_config

TINY = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2", "--update-epochs", "1",
        "--hidden-sizes", "[8]", "--wandb", "disabled", "--no-progress"]
"""64 env steps per update."""


def applied_rates(knots: tuple[tuple[float, float], ...], updates: int, lr: float = 0.1) -> np.ndarray:
    """The learning rate ``annealed_adam`` applies at each of ``updates`` updates (one step each), read off
    Adam's step under a constant gradient: with bias correction m/sqrt(v) is exactly 1, so a step is -rate."""
    opt = annealed_adam(lr, 1e9, anneal_lr=True, num_updates=8, steps_per_update=1, knots=knots)
    params = jnp.zeros(())
    state = opt.init(params)
    rates = []
    for _ in range(updates):
        step, state = opt.update(jnp.ones(()), state, params)
        rates.append(-float(step))
    return np.array(rates)


def config(total: int, *extensions: tuple[int, int, str]) -> ippo.Config:
    return ippo.Config(num_envs=4, num_steps=16, total_timesteps=total, extensions=tuple(extensions))


def test_the_modes_match_the_runner_choices() -> None:
    assert schedule.EXTEND_MODES == EXTEND_MODES


def test_hold_keeps_the_old_end_and_holds_the_last_rate() -> None:
    """8 planned updates (lr 0.1 falling by 0.0125 a step), extended to 16 at update 8: the rates of the
    first 8 are the plan's, then update 7's rate, 0.0125, holds."""
    knots = schedule.schedule_knots(config(1024, (8, 512, "hold")))
    expected = [0.1, 0.0875, 0.075, 0.0625, 0.05, 0.0375, 0.025, 0.0125] + [0.0125] * 8
    np.testing.assert_allclose(applied_rates(knots, 16), expected, rtol=1e-3)


def test_restart_continues_from_the_last_rate_down_to_zero_at_the_new_end() -> None:
    """Finished at 8 of 8, extended to 16: update 8 uses update 7's rate, 0.0125, falling linearly to 0
    at update 16, so 0.0125 * (16 - u) / 8 for u = 8..15."""
    knots = schedule.schedule_knots(config(1024, (8, 512, "restart")))
    rates = applied_rates(knots, 16)
    np.testing.assert_allclose(rates[:8], [0.1 - 0.0125 * u for u in range(8)], rtol=1e-3)
    np.testing.assert_allclose(rates[8:], [0.0125 * (16 - u) / 8 for u in range(8, 16)], rtol=1e-3)


def test_restart_of_an_interrupted_run_is_continuous() -> None:
    """Stopped at update 4 of 8 and raised to 16: update 4 uses the rate it would have (0.05), which then
    falls to 0 at update 16: 0.05 * (16 - u) / 12."""
    rates = applied_rates(schedule.schedule_knots(config(1024, (4, 512, "restart"))), 16)
    np.testing.assert_allclose(rates[:4], [0.1, 0.0875, 0.075, 0.0625], rtol=1e-3)
    np.testing.assert_allclose(rates[4:], [0.05 * (16 - u) / 12 for u in range(4, 16)], rtol=1e-3)


def test_epsilon_follows_the_same_progress() -> None:
    """Epsilon 1 -> 0.1 over half of a 512-step run (8 updates of 64), restarted at update 2 and raised to
    1024 steps: at update 2 it is 1 - 0.9 * 128/256 = 0.55; its decay then ends where the progress reaches
    one half, 128/512 + (1 - 1/4) * (u - 2)/14 = 1/2, at u = 20/3; and it holds 0.1 after."""
    cfg = config(1024, (2, 512, "restart"))

    def epsilon(update: int) -> float:
        steps = schedule.schedule_env_steps(jnp.int32(update), cfg)
        return float(q.linear_epsilon(steps, 1.0, 0.1, 0.5 * cfg.total_timesteps))

    assert epsilon(2) == pytest.approx(0.55, abs=1e-6)
    assert epsilon(4) == pytest.approx(1 - 0.9 * (0.25 + 0.75 * 2 / 14) / 0.5, abs=1e-6)
    assert epsilon(7) == pytest.approx(0.1, abs=1e-6)
    # a run never extended reads plain env steps (the formula every baseline has always used)
    assert int(schedule.schedule_env_steps(jnp.int32(3), config(512))) == 3 * 64


def test_two_extensions_chain_and_an_interrupted_one_extends_again_from_the_same_update() -> None:
    """8 planned updates (lr 0.1, 0.0125 less each), held at update 8 to 12 updates (0.0125 each), then
    restarted at update 12 to 16: from 0.0125 down to 0 at 16. Then the same run extended twice at update 8
    (an extension interrupted before its first checkpoint): the second restart starts where the first
    began, from 0.0125 to 0 at update 24."""
    held_then_restarted = config(1024, (8, 512, "hold"), (12, 768, "restart"))
    expected = ([0.1 - 0.0125 * u for u in range(8)] + [0.0125] * 4
                + [0.0125 * (16 - u) / 4 for u in range(12, 16)])
    np.testing.assert_allclose(applied_rates(schedule.schedule_knots(held_then_restarted), 16), expected,
                               rtol=1e-3)
    twice = config(1536, (8, 512, "restart"), (8, 1024, "restart"))
    twice.validate()
    rates = applied_rates(schedule.schedule_knots(twice), 24)
    np.testing.assert_allclose(rates[8:], [0.0125 * (24 - u) / 16 for u in range(8, 24)], rtol=1e-3)


def test_epsilon_does_not_jump_when_the_total_is_not_a_multiple_of_the_batch() -> None:
    """1000 env steps over updates of 64 (15 updates): epsilon 1 -> 0 over the whole run reads
    update * 64 / 1000 before the extension; restarted at update 5 to 2000 steps, update 5 still reads
    5 * 64 / 1000 = 0.32 of its decay (and the learning rate update 5 / 15 of its anneal)."""
    cfg = config(2000, (5, 1000, "restart"))
    steps = schedule.schedule_env_steps(jnp.int32(5), cfg)
    assert float(q.linear_epsilon(steps, 1.0, 0.0, cfg.total_timesteps)) == pytest.approx(1 - 0.32, abs=1e-6)
    assert float(schedule.schedule_progress(5, schedule.schedule_knots(cfg))) == pytest.approx(5 / 15)
    held = config(2000, (15, 1000, "hold"))  # holds what update 14 used: 14 * 64 / 1000 of the decay
    steps = schedule.schedule_env_steps(jnp.int32(20), held)
    assert float(q.linear_epsilon(steps, 1.0, 0.0, held.total_timesteps)) == pytest.approx(0.104, abs=1e-6)


def test_bad_extension_records_are_refused() -> None:
    config(1024, (8, 512, "none")).validate()  # recorded where nothing depended on the length
    for record, message in [((8, 512, "rewind"), "mode"), ((9, 512, "hold"), "past the run's end"),
                            ((8, 2048, "hold"), "must exceed")]:
        with pytest.raises(ConfigError, match=message):
            config(1024, record).validate()
    with pytest.raises(ConfigError, match="must not decrease"):
        config(2048, (8, 512, "hold"), (4, 1024, "hold")).validate()


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An annealed 4-update IPPO run (256 env steps), finished, with its plot (no GIF), and what the command
    printed on stdout."""
    run_dir = tmp_path_factory.mktemp("extend") / "annealed"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["train", "ippo", *TINY, "--total-timesteps", "256", "--run-dir", str(run_dir),
                         "--artifacts", "plot"]) == 0
    return run_dir, out.getvalue()


@pytest.fixture(scope="module")
def finished_run(trained: tuple[Path, str]) -> Path:
    return trained[0]


def test_the_done_line_times_the_whole_command(trained: tuple[Path, str]) -> None:
    """The last line's total is start-up plus every part, and covers more than the training's own wall
    time in summary.json (compile and training, without start-up, set-up and the plot)."""
    run_dir, out = trained
    line = out.strip().splitlines()[-1]
    match = re.match(r"done in ([\d.]+) s \((.*)\); final return_mean per grid point and seed", line)
    assert match, line
    parts = dict(re.findall(r"([a-zA-Z-]+) ([\d.]+) s", match.group(2)))
    assert list(parts) == ["start-up", "set-up", "compile", "training", "plot"]  # --artifacts plot: no GIF
    assert float(match.group(1)) == pytest.approx(sum(map(float, parts.values())), abs=0.3)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert float(match.group(1)) > summary["wall_s"] and float(parts["start-up"]) > 0
    assert (run_dir / "returns.png").is_file() and not (run_dir / "policy.gif").exists()


def test_a_later_command_in_the_same_process_counts_its_start_up_from_the_one_before(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script calling the CLI several times (scripts/zsc_result.py): each command's start-up is the time
    since the previous one returned, not since the process started, which earlier lines already counted."""
    monkeypatch.setattr(pipeline, "_previous_command_end", None)
    assert pipeline.startup_seconds() > 0.5  # this process started well before this test
    assert cli_main(["train", "ippo", *TINY, "--num-minibatches", "3"]) == 2  # stops at the config check
    assert "num_minibatches" in capsys.readouterr().err
    assert pipeline._previous_command_end is not None
    assert 0 <= pipeline.startup_seconds() < 0.5
    monkeypatch.setattr(pipeline, "_previous_command_end", time.perf_counter() - 30.0)
    assert pipeline.startup_seconds() == pytest.approx(30.0, abs=0.5)


def test_artifacts_none_and_no_gif_conflicts() -> None:
    def artifacts(*flags: str) -> str:
        return parse_experiment("ippo", ippo.Config, ippo.HParams, [*TINY, *flags]).artifacts

    assert (artifacts("--artifacts", "none"), artifacts("--no-gif"), artifacts()) == ("none", "plot", "all")
    with pytest.raises(ConfigError, match="--no-gif means --artifacts plot"):
        parse_experiment("ippo", ippo.Config, ippo.HParams, [*TINY, "--no-gif", "--artifacts", "all"])


def test_raising_an_annealed_run_needs_extend(finished_run: Path) -> None:
    with pytest.raises(ConfigError, match=r"--anneal-lr.*--extend hold.*--extend restart"):
        parse_experiment("ippo", ippo.Config, ippo.HParams,
                         ["--resume", str(finished_run), "--total-timesteps", "512"])
    with pytest.raises(ConfigError, match="applies when --total-timesteps raises"):
        parse_experiment("ippo", ippo.Config, ippo.HParams,
                         ["--resume", str(finished_run), "--extend", "hold"])
    with pytest.raises(ConfigError, match="a fresh run has nothing to extend"):
        parse_experiment("ippo", ippo.Config, ippo.HParams, [*TINY, "--extend", "hold"])


def test_a_finished_run_resumed_says_so_and_changes_nothing(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in finished_run.iterdir()}
    capsys.readouterr()
    assert cli_main(["train", "ippo", "--resume", str(finished_run), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "is finished: update 4 of 4" in out and "--total-timesteps N" in out
    assert "resuming" not in err and "compiled" not in err
    assert {p.name: p.stat().st_mtime_ns for p in finished_run.iterdir()} == before
    with pytest.raises(ConfigError, match="is finished"):  # the API says so too, and trains nothing
        run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams,
                                              ["--resume", str(finished_run), "--no-progress"]))


@pytest.mark.parametrize("mode", ["hold", "restart"])
def test_extend_records_the_mode_trains_on_and_marks_the_plot(finished_run: Path, tmp_path: Path,
                                                              mode: str) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    assert cli_main(["train", "ippo", "--resume", str(run_dir), "--total-timesteps", "384", "--extend", mode,
                     "--no-progress", "--no-gif"]) == 0
    saved = read_run_config(run_dir)["config"]
    assert saved["total_timesteps"] == 384 and saved["extensions"] == [[4, 256, mode]]
    # the record reads back from config.yaml as the Config's tuple (what a later resume continues with)
    resumed = parse_experiment("ippo", ippo.Config, ippo.HParams, ["--resume", str(run_dir)])
    assert resumed.config.extensions == ((4, 256, mode),)
    with pytest.raises(ConfigError, match="already at 384 steps"):
        parse_experiment("ippo", ippo.Config, ippo.HParams,
                         ["--resume", str(run_dir), "--total-timesteps", "320"])
    summary_updates = {int(float(line.split(",")[0])) for line in
                       (run_dir / "metrics.csv").read_text().splitlines()[1:]}
    assert summary_updates == set(range(1, 7))
    assert not (run_dir / "policy.gif").exists()
    figure = returns_figure(run_dir)
    verticals = [line for line in figure.axes[0].lines if len(set(line.get_xdata())) == 1]
    assert [float(line.get_xdata()[0]) for line in verticals] == [4 * 64]
    assert mode in figure.axes[0].get_legend_handles_labels()[1][-1]


@pytest.mark.slow  # three IPPO compiles (20 s); the schedule tests above run by default
def test_a_run_without_length_schedules_extends_into_exactly_the_longer_run(tmp_path: Path) -> None:
    """No anneal: nothing depends on the total, so 4 updates extended to 8 (no --extend needed) equal a
    run planned for 8, array for array (checkpoints every 4 cut both the same way)."""
    flags = [*TINY, "--no-anneal-lr", "--checkpoint-every", "4"]  # no --extend needed: recorded as "none"
    longer = run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams,
                                                   [*flags, "--total-timesteps", "512",
                                                    "--run-dir", str(tmp_path / "long")]))
    run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams,
                                          [*flags, "--total-timesteps", "256",
                                           "--run-dir", str(tmp_path / "x")]))
    extended = run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams,
                                                     ["--resume", str(tmp_path / "x"), "--total-timesteps",
                                                      "512", "--no-progress"]))
    for a, b in zip(jax.tree.leaves(longer.state), jax.tree.leaves(extended.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_lowered_total_is_refused(finished_run: Path, tmp_path: Path) -> None:
    """A run planned for 512 steps and stopped at 256 (its config.yaml says 512) cannot be cut to 320."""
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    text = (run_dir / "config.yaml").read_text()
    (run_dir / "config.yaml").write_text(text.replace("total_timesteps: 256", "total_timesteps: 512"))
    with pytest.raises(ConfigError, match="may only be raised; the run in .* is planned for 512 env steps"):
        parse_experiment("ippo", ippo.Config, ippo.HParams,
                         ["--resume", str(run_dir), "--total-timesteps", "320"])


def test_a_finished_checkpoint_without_a_summary_resumes_to_write_it(finished_run: Path,
                                                                    tmp_path: Path) -> None:
    """Stopped after its last checkpoint but before its summary: resuming trains nothing and writes it."""
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    (run_dir / "summary.json").unlink()
    assert cli_main(["train", "ippo", "--resume", str(run_dir), "--no-progress", "--artifacts", "none"]) == 0
    written, original = (json.loads((d / "summary.json").read_text()) for d in (run_dir, finished_run))
    written.pop("wall_s"), original.pop("wall_s")
    assert written == original


def test_value_based_epsilon_is_a_length_schedule() -> None:
    grid = (iql.HParams(),)
    assert "--epsilon-decay" in iql.Config().schedules_tied_to_length(grid)
    flat = (dataclasses.replace(iql.HParams(), epsilon_start=0.05, epsilon_end=0.05),)
    assert iql.Config(anneal_lr=False).schedules_tied_to_length(flat) == []


def test_a_folder_written_before_extensions_existed_is_the_same_sweep_experiment() -> None:
    from jaxmarl_suite.training.runner.sweep import _differences

    expected = {"config": {"env_id": "X", "extensions": []}, "num_seeds": 2}
    assert _differences({"config": {"env_id": "X"}, "num_seeds": 2}, expected) == []
    extended = {"config": {"env_id": "X", "extensions": [[4, 256, "hold"]]}, "num_seeds": 2}
    assert _differences(extended, expected) == [
        "config.extensions: folder has [[4, 256, 'hold']], sweep wants []"]
