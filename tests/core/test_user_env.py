"""The public testing kit accepts a correct user env and rejects broken ones (it raises, never returns)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from toy_envs import TwoTeams

from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.testing import (
    ConformanceError,
    check_determinism,
    check_env,
    check_jit_vmap,
    check_observations_in_space,
)


def test_per_env_user_env_passes_every_check() -> None:
    assert check_env(TwoTeams()) is None


class NonDeterministic(TwoTeams):
    """Ignores the key it is given and reuses a global counter: breaks determinism."""

    calls = 0

    def reset(self, key, params=None):
        NonDeterministic.calls += 1
        return super().reset(jax.random.PRNGKey(NonDeterministic.calls), params)


class WrongObsDtype(TwoTeams):
    def _timestep(self, state, reward, params):
        timestep = super()._timestep(state, reward, params)
        return timestep._replace(obs={**timestep.obs, "blue": timestep.obs["blue"].astype(jnp.float16)})


class ShapeChangesOnStep(TwoTeams):
    """Returns a red observation with an extra entry after reset: shapes must never change."""

    def step(self, key, state, actions, params=None):
        state, timestep = super().step(key, state, actions, params)
        red = jnp.concatenate([timestep.obs["red"], timestep.obs["red"][:, :1]], axis=-1)
        return state, timestep._replace(obs={**timestep.obs, "red": red})


@pytest.mark.parametrize(
    ("broken", "check"),
    [
        (NonDeterministic, check_determinism),
        (WrongObsDtype, check_observations_in_space),
        (ShapeChangesOnStep, check_jit_vmap),
    ],
)
def test_kit_rejects_broken_envs(broken, check) -> None:
    with pytest.raises(ConformanceError):
        check(broken())


def test_vecenv_of_vecenv_is_refused() -> None:
    with pytest.raises(TypeError, match="already a VecEnv"):
        VecEnv(VecEnv(TwoTeams(), 2), 2)
    with pytest.raises(TypeError, match="per-env"):
        check_env(VecEnv(TwoTeams(), 2))
