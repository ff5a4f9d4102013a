"""Live parity of our simple_crypto against mpe2's simple_crypto_v3: what is particular to the scenario.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``: both envs take the same
random actions for whole episodes (seeds 0..11, which cover all four goal/key combinations; discrete
and continuous actions). Continuous messages are drawn in ``[-0.25, 1.25]`` so both sides clip, and
each agent stays silent (an all-zero message) with probability ``SILENCE``, which exercises mpe2's rule
that a silent agent is not scored. Every step compares observations, rewards, terminations and
truncations, injected (mpe2's world, goal and key included, copied into our state before each step) and
free-running, both at ``ATOL = 1e-5``: nothing moves, so there is no drift. Worst observed: 2.7e-7
(rewards; observations are exact).

The table's negative controls falsify the goal and the key and tamper with an observation and a reward;
the one here drops the silence rule.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mpe_scenario_harness import (
    ATOL,
    INJECTED,
    Control,
    Harness,
    jaxmarl_space_sizes,
    make_harness,
    reward_off,
    run_episode,
    set_obs,
)

from jaxmarl_suite.core.types import GroupDict
from jaxmarl_suite.environments.mpe import SimpleCrypto
from jaxmarl_suite.environments.mpe.parity import make_matching_env, state_from_mpe2
from jaxmarl_suite.environments.mpe.physics import MPEParams, MPEState

REFERENCE = "mpe2.simple_crypto_v3"
reference = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")
pytest.importorskip("pettingzoo.utils.env_logger").EnvLogger.suppress_output()  # clipping warnings

SILENCE = 0.3
"""Probability that an agent sends an all-zero continuous message in a step."""
SEEDS = range(12)
CONTINUOUS = [False, True]
CONTINUOUS_IDS = ["discrete", "continuous"]


def goal_and_key(h: Harness) -> tuple[int, int]:
    """The goal and key mpe2 drew, which the injected state must name (one-hots and zeros: exact)."""
    state, _ = state_from_mpe2(h.ref, h.env)
    world = h.ref.unwrapped.world
    goal, key = int(state.extra["goal"]), int(state.extra["key"])
    assert world.agents[0].goal_a is world.landmarks[goal]
    assert world.agents[2].key is world.landmarks[key].color
    return goal, key


def flip(name: str) -> Any:
    return lambda state: state.replace(extra={**state.extra, name: 1 - state.extra[name]})


CONFIGS = {"discrete": {"continuous_actions": False}, "continuous": {"continuous_actions": True}}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {
    "seeds": SEEDS,
    "reset_atol": 0.0,  # one-hots and zeros: exact
    "episode": {"silence_prob": SILENCE},
    "reset_probe": goal_and_key,
    "resets_cover": lambda drawn: set(drawn) == {(0, 0), (0, 1), (1, 0), (1, 1)},
}
CONTROLS = dict.fromkeys(
    CONFIGS,
    (
        Control("wrong-goal", r"obs\[agents\]: differs", {"perturb_state": flip("goal")}),
        Control("wrong-key", r"obs\[agents\]: differs", {"perturb_state": flip("key")}),
        Control(
            "message", r"obs\[adversaries\]", {"tamper": set_obs("adversaries", slice(None), 0.0)}, INJECTED
        ),
        reward_off("adversaries", 2 * ATOL, INJECTED),
    ),
)


def test_our_reset_distribution() -> None:
    """Our own reset (JAX's PRNG): independent uniform goal and key, and the observations they imply."""
    env = SimpleCrypto()
    states, timesteps = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 4000))
    goal, key = np.asarray(states.extra["goal"]), np.asarray(states.extra["key"])
    assert goal.dtype == np.int32 and key.dtype == np.int32
    np.testing.assert_allclose(np.bincount(goal * 2 + key, minlength=4) / len(goal), 0.25, atol=0.03)
    one_hot = np.eye(4, dtype=np.float32)
    alice, bob = timesteps.obs["agents"][:, 1], timesteps.obs["agents"][:, 0]
    np.testing.assert_array_equal(alice, np.concatenate([one_hot[goal], one_hot[key]], axis=1))
    np.testing.assert_array_equal(bob, np.concatenate([one_hot[key], np.zeros((len(key), 4))], axis=1))
    colors = jax.vmap(env.entity_colors)(states)
    np.testing.assert_array_equal(colors[:, 1], one_hot[goal, :3])


@pytest.mark.parametrize("continuous", CONTINUOUS, ids=CONTINUOUS_IDS)
def test_spaces_match_jaxmarl(continuous: bool) -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    env = SimpleCrypto(continuous_actions=continuous)
    action_type = "Continuous" if continuous else "Discrete"
    assert jaxmarl_space_sizes(env, jaxmarl.make("MPE_simple_crypto_v3", action_type=action_type)) == []


class ScoresSilence(SimpleCrypto):
    """Our env without mpe2's rule that an all-zero message is not scored."""

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        goal = self._one_hot(state.extra["goal"])
        eve, bob = (jnp.sum(jnp.square(state.comm[i] - goal), axis=0) for i in (0, 1))
        return {"adversaries": -eve[None], "agents": jnp.stack([eve - bob, eve - bob])}


def test_negative_control_silence_is_scored() -> None:
    """Silent steps occur on these seeds and matter: scoring them breaks parity."""
    wrong = ScoresSilence(continuous_actions=True)
    h = dataclasses.replace(
        make_harness(reference, continuous_actions=True), env=wrong, step=jax.jit(wrong.step)
    )
    with pytest.raises(AssertionError, match=r"reward\[(adversaries|agents)\]: differs"):
        run_episode(h, 0, "injected", ATOL, silence_prob=SILENCE)


def test_unsupported_references_raise() -> None:
    ref = reference.parallel_env()
    ref.reset(seed=0)
    world = ref.unwrapped.world
    world.agents[1].goal_a = world.landmarks[1 - world.landmarks.index(world.agents[0].goal_a)]
    with pytest.raises(ValueError, match="different goals"):
        state_from_mpe2(ref)
    ref.reset(seed=0)
    world.agents[2].key = np.array([0.0, 0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="key"):
        make_matching_env(ref)
