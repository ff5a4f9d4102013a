"""``jaxmarl-suite collect``: a trained policy's episodes written as an OG-MARL vault (flashbax ``Vault``),
read back by flashbax's trajectory buffer as OG-MARL's loader reads it, holding exactly the episodes the
policy plays (checked against ``evaluate_policy`` on the same key, a separate code path).

One tiny MAPPO run on MPE simple_spread (3 agents, 25-step episodes, a world state, discrete actions) is
trained once for the module."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import flashbax as fbx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from jaxmarl_suite.cli import main
from jaxmarl_suite.evaluation import datasets
from jaxmarl_suite.evaluation.datasets import collect, quality_label, read_vault
from jaxmarl_suite.evaluation.policy import evaluate_policy
from jaxmarl_suite.training.runner.config import ConfigError, baseline_module, parse_experiment
from jaxmarl_suite.training.runner.experiment import load_policy, run_experiment

SPREAD = "MPE_simple_spread_v3"
EPISODES = 6


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("collect") / "run"
    module = baseline_module("mappo")
    run_experiment(module, parse_experiment("mappo", module.Config, module.HParams, [
        "--env", SPREAD, "--num-envs", "4", "--num-steps", "8", "--total-timesteps", "64", "--hidden-sizes",
        "[16]", "--run-dir", str(folder), "--wandb", "disabled", "--no-progress", "--no-gif"]))
    return folder


@pytest.fixture(scope="module")
def vault(run_dir: Path) -> Path:
    return collect(run_dir, EPISODES, run_dir.parent / "vaults", seed=3, deterministic=True)


def test_the_vault_has_og_marl_layout_and_flashbax_reads_it(vault: Path) -> None:
    assert vault.parent.name == f"{SPREAD}.vlt" and vault.parent.parent.name == "mpe"
    assert vault.parent.parent.parent.name == "jaxmarl_suite"
    # as OG-MARL's FlashbaxReplayBuffer.populate_from_vault loads it: Vault(source/env/scenario.vlt, uid)
    state = fbx.vault.Vault(f"jaxmarl_suite/mpe/{SPREAD}.vlt", rel_dir=str(vault.parents[3]),
                            vault_uid=vault.name).read()
    steps = EPISODES * 25
    shapes = jax.tree.map(lambda x: (tuple(x.shape), str(x.dtype)), state.experience)
    assert shapes == {
        "observations": ((1, steps, 3, 18), "float32"), "actions": ((1, steps, 3), "int32"),
        "rewards": ((1, steps, 3), "float32"), "terminals": ((1, steps, 3), "float32"),
        "truncations": ((1, steps, 3), "float32"),
        "infos": {"legals": ((1, steps, 3, 5), "float32"), "state": ((1, steps, 54), "float32")}}
    buffer = fbx.make_trajectory_buffer(add_batch_size=1, sample_batch_size=4, sample_sequence_length=10,
                                        period=1, min_length_time_axis=1, max_size=10)
    batch = buffer.sample(state, jax.random.PRNGKey(0)).experience
    assert batch["observations"].shape == (4, 10, 3, 18)


def test_the_vault_holds_the_episodes_the_policy_plays(run_dir: Path, vault: Path) -> None:
    data = read_vault(vault)
    ends = np.flatnonzero(data.episode_ends)
    # simple_spread ends every episode by truncation at 25 steps; one episode per env, back to back
    np.testing.assert_array_equal(ends, np.arange(24, EPISODES * 25, 25))
    assert data.experience["terminals"].sum() == 0
    assert data.experience["truncations"].sum() == EPISODES * 3
    # the same policy and key through evaluation's own program (EpisodeStats' returns) gives the same
    module, experiment, params, _ = load_policy(run_dir)
    report = evaluate_policy(module, experiment.config, params, EPISODES, jax.random.PRNGKey(3),
                             deterministic=True)
    np.testing.assert_allclose(data.episode_returns(), report.returns, rtol=1e-5)
    np.testing.assert_allclose(data.metadata["episode_returns"], report.returns, rtol=1e-5)
    assert data.metadata["mean_return"] == pytest.approx(report.mean)
    # each step's action is what the (deterministic) policy takes on that step's observation: the
    # observation is the one the agent acted on, not the next
    env = module.make_env(experiment.config, data.num_steps)
    policy = module.make_policy(experiment.config, env)
    seen = SimpleNamespace(obs={"agents": jnp.asarray(data.experience["observations"])},
                           action_mask={"agents": jnp.asarray(data.experience["infos"]["legals"] > 0)})
    _, acted = policy.act(params, policy.init_hidden(data.num_steps), seen, jnp.ones(data.num_steps, bool),
                          jax.random.PRNGKey(0), True)
    np.testing.assert_array_equal(np.asarray(acted["agents"]), data.experience["actions"])
    assert not np.array_equal(data.experience["actions"][1:], data.experience["actions"][:-1])
    assert data.metadata["agents"] == ["agent_0", "agent_1", "agent_2"]
    assert (data.metadata["algorithm"], data.metadata["episodes"], data.metadata["steps"]) == (
        "mappo", EPISODES, EPISODES * 25)


def test_the_quality_label_comes_from_the_reference_scores(vault: Path) -> None:
    meta = read_vault(vault).metadata
    scores = yaml.safe_load((Path(datasets.__file__).parent / "reference_scores.yaml").read_text())[SPREAD]
    low, high = scores["random"], scores["strong"]
    assert meta["normalised_score"] == pytest.approx((meta["mean_return"] - low) / (high - low))
    assert quality_label(SPREAD, low + 0.8 * (high - low)) == ("Good", pytest.approx(0.8))
    assert quality_label(SPREAD, low + 0.5 * (high - low))[0] == "Medium"
    assert quality_label(SPREAD, low)[0] == "Poor"
    assert quality_label(SPREAD, high, {"num_agents": 5}) == ("Unlabelled", None)
    assert vault.name == quality_label(SPREAD, meta["mean_return"])[0]


def test_a_vault_is_never_written_twice(run_dir: Path, vault: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture) -> None:
    before = json.loads((vault / "metadata.json").read_text())
    with pytest.raises(ConfigError, match="already holds a vault; a vault never mixes two policies' data"):
        collect(run_dir, 2, run_dir.parent / "vaults", seed=3)
    assert json.loads((vault / "metadata.json").read_text()) == before
    # the command line writes one; --overwrite replaces it rather than appending (write_vault does both)
    assert main(["collect", str(run_dir), "--episodes", "2", "--out", str(tmp_path)]) == 0
    assert "wrote " in capsys.readouterr().out
    written = next(tmp_path.glob(f"jaxmarl_suite/mpe/{SPREAD}.vlt/*"))
    assert read_vault(written).num_steps == 2 * 25
    data = read_vault(written)
    one_episode = jax.tree.map(lambda x: x[None, :25], data.experience)
    name = str(written.parent.relative_to(tmp_path))
    with pytest.raises(ConfigError, match="already holds a vault"):
        datasets.write_vault(one_episode, tmp_path, name, written.name, data.metadata)
    datasets.write_vault(one_episode, tmp_path, name, written.name, data.metadata, overwrite=True)
    assert read_vault(written).num_steps == 25


def test_sampling_and_clear_errors(vault: Path) -> None:
    data = read_vault(vault)
    batch = data.sample(jax.random.PRNGKey(0), 7)
    assert batch["observations"].shape == (7, 3, 18) and batch["infos"]["state"].shape == (7, 54)
    with pytest.raises(ConfigError, match=r"is not a vault: no metadata.json \(it holds the vaults \['"):
        read_vault(vault.parent)
    fields = {"a": np.zeros((2, 1, 1, 4)), "b": np.zeros((2, 1, 2, 5))}
    with pytest.raises(ConfigError, match=r"groups differ: \{'a': \(4,\), 'b': \(5,\)\}"):
        datasets._stack_agents(fields, "observation", {"a": ("x",), "b": ("y", "z")})
