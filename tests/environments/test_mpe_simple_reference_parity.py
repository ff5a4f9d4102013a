"""Live parity of our simple_reference against mpe2's simple_reference_v3, step by step.

Both envs take the same random actions for whole episodes (seeds 0..11, which cover every goal of
both agents; discrete and continuous actions, continuous ones drawn in ``[-0.25, 1.25]`` so both
sides clip; ``local_ratio`` 0.5 and 0.2). Every step compares observations, rewards, terminations and
truncations:

- **Injected** (``ATOL = 1e-5``): mpe2's world, goals included, is copied into our state before each
  step. Worst observed: 3e-7.
- **Free-running**, at the same ``ATOL``: nothing collides in this scenario, so there are no stiff
  contact forces to amplify float32 rounding. Worst observed: 5e-7.

Negative controls falsify the goals, ``local_ratio``, a physics constant, an observation and a reward,
and require the same comparison to raise.
"""

from __future__ import annotations

from typing import Any

import jax
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
from jaxmarl_suite.environments.mpe import SimpleReference
from jaxmarl_suite.environments.mpe.parity import state_from_mpe2

reference = pytest.importorskip("mpe2.simple_reference_v3", reason="mpe2 is the parity reference")
pytest.importorskip("pettingzoo.utils.env_logger").EnvLogger.suppress_output()  # clipping warnings

ATOL = 1e-5
"""Tolerance on observations and rewards, injected and free-running (see the module docstring)."""
RESET_ATOL = 1e-6
"""Initial observations: only the float64 -> float32 cast of positions separates the two."""
SEEDS = range(12)
CONFIGS = [(False, 0.5), (True, 0.5), (False, 0.2), (True, 0.2)]
CONFIG_IDS = [f"{'continuous' if c else 'discrete'}-local{r}" for c, r in CONFIGS]
LANDMARK_COLORS = np.array([[0.75, 0.25, 0.25], [0.25, 0.75, 0.25], [0.25, 0.25, 0.75]], np.float32)


@pytest.fixture(scope="module", params=CONFIGS, ids=CONFIG_IDS)
def harness(request: pytest.FixtureRequest) -> Harness:
    continuous, local_ratio = request.param
    return make_harness(reference, continuous_actions=continuous, local_ratio=local_ratio)


def test_initial_observations_and_goals_match(harness: Harness) -> None:
    goals = []
    for seed in SEEDS:
        reset_matches(harness, seed, RESET_ATOL)
        state, params = state_from_mpe2(harness.ref, harness.env)
        world = harness.ref.unwrapped.world
        goal = np.asarray(state.extra["goal"])
        assert goal.shape == (2,) and goal.dtype == np.int32
        assert all(agent.goal_b is world.landmarks[g] for agent, g in zip(world.agents, goal, strict=True))
        assert params.local_ratio == harness.ref.unwrapped.local_ratio
        goals.append(goal)
    assert all(set(column) == {0, 1, 2} for column in np.array(goals).T), "seeds should cover every goal"


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_episode_matches_mpe2(harness: Harness, mode: Mode) -> None:
    for seed in SEEDS:
        run_episode(harness, seed, mode, ATOL)
    assert harness.traces == [1], "our step was retraced inside the episode loop"


def test_perturbed_reference_is_followed() -> None:
    """World constants are read from the reference, so a perturbed mpe2 still matches step by step."""
    h = make_harness(reference, continuous_actions=False, local_ratio=1.0, max_cycles=9)
    world = h.ref.unwrapped.world
    world.damping, world.dt = 0.4, 0.07
    for agent in world.agents:
        agent.accel = 3.0
    for mode in ("injected", "free"):
        run_episode(h, 3, mode, ATOL)


def test_our_reset_distribution() -> None:
    """Our own reset (JAX's PRNG): independent uniform goals, positions in ``[-1, 1]``, goal colours."""
    env = SimpleReference()
    states, timesteps = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 3000))
    goals = np.asarray(states.extra["goal"])  # [B, 2]
    assert goals.shape == (3000, 2) and goals.dtype == np.int32
    pair_frequency = np.bincount(goals[:, 0] * 3 + goals[:, 1], minlength=9) / len(goals)
    np.testing.assert_allclose(pair_frequency, 1 / 9, atol=0.02)
    assert np.all(np.abs(np.asarray(states.pos)) <= 1.0) and not np.any(np.asarray(states.vel))
    np.testing.assert_array_equal(timesteps.obs["agents"][:, :, 8:11], LANDMARK_COLORS[goals])
    colors = jax.vmap(env.entity_colors)(states)
    np.testing.assert_array_equal(colors[:, :2], LANDMARK_COLORS[goals[:, ::-1]])


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_spaces_match_jaxmarl(continuous: bool) -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    env = SimpleReference(continuous_actions=continuous)
    action_type = "Continuous" if continuous else "Discrete"
    assert jaxmarl_space_sizes(env, jaxmarl.make("MPE_simple_reference_v3", action_type=action_type)) == []


# Negative controls: each must make the comparison raise, proving its assertions run.


def swap_goals(state: Any) -> Any:
    return state.replace(extra={"goal": state.extra["goal"][::-1]})


def zero_heard_message(ts: TimeStep) -> TimeStep:
    return ts._replace(obs={"agents": ts.obs["agents"].at[:, 11:].set(0.0)})


def shift_reward(ts: TimeStep) -> TimeStep:
    return ts._replace(reward={"agents": ts.reward["agents"] + 2 * ATOL})


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_swapped_goals(harness: Harness, mode: Mode) -> None:
    # Seed 0 has different goals for the two agents, so swapping them changes what each one sees.
    with pytest.raises(AssertionError, match=r"obs\[agents\]: differs"):
        run_episode(harness, 0, mode, ATOL, perturb_state=swap_goals)


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_perturbed_params(harness: Harness, mode: Mode) -> None:
    with pytest.raises(AssertionError, match=r"reward\[agents\]: differs"):
        run_episode(
            harness, 0, mode, ATOL, perturb_params=lambda p: p.replace(local_ratio=p.local_ratio + 0.01)
        )
    with pytest.raises(AssertionError, match=r"obs\[agents\]: differs"):
        run_episode(harness, 0, mode, ATOL, perturb_params=lambda p: p.replace(damping=0.26))


@pytest.mark.parametrize(
    ("tamper", "match"),
    [(zero_heard_message, r"obs\[agents\]"), (shift_reward, r"reward\[agents\]")],
    ids=["message", "reward"],
)
def test_negative_control_tampered_output(harness: Harness, tamper: Any, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        run_episode(harness, 0, "injected", ATOL, tamper=tamper)


def test_unsupported_reference_raises() -> None:
    ref = reference.parallel_env()
    ref.reset(seed=0)
    first = ref.unwrapped.world.agents[0]
    first.goal_a = first
    with pytest.raises(ValueError, match="goal agent"):
        state_from_mpe2(ref)
