"""Live parity of our simple_speaker_listener against mpe2's simple_speaker_listener_v4: what is
particular to the scenario.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``: both envs take the same
random actions for whole episodes (seeds 0..11, discrete and continuous actions; continuous ones are
drawn in ``[-0.25, 1.25]`` so both sides clip). Every step compares observations, rewards, terminations
and truncations:

- **Injected** (``ATOL = 1e-5``): mpe2's world, goal included, is copied into our state before each step.
- **Free-running**, at the same ``ATOL``: nothing collides in this scenario, so there are no stiff
  contact forces to amplify float32 rounding; the worst free-running error observed is 1e-6 (injected: 9e-7).

The table's negative controls falsify the goal, a physics constant, an observation and a reward.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mpe_scenario_harness import (
    ATOL,
    INJECTED,
    MODES,
    Control,
    Harness,
    jaxmarl_space_sizes,
    make_harness,
    perturbed,
    reward_off,
    run_episode,
    set_obs,
)

from jaxmarl_suite.environments.mpe import SimpleSpeakerListener
from jaxmarl_suite.environments.mpe.parity import state_from_mpe2

REFERENCE = "mpe2.simple_speaker_listener_v4"
reference = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")
pytest.importorskip("pettingzoo.utils.env_logger").EnvLogger.suppress_output()  # clipping warnings

SEEDS = range(12)
CONTINUOUS = [False, True]
CONTINUOUS_IDS = ["discrete", "continuous"]
LANDMARK_COLORS = np.array([[0.65, 0.15, 0.15], [0.15, 0.65, 0.15], [0.15, 0.15, 0.65]], np.float32)


def goal(h: Harness) -> int:
    """The goal mpe2 drew, which the injected state must name."""
    state, _ = state_from_mpe2(h.ref, h.env)
    world = h.ref.unwrapped.world
    index = int(state.extra["goal"])
    assert world.agents[0].goal_b is world.landmarks[index]
    return index


def next_goal(state: Any) -> Any:
    return state.replace(extra={"goal": (state.extra["goal"] + 1) % 3})


CONFIGS = {"discrete": {"continuous_actions": False}, "continuous": {"continuous_actions": True}}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {"seeds": SEEDS, "reset_probe": goal, "resets_cover": lambda goals: set(goals) == {0, 1, 2}}
CONTROLS = dict.fromkeys(
    CONFIGS,
    (
        Control("wrong-goal", r"obs\[speaker\]: differs", {"perturb_state": next_goal}),
        *perturbed(r"obs\[listener\]: differs", MODES, damping=0.26),
        Control(
            "message", r"obs\[listener\]", {"tamper": set_obs("listener", slice(8, None), 0.0)}, INJECTED
        ),
        reward_off("speaker", 2 * ATOL, INJECTED),
    ),
)


def test_perturbed_reference_is_followed() -> None:
    """World constants are read from the reference, so a perturbed mpe2 still matches step by step."""
    h = make_harness(reference, continuous_actions=True, max_cycles=9)
    world = h.ref.unwrapped.world
    world.damping, world.dt = 0.4, 0.07
    world.agents[1].accel = 3.0
    for mode in ("injected", "free"):
        run_episode(h, 3, mode, ATOL)


def test_our_reset_distribution() -> None:
    """Our own reset (JAX's PRNG): uniform goals, positions in ``[-1, 1]``, at rest, goal-coloured obs."""
    env = SimpleSpeakerListener()
    states, timesteps = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 3000))
    goals = np.asarray(states.extra["goal"])
    assert goals.dtype == np.int32
    np.testing.assert_allclose(np.bincount(goals, minlength=3) / len(goals), 1 / 3, atol=0.04)
    assert np.all(np.abs(np.asarray(states.pos)) <= 1.0) and not np.any(np.asarray(states.vel))
    np.testing.assert_array_equal(timesteps.obs["speaker"][:, 0], LANDMARK_COLORS[goals])
    colors = jax.vmap(env.entity_colors)(states)
    np.testing.assert_allclose(colors[:, 1], LANDMARK_COLORS[goals] + 0.45, rtol=1e-6)


@pytest.mark.parametrize("continuous", CONTINUOUS, ids=CONTINUOUS_IDS)
def test_spaces_match_jaxmarl(continuous: bool) -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    env = SimpleSpeakerListener(continuous_actions=continuous)
    action_type = "Continuous" if continuous else "Discrete"
    theirs = jaxmarl.make("MPE_simple_speaker_listener_v4", action_type=action_type)
    assert jaxmarl_space_sizes(env, theirs) == []


def test_unsupported_reference_raises() -> None:
    ref = reference.parallel_env()
    ref.reset(seed=0)
    ref.unwrapped.world.agents[0].goal_a = ref.unwrapped.world.agents[0]
    with pytest.raises(ValueError, match="goal agent"):
        state_from_mpe2(ref)


def test_extra_state_is_per_env() -> None:
    """The injected state has the same structure as our reset's, so our step never retraces on it."""
    h = make_harness(reference)
    h.ref.reset(seed=0)
    injected, _ = state_from_mpe2(h.ref, h.env)
    ours, _ = h.env.reset(jax.random.key(0))
    assert jax.tree.structure(injected) == jax.tree.structure(ours)
    for a, b in zip(jax.tree.leaves(injected), jax.tree.leaves(ours), strict=True):
        assert (a.shape, a.dtype) == (b.shape, jnp.asarray(b).dtype)
