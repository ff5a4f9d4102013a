"""Live parity of our simple_speaker_listener against mpe2's simple_speaker_listener_v4, step by step.

Both envs take the same random actions for whole episodes (seeds 0..11, discrete and continuous
actions; continuous ones are drawn in ``[-0.25, 1.25]`` so both sides clip). Every step compares
observations, rewards, terminations and truncations:

- **Injected** (``ATOL = 1e-5``): mpe2's world, goal included, is copied into our state before each step.
- **Free-running**, at the same ``ATOL``: nothing collides in this scenario, so there are no stiff
  contact forces to amplify float32 rounding; the worst free-running error observed is 1e-6 (injected: 9e-7).

Negative controls falsify the goal, a physics constant, an observation and a reward, and require the
same comparison to raise.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mpe_scenario_harness import (
    Harness,
    Mode,
    jaxmarl_space_sizes,
    make_harness,
    reset_matches,
    run_episode,
)

from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.environments.mpe import SimpleSpeakerListener
from jaxmarl_suite.environments.mpe.parity import state_from_mpe2

reference = pytest.importorskip("mpe2.simple_speaker_listener_v4", reason="mpe2 is the parity reference")
pytest.importorskip("pettingzoo.utils.env_logger").EnvLogger.suppress_output()  # clipping warnings

ATOL = 1e-5
"""Tolerance on observations and rewards, injected and free-running (see the module docstring)."""
RESET_ATOL = 1e-6
"""Initial observations: only the float64 -> float32 cast of positions separates the two."""
SEEDS = range(12)
CONTINUOUS = [False, True]
CONTINUOUS_IDS = ["discrete", "continuous"]
LANDMARK_COLORS = np.array([[0.65, 0.15, 0.15], [0.15, 0.65, 0.15], [0.15, 0.15, 0.65]], np.float32)


@pytest.fixture(scope="module", params=CONTINUOUS, ids=CONTINUOUS_IDS)
def harness(request: pytest.FixtureRequest) -> Harness:
    return make_harness(reference, continuous_actions=request.param)


def test_initial_observations_and_goal_match(harness: Harness) -> None:
    goals = set()
    for seed in SEEDS:
        reset_matches(harness, seed, RESET_ATOL)
        state, _ = state_from_mpe2(harness.ref, harness.env)
        world = harness.ref.unwrapped.world
        goal = int(state.extra["goal"])
        assert world.agents[0].goal_b is world.landmarks[goal]
        goals.add(goal)
    assert goals == {0, 1, 2}, "the seeds should cover every goal landmark"


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_episode_matches_mpe2(harness: Harness, mode: Mode) -> None:
    for seed in SEEDS:
        run_episode(harness, seed, mode, ATOL)
    assert harness.traces == [1], "our step was retraced inside the episode loop"


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


# Negative controls: each must make the comparison raise, proving its assertions run.


def next_goal(state: Any) -> Any:
    return state.replace(extra={"goal": (state.extra["goal"] + 1) % 3})


def zero_speaker_message(ts: TimeStep) -> TimeStep:
    listener = ts.obs["listener"]
    return ts._replace(obs={**ts.obs, "listener": listener.at[:, 8:].set(0.0)})


def shift_speaker_reward(ts: TimeStep) -> TimeStep:
    return ts._replace(reward={**ts.reward, "speaker": ts.reward["speaker"] + 2 * ATOL})


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_wrong_goal(harness: Harness, mode: Mode) -> None:
    with pytest.raises(AssertionError, match=r"obs\[speaker\]: differs"):
        run_episode(harness, 0, mode, ATOL, perturb_state=next_goal)


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_perturbed_damping(harness: Harness, mode: Mode) -> None:
    with pytest.raises(AssertionError, match=r"obs\[listener\]: differs"):
        run_episode(harness, 0, mode, ATOL, perturb_params=lambda p: p.replace(damping=0.26))


@pytest.mark.parametrize(
    ("tamper", "match"),
    [(zero_speaker_message, r"obs\[listener\]"), (shift_speaker_reward, r"reward\[speaker\]")],
    ids=["message", "reward"],
)
def test_negative_control_tampered_output(harness: Harness, tamper: Any, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        run_episode(harness, 0, "injected", ATOL, tamper=tamper)


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
