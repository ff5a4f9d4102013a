"""The experiment runner: run-folder contract, checkpoints and bit-identical resume, grids x seeds,
configuration errors before compiling, and the eval/render commands."""

from __future__ import annotations

import csv
import json
import shutil
import socket
import subprocess
from pathlib import Path

import jax
import numpy as np
import pytest
from PIL import Image

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.pipeline import train
from jaxmarl_suite.training.runner import config as config_module
from jaxmarl_suite.training.runner.checkpoint import (
    CheckpointError,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from jaxmarl_suite.training.runner.config import (
    ConfigError,
    available_presets,
    baseline_module,
    load_preset,
    parse_experiment,
)
from jaxmarl_suite.training.runner.experiment import (
    batched_trainer,
    checkpoint_identity,
    run_experiment,
    run_hparams,
    run_keys,
)
from jaxmarl_suite.training.runner.logger import FIRST_COLUMNS, resolve_wandb_mode

TINY = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2", "--update-epochs", "2",
        "--hidden-sizes", "[16]", "--wandb", "disabled", "--no-progress"]
"""A run small enough to compile and train in seconds: 64 env steps per update."""


def experiment(run_dir: Path, *extra: str):
    return parse_experiment("ippo", ippo.Config, ippo.HParams, [*TINY, "--run-dir", str(run_dir), *extra])


def rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def without_wall(table: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in table]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory):
    """8 updates, 2 seeds x 2 learning rates, a checkpoint every 4 updates, with the plot and GIF."""
    run_dir = tmp_path_factory.mktemp("runs") / "full"
    exp = experiment(run_dir, "--seeds", "2", "--lr", "0.001", "0.003", "--total-timesteps", "512",
                     "--checkpoint-every", "4")
    return exp, train(ippo, exp)


def test_run_folder_contract(full_run) -> None:
    exp, result = full_run
    run_dir = exp.run_dir
    for name in ("config.yaml", "metrics.csv", "summary.json", "returns.png", "policy.gif"):
        assert (run_dir / name).is_file(), name
    assert [int(p.name) for p in list_checkpoints(run_dir)] == [4, 8]
    table = rows(run_dir)
    assert list(table[0])[: len(FIRST_COLUMNS)] == list(FIRST_COLUMNS)
    assert len(table) == 8 * 2 * 2  # every update, seed and grid point
    assert {(r["seed"], r["grid_index"]) for r in table} == {("0", "0"), ("1", "0"), ("0", "1"), ("1", "1")}
    assert table[-1]["env_steps"] == str(8 * 64)
    assert all(float(r["wall_s"]) > 0 for r in table)
    # The CSV holds what the compiled loop returned, per grid point and seed.
    logged = np.array([[float(r["return_mean"]) for r in table if r["update"] == "8" and r["grid_index"] == g]
                       for g in "01"])
    np.testing.assert_allclose(logged, result.metrics["return_mean"][-1], rtol=1e-5)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert np.array(summary["final_return_mean"]).shape == (2, 2)


def test_grid_point_equals_its_own_run(full_run, tmp_path: Path) -> None:
    """Grid point 1 (lr 0.003) of the 2x2 program trains exactly like a run of lr 0.003 alone."""
    _, result = full_run
    alone = run_experiment(ippo, experiment(tmp_path / "alone", "--seeds", "2", "--lr", "0.003",
                                            "--total-timesteps", "512"))
    for name in ("return_mean", "total_loss", "entropy"):
        np.testing.assert_allclose(alone.metrics[name][:, 0], result.metrics[name][:, 1],
                                   rtol=1e-5, atol=1e-6)
    # ... and the two learning rates really train differently.
    assert not np.allclose(result.metrics["total_loss"][:, 0], result.metrics["total_loss"][:, 1])


def interrupted_copy(run_dir: Path, copy: Path) -> Path:
    """A copy of the 8-update run as if its process died during updates 5..8, right after logging
    update 4: checkpoint 8 and the summary gone, ``metrics.csv`` cut after update 4."""
    shutil.copytree(run_dir, copy)
    shutil.rmtree(copy / "checkpoints" / "8")
    (copy / "summary.json").unlink()
    logged = rows(copy)
    with (copy / "metrics.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(logged[0]))
        writer.writeheader()
        writer.writerows(r for r in logged if int(r["update"]) <= 4)
    return copy


def resume(run_dir: Path):
    return run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams,
                                                 ["--resume", str(run_dir), "--wandb", "disabled",
                                                  "--no-progress"]))


def test_resume_is_bit_identical(full_run, tmp_path: Path) -> None:
    """Interrupt a copy of the run after its first checkpoint, resume it, and compare every array."""
    exp, result = full_run
    copy = interrupted_copy(exp.run_dir, tmp_path / "copy")
    resumed = resume(copy)
    for a, b in zip(jax.tree.leaves(result.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert without_wall(rows(copy)) == without_wall(rows(exp.run_dir))
    # The summary covers the whole run, not just the resumed updates 5..8.
    summaries = [json.loads((d / "summary.json").read_text()) for d in (copy, exp.run_dir)]
    for summary in summaries:
        summary.pop("wall_s")
        assert summary["updates_logged"] == 8
    assert summaries[0] == summaries[1]


def test_a_state_with_an_empty_leaf_checkpoints_and_resumes(tmp_path: Path) -> None:
    """MPE_simple_v3 has no communication channel: its ``comm`` state is ``[..., 0, ...]``, which orbax
    refuses to store. The checkpoint leaves it out and rebuilds it, and resuming stays bit-identical."""
    args = ["--env", "MPE_simple_v3", "--total-timesteps", "256", "--checkpoint-every", "2"]
    full = run_experiment(ippo, experiment(tmp_path / "full", *args))
    assert any(0 in np.shape(leaf) for leaf in jax.tree.leaves(full.state))
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "full", copy)
    shutil.rmtree(copy / "checkpoints" / "4")
    resumed = run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams,
                                                    ["--resume", str(copy), "--wandb", "disabled",
                                                     "--no-progress"]))
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_checkpoint_of_a_runner_that_carried_the_whole_timestep_resumes(full_run, tmp_path: Path) -> None:
    """Runners once carried the whole last ``TimeStep``; now only what the next step reads of it
    (``kit.envs.observation``). A checkpoint written then holds every leaf of today's state at the same
    path, plus rewards, done flags, masks and episode statistics under ``.timestep``: a run resumes from it
    bit for bit. A checkpoint that lacks a leaf of today's state, holds one in another shape, holds an extra
    leaf elsewhere, or whose ``meta.json`` lists a leaf its store lacks, is still refused."""
    exp, result = full_run
    copy = interrupted_copy(exp.run_dir, tmp_path / "copy")
    checkpoint = list_checkpoints(copy)[-1]
    env = ippo.make_env(exp.config)
    init, _ = batched_trainer(ippo.make_trainer(exp.config, env), 2, 2)
    keys, hparams = run_keys(0, 2, 2), run_hparams(exp.grid, 2)
    abstract = jax.eval_shape(init, keys, hparams)
    identity = checkpoint_identity(exp)
    state, meta = load_checkpoint(checkpoint, abstract, identity)
    meta = {k: v for k, v in meta.items() if k not in ("format", "leaves")}
    _, whole = jax.vmap(env.reset)(keys)  # a TimeStep of the runner's shapes, with every field
    whole = whole._replace(obs=state.timestep.obs, info={**whole.info, **state.timestep.info})
    older = state.replace(timestep=whole)
    assert len(jax.tree.leaves(older)) > len(jax.tree.leaves(state)) + 5

    save_checkpoint(copy, older, meta)  # checkpoint 4 now holds what an older runner held
    resumed = resume(copy)
    for a, b in zip(jax.tree.leaves(result.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    def refused(name: str, state: object, match: str) -> None:
        with pytest.raises(CheckpointError, match=match):
            load_checkpoint(save_checkpoint(tmp_path / name, state, meta), abstract, identity)

    lacking = older.replace(timestep=whole._replace(obs={}))
    refused("lacking", lacking, r"differently shaped.*\.timestep\.obs.*vs None")
    narrower = {g: o[..., :-1] for g, o in whole.obs.items()}
    refused("reshaped", older.replace(timestep=whole._replace(obs=narrower)), "differently shaped")
    refused("extra", older.replace(hidden={**older.hidden, "extra": older.hidden["agents"]}),
            r"differently shaped.*None vs \[\"\.hidden\['extra'\]")
    # meta.json lists the observations, the array store lacks them
    saved = save_checkpoint(tmp_path / "listed", lacking, meta)
    listed = json.loads((saved / "meta.json").read_text())
    listed["leaves"] += [spec for spec in json.loads((checkpoint / "meta.json").read_text())["leaves"]
                         if spec[0].startswith(".timestep.obs")]
    (saved / "meta.json").write_text(json.dumps(listed))
    with pytest.raises(CheckpointError, match="could not be read"):
        load_checkpoint(saved, abstract, identity)


def test_checkpoint_from_another_config_or_corrupt_fails_clearly(full_run, tmp_path: Path) -> None:
    exp, _ = full_run
    checkpoint = list_checkpoints(exp.run_dir)[-1]
    trainer = ippo.make_trainer(exp.config, ippo.make_env(exp.config))
    init, _ = batched_trainer(trainer, 2, 2)
    abstract = jax.eval_shape(init, run_keys(0, 2, 2), run_hparams(exp.grid, 2))
    other = experiment(tmp_path / "other", "--seeds", "2", "--lr", "0.001", "0.003", "--num-envs", "8")
    with pytest.raises(CheckpointError, match="num_envs"):
        load_checkpoint(checkpoint, abstract, checkpoint_identity(other))

    damaged = tmp_path / "damaged"
    shutil.copytree(checkpoint, damaged)
    for path in (damaged / "state").rglob("*"):
        if path.is_file() and path.stat().st_size > 100:
            path.write_bytes(b"\0" * path.stat().st_size)
    with pytest.raises(CheckpointError, match="could not be read"):
        load_checkpoint(damaged, abstract, checkpoint_identity(exp))
    meta = json.loads((checkpoint / "meta.json").read_text())
    (damaged / "meta.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "format"}))
    with pytest.raises(CheckpointError, match="format 1"):
        load_checkpoint(damaged, abstract, checkpoint_identity(exp))
    (damaged / "meta.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(damaged, abstract, checkpoint_identity(exp))


def test_eval_and_render_commands(full_run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp, _ = full_run
    assert cli_main(["eval", str(exp.run_dir), "--episodes", "20"]) == 0
    out = capsys.readouterr().out
    # every grid point and seed, evaluated in one program, then each grid point's mean over its seeds
    runs = [line for line in out.splitlines() if ", seed " in line]
    assert len(runs) == 4 and all("20 episodes: mean per-agent return" in line and "95% CI" in line
                                  for line in runs)
    assert sum("mean over 2 seeds" in line for line in out.splitlines()) == 2
    assert "grid point 1 (lr=0.003), seed 1:" in runs[3]
    # ... each the same as evaluating that run alone (a different run gives different returns)
    assert cli_main(["eval", str(exp.run_dir), "--episodes", "20", "--grid-index", "1",
                     "--seed-index", "1"]) == 0
    alone = [line for line in capsys.readouterr().out.splitlines() if ", seed " in line]
    assert alone == runs[3:]
    assert runs[0].split("seed 0: ")[1] != runs[3].split("seed 1: ")[1]
    # --grid-index alone: that grid point's seeds and their mean; --seed-index alone: that seed everywhere
    assert cli_main(["eval", str(exp.run_dir), "--episodes", "20", "--grid-point", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if ", seed " in line] == runs[2:]
    assert any("grid point 1 (lr=0.003): mean over 2 seeds" in line for line in lines)
    assert cli_main(["eval", str(exp.run_dir), "--episodes", "20", "--seed-index", "0"]) == 0
    assert [line for line in capsys.readouterr().out.splitlines() if ", seed " in line] == runs[0::2]
    assert cli_main(["eval", str(exp.run_dir), "--seed-index", "5"]) == 2
    assert "seed_index: must be in [0, 1], got 5" in capsys.readouterr().err
    gif = tmp_path / "policy.gif"
    checkpoint = str(list_checkpoints(exp.run_dir)[0])
    assert cli_main(["render", checkpoint, "--out", str(gif), "--size", "200", "--fps", "4"]) == 0
    with Image.open(gif) as image:  # MPE's square frame, its side now 200 px, under its caption
        assert image.width == 200 and image.height > 200
        for index in range(image.n_frames):
            image.seek(index)
            assert image.info["duration"] == 250
    assert cli_main(["eval", str(tmp_path)]) == 2  # not a run folder: a clear error, status 2
    assert "not inside a run folder" in capsys.readouterr().err


def test_help_shows_every_field_docstring(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_experiment("ippo", ippo.Config, ippo.HParams, ["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag, doc in [("--num-envs", "Envs stepped in parallel per run"), ("--lr", "Adam learning rate"),
                      ("--total-timesteps", "Env steps per run"), ("--update-epochs", "Passes over each")]:
        assert flag in text and doc in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-minibatches", "3"], r"num_minibatches: must divide the 64 sequences.*allowed values"),
        (["--env", "MPE_simple_sprad_v3"], r"env_id: .*MPE_simple_spread_v3"),
        (["--lr", "-1"], r"lr: must be in \(0.0, 1.0\]"),
        (["--gamma", "1.5"], r"gamma: must be in \[0.0, 1.0\]"),
        (["--num-envs", "0"], r"num_envs: must be an integer >= 1"),
        (["--activation", "sigmoid"], r"activation: must be one of"),
        (["--total-timesteps", "10"], r"total_timesteps: must be at least"),
        (["--num-envs", "four"], r"num_envs: expected int"),
    ],
)
def test_bad_config_fails_before_compiling(argv: list[str], message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=message):
        experiment(tmp_path, *argv)


def test_recurrent_with_a_feed_forward_preset_is_refused(tmp_path: Path) -> None:
    preset = tmp_path / "ff.yaml"
    preset.write_text("algorithm: ippo\nconfig: {recurrent: false}\npinned: [recurrent]\n")
    with pytest.raises(ConfigError, match="recurrent: preset 'ff' pins recurrent=False"):
        experiment(tmp_path, "--preset", str(preset), "--recurrent")


@pytest.mark.parametrize("algorithm", ["ippo", "mappo"])
def test_a_pinned_preset_names_the_preset_that_has_the_value(algorithm: str, tmp_path: Path) -> None:
    """Hanabi's default presets pin a feed-forward net; asking for --recurrent names the GRU preset."""
    module = baseline_module(algorithm)
    with pytest.raises(ConfigError) as caught:
        parse_experiment(algorithm, module.Config, module.HParams,
                         [*TINY, "--run-dir", str(tmp_path), "--env", "Hanabi", "--recurrent"])
    assert str(caught.value).startswith(f"recurrent: preset '{algorithm}_Hanabi' pins recurrent=False")
    assert str(caught.value).endswith(f"Use --preset {algorithm}_Hanabi_rnn, which sets recurrent=True.")


def test_the_pinned_preset_search_reads_the_preset_files(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The preset offered is found among the files, by algorithm, env (aliases count) and value; with none,
    the message says so."""
    folder = tmp_path / "configs"
    folder.mkdir()
    presets = {
        "ippo_Toy": "algorithm: ippo\nconfig: {env_id: MPE_simple_spread_v3, recurrent: false}\n"
                    "pinned: [recurrent]\n",
        "ippo_Toy_gru": "algorithm: ippo\nconfig: {env_id: simple_spread_v3, recurrent: true}\n",
        "ippo_Other_gru": "algorithm: ippo\nconfig: {env_id: MPE_simple_tag_v3, recurrent: true}\n",
        "mappo_Toy_gru": "algorithm: mappo\nconfig: {env_id: MPE_simple_spread_v3, recurrent: true}\n",
        "ippo_Toy_wide": "algorithm: ippo\nconfig: {env_id: MPE_simple_spread_v3, hidden_sizes: [256]}\n",
    }
    for name, text in presets.items():
        (folder / f"{name}.yaml").write_text(text)
    monkeypatch.setattr(config_module, "preset_dirs", lambda: [folder])
    with pytest.raises(ConfigError, match=r"Use --preset ippo_Toy_gru, which sets recurrent=True\.$"):
        experiment(tmp_path, "--preset", "ippo_Toy", "--recurrent")
    (folder / "ippo_Toy_gru.yaml").unlink()
    with pytest.raises(ConfigError, match=r"No ippo preset for MPE_simple_spread_v3 sets recurrent=True: "
                                          r"pass --preset with your own YAML\.$"):
        experiment(tmp_path, "--preset", "ippo_Toy", "--recurrent")


@pytest.mark.parametrize("words", [["64,32"], ["64", "32"], ["[64, 32]"], ["64,", "32"]])
def test_hidden_sizes_take_commas_or_spaces(words: list[str], tmp_path: Path) -> None:
    assert experiment(tmp_path, "--hidden-sizes", *words).config.hidden_sizes == (64, 32)


def test_no_hidden_layers_is_an_empty_list_the_config_may_allow(tmp_path: Path) -> None:
    """[] (JaxMARL's recurrent Q-network: dense, GRU, head) reads as no layers, from YAML and the command
    line; PPO's validate refuses it, a replay learner with a GRU takes it."""
    from jaxmarl_suite.baselines import iql
    from jaxmarl_suite.training.runner.config import build

    assert build(iql.Config, {"hidden_sizes": [], "recurrent": True}).hidden_sizes == ()
    assert parse_experiment("iql", iql.Config, iql.HParams,
                            ["--hidden-sizes", "[]", "--recurrent", "--run-dir", str(tmp_path)]
                            ).config.hidden_sizes == ()
    with pytest.raises(ConfigError, match="hidden_sizes: must be one or more positive widths"):
        experiment(tmp_path, "--hidden-sizes", "[]")


@pytest.mark.parametrize("words", [["64x32"], ["64.5"], ["wide"]])
def test_bad_hidden_sizes_show_the_forms_taken(words: list[str], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^hidden_sizes: expected one or more integers, as 64,64 or 64 64, "
                                          rf"got '{words[0]}'$"):
        experiment(tmp_path, "--hidden-sizes", *words)


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines  # no usage block
    return lines[0]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--learning-rate", "1e-3"], "error: unknown flag --learning-rate; did you mean --lr or "),
        (["--total-timestep", "4096"],
         "error: unknown flag --total-timestep; did you mean --total-timesteps?"),
        (["--ent-coeff=0.1"], "error: unknown flag --ent-coeff; did you mean --ent-coef"),
    ],
)
def test_an_unknown_flag_is_one_line_naming_the_closest(flags: list[str], expected: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["train", "ippo", *flags])
    assert exit_info.value.code == 2
    line = _one_error_line(capsys)
    assert line.startswith(expected) and line.endswith("(see jaxmarl-suite train ippo --help)")


def test_the_main_commands_answer_a_typo_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["trian", "ippo"])
    assert exit_info.value.code == 2
    assert _one_error_line(capsys).startswith("error: command: unknown choice 'trian'; did you mean 'train'?")
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["list", "--famly", "mpe"])
    assert exit_info.value.code == 2
    line = _one_error_line(capsys)
    assert line == "error: unknown flag --famly; did you mean --family? (see jaxmarl-suite list --help)"


def test_wandb_starts_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")  # the environment alone does not start it
    assert resolve_wandb_mode(None) == "disabled"
    assert resolve_wandb_mode("offline") == "offline"
    assert resolve_wandb_mode("online") == "online"  # only when the user asks
    with pytest.raises(ValueError, match="wandb"):
        resolve_wandb_mode("sometimes")


def test_train_command_runs_mappo_end_to_end_without_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``jaxmarl-suite train mappo ...`` with the default flags (no --wandb) through the CLI: the run folder
    contract holds, eval works on it, and nothing connects a socket, looks a name up or starts a process
    (wandb-core) on the way."""
    attempts: list[str] = []

    def refuse(what: str):
        def call(*args, **kwargs):
            attempts.append(f"{what}{args[:2]!r}")
            raise OSError(f"test: {what} is not allowed in a default run")
        return call

    for name in ("getaddrinfo", "gethostbyname", "create_connection"):
        monkeypatch.setattr(socket, name, refuse(f"socket.{name}"))
    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("socket.connect_ex"))
    monkeypatch.setattr(subprocess, "Popen", refuse("subprocess.Popen"))
    monkeypatch.setenv("WANDB_MODE", "offline")
    run_dir = tmp_path / "mappo"
    flags = [f for f in TINY if f not in ("--wandb", "disabled")]
    assert cli_main(["train", "mappo", *flags, "--total-timesteps", "256", "--run-dir", str(run_dir)]) == 0
    assert attempts == []
    for name in ("config.yaml", "metrics.csv", "returns.png", "policy.gif"):
        assert (run_dir / name).is_file(), name
    assert not (run_dir / "wandb").exists()
    assert len(rows(run_dir)) == 4
    assert cli_main(["eval", str(run_dir), "--episodes", "4", "--deterministic"]) == 0
    assert attempts == []


def test_train_command_rejects_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli_main(["train", "ipo"]) == 2
    assert "unknown baseline 'ipo'" in capsys.readouterr().err
    assert cli_main(["train", "ippo", *TINY, "--num-minibatches", "3", "--run-dir", str(tmp_path)]) == 2
    assert "num_minibatches" in capsys.readouterr().err


@pytest.mark.parametrize("name", available_presets())
def test_every_preset_loads_and_validates(name: str, tmp_path: Path) -> None:
    algorithm = load_preset(name)["algorithm"]
    module = baseline_module(algorithm)
    exp = parse_experiment(algorithm, module.Config, module.HParams,
                           ["--preset", name, "--run-dir", str(tmp_path)])
    assert exp.preset == name and exp.config.num_updates >= 1


def test_a_checkpoint_whose_feed_forward_nets_carried_a_width_one_state_resumes(full_run,
                                                                                   tmp_path: Path) -> None:
    """Feed-forward nets once carried a recurrent state of width 1 (zeros no layer read); now they carry one
    of width 0, which stores nothing. A checkpoint written then resumes bit for bit; a state of another
    width under ``.hidden`` is still refused."""
    exp, result = full_run
    assert not exp.config.recurrent and all(h.shape[-1] == 0 for h in jax.tree.leaves(result.state.hidden))
    copy = interrupted_copy(exp.run_dir, tmp_path / "copy")
    checkpoint = list_checkpoints(copy)[-1]
    env = ippo.make_env(exp.config)
    init, _ = batched_trainer(ippo.make_trainer(exp.config, env), 2, 2)
    abstract = jax.eval_shape(init, run_keys(0, 2, 2), run_hparams(exp.grid, 2))
    identity = checkpoint_identity(exp)
    state, meta = load_checkpoint(checkpoint, abstract, identity)
    meta = {k: v for k, v in meta.items() if k not in ("format", "leaves")}

    def widened(width: int) -> object:
        return state.replace(hidden={g: np.zeros((*h.shape[:-1], width), np.float32)
                                     for g, h in state.hidden.items()})

    save_checkpoint(copy, widened(1), meta)  # the last checkpoint now holds what the older runner held
    resumed = resume(copy)
    for a, b in zip(jax.tree.leaves(result.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(CheckpointError, match=r"differently shaped.*\.hidden"):
        load_checkpoint(save_checkpoint(tmp_path / "two", widened(2), meta), abstract, identity)
