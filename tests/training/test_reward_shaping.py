"""Annealed reward shaping (``kit.envs``): the weight falls linearly from 1 to 0 and the env's per-agent
shaped reward is added to the reward with it."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.errors import IncompatibleEnvError
from jaxmarl_suite.training.kit.envs import shaped_reward_weight, training_reward


def test_weight_falls_from_one_to_zero_over_the_horizon() -> None:
    steps = jnp.array([0, 250, 1000, 5000])
    np.testing.assert_allclose(shaped_reward_weight(steps, 1000), [1.0, 0.75, 0.0, 0.0])
    assert float(shaped_reward_weight(jnp.int32(0), 0)) == 0.0


def _timestep(reward, info) -> TimeStep:
    return TimeStep(obs={}, reward={"agents": reward}, terminated={}, truncated={}, action_mask={}, info=info)


def test_shaped_reward_is_added_with_its_weight_and_only_when_the_env_has_one() -> None:
    reward = jnp.array([[20.0, 20.0], [0.0, 0.0]])
    shaped = jnp.array([[3.0, 0.0], [0.0, 5.0]])
    got = training_reward(_timestep(reward, {"shaped_reward": shaped}), "agents", jnp.float32(0.5))
    np.testing.assert_allclose(got, [[21.5, 20.0], [0.0, 2.5]])
    np.testing.assert_array_equal(training_reward(_timestep(reward, {}), "agents", jnp.float32(0.5)), reward)
    with pytest.raises(IncompatibleEnvError, match="one shaped reward per agent"):
        training_reward(_timestep(reward, {"shaped_reward": shaped[:, :1]}), "agents", jnp.float32(1.0))
