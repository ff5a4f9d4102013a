"""IPPO, MAPPO and HAPPO build on the first env of every built-in family: their update traces with the
env's spaces (shapes only, nothing compiles), so a new family that breaks any of them fails by default."""

from __future__ import annotations

import jax
import pytest
from env_cases import first_of_each_family

from jaxmarl_suite.training.runner.config import baseline_module


@pytest.mark.parametrize("env_id", first_of_each_family())
@pytest.mark.parametrize("name", ["ippo", "mappo", "happo"])
def test_ppo_baselines_build_on_every_family(name: str, env_id: str) -> None:
    module = baseline_module(name)
    config = module.Config(env_id=env_id, num_envs=4, num_steps=8, total_timesteps=4 * 8 * 2,
                           num_minibatches=2, hidden_sizes=(16,))
    trainer = module.make_trainer(config, module.make_env(config))
    runner = jax.eval_shape(trainer.init, jax.random.PRNGKey(0), module.HParams())
    runner, metrics = jax.eval_shape(trainer.update, runner, module.HParams())
    assert metrics["total_loss"].shape == () and metrics["return_mean"].shape == ()
