"""The public testing kit accepts a correct user env and rejects broken ones (it raises, never returns).

The checks read one compiled rollout (``collect_rollout``), computed inside the program as per-step flags;
each broken env below breaks one rule, and the check for that rule must raise on it, which proves the flag
it reads is computed and read.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from toy_envs import TwoTeams

import jaxmarl_suite
from jaxmarl_suite.core.spaces import Box, Space
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.testing import (
    ConformanceError,
    check_action_masks,
    check_auto_reset,
    check_batched_matches_vmap,
    check_determinism,
    check_env,
    check_finite,
    check_jit_vmap,
    check_observations_in_space,
    check_render,
    check_spaces,
    check_time_limit,
    collect_rollout,
)


def test_per_env_user_env_passes_every_check_on_one_rollout() -> None:
    env = TwoTeams()
    rollout = collect_rollout(env, batch_size=4, num_steps=20)
    assert rollout.record["done"].shape == (20, 4) and rollout.record["done"].any()
    assert check_env(env, rollout) is None
    with pytest.raises(ValueError, match="another env"):
        check_finite(TwoTeams(), rollout)
    with pytest.raises(ValueError, match="even num_steps"):
        collect_rollout(env, num_steps=7)


class NoGroups(TwoTeams):
    def __init__(self) -> None:
        self.groups = {}


class NonDeterministic(TwoTeams):
    """Ignores the key it is given and reuses a global counter: breaks determinism."""

    calls = 0

    def reset(self, key, params=None):
        NonDeterministic.calls += 1
        return super().reset(jax.random.PRNGKey(NonDeterministic.calls), params)


class HostNoise(TwoTeams):
    """Adds noise drawn on the host at run time: the same key gives a different run."""

    rng = np.random.default_rng()

    def step(self, key, state, actions, params=None):
        state, timestep = super().step(key, state, actions, params)
        shape = jax.ShapeDtypeStruct(timestep.reward["red"].shape, jnp.float32)
        noise = jax.pure_callback(lambda: HostNoise.rng.random(shape.shape, np.float32), shape)
        return state, timestep._replace(reward={**timestep.reward, "red": timestep.reward["red"] + noise})


class WrongObsDtype(TwoTeams):
    def _timestep(self, state, reward, params):
        timestep = super()._timestep(state, reward, params)
        return timestep._replace(obs={**timestep.obs, "blue": timestep.obs["blue"].astype(jnp.float16)})


class ObsLeaveTheirSpace(TwoTeams):
    """Red's space says ``[-2, 2]``, but red's observations grow with its actions past it."""

    def observation_space(self, group: str) -> Space:
        return Box(-2.0, 2.0, (3,)) if group == "red" else super().observation_space(group)


class ShapeChangesOnStep(TwoTeams):
    """Returns a red observation with an extra entry after reset: shapes must never change."""

    def step(self, key, state, actions, params=None):
        state, timestep = super().step(key, state, actions, params)
        red = jnp.concatenate([timestep.obs["red"], timestep.obs["red"][:, :1]], axis=-1)
        return state, timestep._replace(obs={**timestep.obs, "red": red})


class WeakTypedStep(TwoTeams):
    """Resets its step counter to a weakly typed 0: a jitted step fed its own state would retrace."""

    def reset(self, key, params=None):
        state, timestep = super().reset(key, params)
        return state.replace(step=jnp.asarray(0)), timestep

    def step(self, key, state, actions, params=None):
        state, timestep = super().step(key, state, actions, params)
        return state.replace(step=state.step.astype(jnp.int32)), timestep


class NoLegalAction(TwoTeams):
    """Blue's mask forbids every action on odd steps."""

    def _timestep(self, state, reward, params):
        timestep = super()._timestep(state, reward, params)
        blue = timestep.action_mask["blue"] & (state.step % 2 == 0)
        return timestep._replace(action_mask={**timestep.action_mask, "blue": blue})


class ClaimsAllLegal(TwoTeams):
    """Declares every action legal, but red's mask forbids action 0 on odd steps."""

    all_actions_legal = True

    def _timestep(self, state, reward, params):
        timestep = super()._timestep(state, reward, params)
        red = timestep.action_mask["red"].at[..., 0].set(state.step % 2 == 0)
        return timestep._replace(action_mask={**timestep.action_mask, "red": red})


class NeverEnds(TwoTeams):
    """Never truncates or terminates: no episode ends."""

    def _timestep(self, state, reward, params):
        timestep = super()._timestep(state, reward, params)
        never = jax.tree.map(jnp.zeros_like, timestep.terminated)
        return timestep._replace(terminated=never, truncated=never)


class BothFlags(TwoTeams):
    """Blue is terminated as well as truncated at the time limit."""

    def _timestep(self, state, reward, params):
        timestep = super()._timestep(state, reward, params)
        return timestep._replace(terminated={**timestep.terminated, "blue": timestep.truncated["blue"]})


class EarlyTruncation(TwoTeams):
    """Truncates on step 3 as well as at the time limit."""

    def _timestep(self, state, reward, params):
        timestep = super()._timestep(state, reward, params)
        early = jax.tree.map(lambda t: t | (state.step == 3), timestep.truncated)
        return timestep._replace(truncated=early)


class NaNReward(TwoTeams):
    """Blue's reward is NaN on step 5."""

    def step(self, key, state, actions, params=None):
        state, timestep = super().step(key, state, actions, params)
        blue = jnp.where(state.step == 5, jnp.nan, timestep.reward["blue"])
        return state, timestep._replace(reward={**timestep.reward, "blue": blue})


class FlatRender(TwoTeams):
    def render(self, state: Any, params: Any = None) -> jax.Array:
        return jnp.zeros((8, 8, 3), jnp.uint8)


@pytest.mark.parametrize(
    ("broken", "check", "match"),
    [
        (NoGroups, check_spaces, r"\[spaces\] env.groups is empty"),
        (NonDeterministic, check_determinism, "same initial observations"),
        (HostNoise, check_determinism, r"same key, different digest of reward\['red'\] \(step 1, env 0\)"),
        (WrongObsDtype, check_observations_in_space, "dtype float16"),
        (ObsLeaveTheirSpace, check_observations_in_space, r"step obs\['red'\] leaves"),
        (ShapeChangesOnStep, check_jit_vmap, r"TimeStep.obs\['red'\] has shape \(16, 2, 4\)"),
        (WeakTypedStep, check_jit_vmap, r"state.step is strongly typed after step.*traced again"),
        (NoLegalAction, check_action_masks, r"some agent of 'blue' has no legal action \(step 1,"),
        (ClaimsAllLegal, check_action_masks, r"all_actions_legal is set but 'red' has an illegal action \("),
        (NeverEnds, check_auto_reset, "no episode ended within 1000 random steps"),
        (BothFlags, check_auto_reset, "an agent of 'blue' is both terminated and truncated"),
        (EarlyTruncation, check_time_limit, r"agents truncated on step 3 of an episode \(step 2, env 0\)"),
        (NaNReward, check_finite, r"non-finite values in step reward\['blue'\] \(step 5, env 0\)"),
        (FlatRender, check_render, "single flat colour"),
    ],
)
def test_kit_rejects_broken_envs(broken: type, check: Any, match: str) -> None:
    # Called alone, as a user would: the check collects its own rollout.
    with pytest.raises(ConformanceError, match=match):
        check(broken())


def test_kit_rejects_a_batch_native_path_that_differs_from_vmap() -> None:
    """A batch-native env whose batched step differs from its per-env step (the batch of 1)."""
    spread = type(jaxmarl_suite.make("MPE_simple_spread_v3"))

    class BatchDiffers(spread):
        def step_batch(self, keys, state, actions, params):
            state, timestep = super().step_batch(keys, state, actions, params)
            shift = 1e-3 * (keys.shape[0] > 1)
            return state, timestep._replace(reward={"agents": timestep.reward["agents"] + shift})

    env = BatchDiffers()
    with pytest.raises(ConformanceError, match=r"\[batched_vs_vmap\] paths disagree at timestep\['reward'\]"):
        check_batched_matches_vmap(env, collect_rollout(env, batch_size=4, num_steps=20))


def test_vecenv_of_vecenv_is_refused() -> None:
    with pytest.raises(TypeError, match="already a VecEnv"):
        VecEnv(VecEnv(TwoTeams(), 2), 2)
    with pytest.raises(TypeError, match="per-env"):
        check_env(VecEnv(TwoTeams(), 2))
