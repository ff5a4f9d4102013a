"""Live parity of our simple_adversary against mpe2's simple_adversary_v3, step by step.

Both envs take the same random actions for whole episodes (seeds 0..11, which draw every goal; N = 1,
2 (the default) and 3 good agents; discrete and continuous actions, the latter partly outside
``[0, 1]`` so that clipping is exercised). Observations, rewards, terminations and truncations are
compared on every step:

- **Injected** (``ATOL = 1e-5``): mpe2's world is copied into our state before every step, so any
  error is that step's own (float32 against mpe2's float64). Worst observed: 3.4e-7.
- **Free-running** (also ``ATOL``): our env runs from its own state for the whole episode. Nothing
  collides, so no stiff contact amplifies float32 rounding (see ``test_mpe_parity.py``) and no looser
  tolerance is needed (worst observed: 7.2e-7). Every reward term is continuous in the state (the
  ``min`` over good agents included), so rounding cannot flip a discrete outcome. No observation holds
  a velocity, so only this comparison checks the velocity update (an injected step's positions use the
  injected velocity).

Negative controls tamper with our output, perturb our params or falsify the goal, and require the
comparison to raise.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from mpe_scenario_harness import (
    Harness,
    Mode,
    Tamper,
    jaxmarl_space_sizes,
    make_harness,
    reset_matches,
    run_episode,
)

from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.environments.mpe.parity import make_matching_env, state_from_mpe2

simple_adversary_v3 = pytest.importorskip("mpe2.simple_adversary_v3", reason="mpe2 is the parity reference")

ATOL = 1e-5
"""Tolerance on observations and rewards, per step and free-running alike (see the module docstring)."""
RESET_ATOL = 1e-6
"""Initial observations: only the float64 -> float32 cast of positions separates the two."""
SEEDS = range(12)
CONFIGS = [(n, c) for n in (1, 2, 3) for c in (False, True)]
CONFIG_IDS = [f"N{n}-{'continuous' if c else 'discrete'}" for n, c in CONFIGS]


@functools.cache
def harness(num_good: int, continuous: bool) -> Harness:
    """Shared, unmutated pairs: one compilation per configuration for the whole file."""
    return make_harness(simple_adversary_v3, N=num_good, continuous_actions=continuous)


def goal_index(h: Harness) -> int:
    world = h.ref.unwrapped.world
    return next(i for i, landmark in enumerate(world.landmarks) if landmark is world.agents[0].goal_a)


@pytest.mark.parametrize(("num_good", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_initial_observations_match(num_good: int, continuous: bool) -> None:
    h = harness(num_good, continuous)
    goals = set()
    for seed in SEEDS:
        reset_matches(h, seed, RESET_ATOL)
        goals.add(goal_index(h))
    assert goals == set(range(num_good)), "the seeds must exercise every goal landmark"


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(("num_good", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_episode_matches_mpe2(num_good: int, continuous: bool, mode: Mode) -> None:
    h = harness(num_good, continuous)
    worst = max(run_episode(h, seed, mode, ATOL) for seed in SEEDS)
    assert worst <= ATOL
    assert h.traces == [1], "our step was retraced inside the episode loop"


def test_jaxmarl_spaces_match() -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    assert jaxmarl_space_sizes(harness(2, False).env, jaxmarl.make("MPE_simple_adversary_v3")) == []
    continuous = jaxmarl.make("MPE_simple_adversary_v3", action_type="Continuous")
    assert jaxmarl_space_sizes(harness(2, True).env, continuous) == []


def test_jaxmarl_spaces_differ_with_three_good_agents() -> None:
    """Documented difference: JaxMARL's observation spaces stay at 8 and 10 whatever the count, although
    its observations grow like mpe2's and ours (12 and 14 for three good agents)."""
    jaxmarl = pytest.importorskip("jaxmarl")
    theirs = jaxmarl.make("MPE_simple_adversary_v3", num_good_agents=3, num_obs=3)
    differences = jaxmarl_space_sizes(harness(3, False).env, theirs)
    expected = [("adversary_0 obs", (12,), (8,))] + [(f"agent_{i} obs", (14,), (10,)) for i in range(3)]
    assert differences == expected


# Negative controls: each must make the comparison raise, proving its assertions run.


def swap_goal_axes(ts: TimeStep) -> TimeStep:
    obs = ts.obs["agents"]
    return ts._replace(obs={**ts.obs, "agents": obs.at[:, [0, 1]].set(obs[:, [1, 0]])})


def shift_good_reward(amount: float) -> Tamper:
    return lambda ts: ts._replace(reward={**ts.reward, "agents": ts.reward["agents"] + amount})


def flip_truncation(ts: TimeStep) -> TimeStep:
    return ts._replace(truncated={**ts.truncated, "adversaries": ~ts.truncated["adversaries"]})


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(
    "tamper",
    [swap_goal_axes, shift_good_reward(2 * ATOL), flip_truncation],
    ids=["obs-order", "reward", "truncation"],
)
def test_negative_control_tampered_output(mode: Mode, tamper: Tamper) -> None:
    with pytest.raises(AssertionError, match="differs|!="):
        run_episode(harness(2, False), 0, mode, ATOL, tamper=tamper)


def test_negative_control_wrong_goal() -> None:
    """A falsified goal changes the good agents' observations and everyone's reward."""

    def other_goal(state: Any) -> Any:
        return state.replace(extra={"goal": (state.extra["goal"] + 1) % 2})

    with pytest.raises(AssertionError, match=r"obs\[agents\]: differs"):
        run_episode(harness(2, False), 0, "injected", ATOL, perturb_state=other_goal)


@pytest.mark.parametrize(("field", "value"), [("damping", 0.26), ("accel", 5.1), ("dt", 0.11)])
def test_negative_control_perturbed_params(field: str, value: Any) -> None:
    """Free-running: no one observes a velocity, and damping and accel only change the next velocity, so
    an injected step cannot see them (the free-running comparison is what checks the velocity update)."""
    with pytest.raises(AssertionError, match=r"obs\[(agents|adversaries)\]: differs"):
        run_episode(harness(2, True), 0, "free", ATOL, perturb_params=lambda p: p.replace(**{field: value}))


def test_unsupported_references_raise() -> None:
    for option in ("num_agent_neighbors", "num_landmark_neighbors"):
        with pytest.raises(ValueError, match=option):
            make_matching_env(simple_adversary_v3.parallel_env(**{option: 1}))
    ref = simple_adversary_v3.parallel_env()
    ref.reset(seed=0)
    world = ref.unwrapped.world
    world.agents[2].goal_a = next(lm for lm in world.landmarks if lm is not world.agents[0].goal_a)
    with pytest.raises(ValueError, match="different goal"):
        state_from_mpe2(ref)
