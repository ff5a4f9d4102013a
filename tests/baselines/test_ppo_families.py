"""IPPO, MAPPO, HAPPO and MAT build on the first env of every built-in family: their update traces with the
env's spaces (shapes only, nothing compiles), so a new family that breaks IPPO or MAPPO fails by default.
HAPPO's and MAT's traces (about 2-3 s per family each) run under ``slow`` to keep the default suite in its
budget; their own files' tests compile them on MPE by default."""

from __future__ import annotations

import jax
import pytest
from env_cases import first_of_each_family

from jaxmarl_suite.training.runner.config import baseline_module


@pytest.mark.parametrize("env_id", first_of_each_family())
@pytest.mark.parametrize("name", ["ippo", "mappo", pytest.param("happo", marks=pytest.mark.slow),
                                  pytest.param("mat", marks=pytest.mark.slow)])
def test_ppo_baselines_build_on_every_family(name: str, env_id: str) -> None:
    module = baseline_module(name)
    config = module.Config(env_id=env_id, num_envs=4, num_steps=8, total_timesteps=4 * 8 * 2,
                           num_minibatches=2, hidden_sizes=(16,))
    trainer = module.make_trainer(config, module.make_env(config))
    runner = jax.eval_shape(trainer.init, jax.random.PRNGKey(0), module.HParams())
    runner, metrics = jax.eval_shape(trainer.update, runner, module.HParams())
    assert metrics["total_loss"].shape == () and metrics["return_mean"].shape == ()
