"""BC (``baselines/bc.py``): its loss by hand, learning a rule from a synthetic vault, the errors for a
dataset that does not fit, and a run through the command line. The loop from a trained policy through
``collect`` to a cloned policy scored online is ``test_bc_learning.py`` (slow)."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from offline_data import synthetic_vault

from jaxmarl_suite.cli import main
from jaxmarl_suite.evaluation.datasets import read_vault
from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.runner.config import ConfigError, baseline_module

bc = baseline_module("bc")


def test_the_loss_is_the_mean_negative_log_likelihood_summed_over_groups() -> None:
    loss, parts = bc.bc_loss({"a": jnp.log(jnp.array([[0.5, 0.25]])), "b": jnp.log(jnp.array([0.125]))})
    assert float(parts["nll_a"]) == pytest.approx(-(np.log(0.5) + np.log(0.25)) / 2)
    assert float(parts["nll_b"]) == pytest.approx(-np.log(0.125))
    assert float(loss) == pytest.approx(1.5 * np.log(2) + 3 * np.log(2))


def test_bc_learns_a_rule_the_dataset_follows(tmp_path: Path) -> None:
    """Every agent's action in the dataset is the argmax of its observation's first five entries: after
    two updates of 100 gradient steps the deterministic policy takes that action on at least 90% of the
    dataset's agent-steps (chance: 20%), and the loss fell."""
    vault = synthetic_vault(tmp_path, steps=512, actions_from_obs=True)
    config = bc.Config(dataset=str(vault), num_envs=2, num_steps=25, total_timesteps=100, grad_steps=100,
                       minibatch_size=128, hidden_sizes=(64,))
    out = jax.jit(make_train(bc, config))(jax.random.PRNGKey(0), bc.HParams(lr=3e-3))
    losses = np.asarray(out.metrics["total_loss"])
    assert losses.shape == (2,) and losses[1] < losses[0]
    data = read_vault(vault).experience
    env = bc.make_env(config)
    head, _ = bc.policy_nets(config, env)["agents"](bc.policy_params(out.runner)["agents"],
                                                    jnp.asarray(data["observations"]))
    accuracy = float(np.mean(np.asarray(head).argmax(-1) == data["actions"]))
    assert accuracy >= 0.9, accuracy
    assert np.isfinite(np.asarray(out.metrics["return_mean"])).all()  # scored online: 25-step episodes


def test_a_dataset_that_does_not_fit_is_refused(tmp_path: Path) -> None:
    spread = synthetic_vault(tmp_path / "a")
    with pytest.raises(ConfigError, match="dataset: BC trains from a dataset: pass --dataset"):
        bc.make_trainer(bc.Config(), bc.make_env(bc.Config(num_envs=2)))
    tag = bc.Config(env_id="MPE_simple_tag_v3", dataset=str(spread), num_envs=2)
    with pytest.raises(ConfigError, match=r"holds MPE_simple_spread_v3 experience, but env_id is "
                                          r"MPE_simple_tag_v3; pass --env MPE_simple_spread_v3"):
        bc.make_trainer(tag, bc.make_env(tag))
    continuous = bc.Config(dataset=str(spread), num_envs=2, env_kwargs={"continuous_actions": True})
    with pytest.raises(ConfigError, match=r"was collected with env_kwargs \{\}, but env_kwargs is"):
        bc.make_trainer(continuous, bc.make_env(continuous))
    # a vault without our metadata (OG-MARL's own) is checked by its shapes
    foreign = synthetic_vault(tmp_path / "b", metadata={"env_id": None})
    reference = bc.Config(env_id="MPE_simple_reference_v3", dataset=str(foreign), num_envs=2)
    with pytest.raises(ConfigError, match=r"has observations \(3, 18\) per step, which do not fit"):
        bc.make_trainer(reference, bc.make_env(reference))
    with pytest.raises(ConfigError, match="is not a vault: no metadata.json"):
        missing = bc.Config(dataset=str(tmp_path), num_envs=2)
        bc.make_trainer(missing, bc.make_env(missing))


def test_bc_trains_and_evaluates_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    vault = synthetic_vault(tmp_path)
    run = tmp_path / "run"
    assert main(["train", "bc", "--dataset", str(vault), "--num-envs", "2", "--num-steps", "25",
                 "--total-timesteps", "100", "--grad-steps", "5", "--run-dir", str(run), "--no-progress",
                 "--no-gif", "--seeds", "2"]) == 0
    assert (run / "summary.json").is_file() and (run / "metrics.csv").is_file()
    assert main(["eval", str(run), "--episodes", "4"]) == 0
    assert "4 episodes: mean per-agent return" in capsys.readouterr().out
