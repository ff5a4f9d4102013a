"""Live parity of our simple against mpe2's simple_v3, step by step.

Both envs take the same random actions for whole episodes (seeds 0..7; discrete and continuous actions,
the latter drawn in ``[-0.25, 1.25]`` so that clipping is exercised; ``max_cycles`` 25 and 40) and
observations, rewards, terminations and truncations are compared on every step:

- **Injected** (``ATOL = 1e-5``): mpe2's world is copied into our state before every step, so any
  error is that step's own (float32 against mpe2's float64).
- **Free-running** (also ``ATOL``): our env runs from its own state for the whole episode. Nothing
  collides, so there is no stiff contact to amplify float32 rounding (see ``test_mpe_parity.py``); the
  error stays at the rounding of positions of magnitude ~1 and needs no looser tolerance.

Negative controls tamper with our output or perturb our params and require the comparison to raise.
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

simple_v3 = pytest.importorskip("mpe2.simple_v3", reason="mpe2 is the parity reference")

ATOL = 1e-5
"""Tolerance on observations and rewards, per step and free-running alike (see the module docstring)."""
RESET_ATOL = 1e-6
"""Initial observations: only the float64 -> float32 cast of positions separates the two."""
SEEDS = range(8)
CONFIGS = [(c, cycles) for c in (False, True) for cycles in (25, 40)]
CONFIG_IDS = [f"{'continuous' if c else 'discrete'}-T{cycles}" for c, cycles in CONFIGS]


@functools.cache
def harness(continuous: bool, max_cycles: int = 25) -> Harness:
    """Shared, unmutated pairs: one compilation per configuration for the whole file."""
    return make_harness(simple_v3, continuous_actions=continuous, max_cycles=max_cycles)


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_initial_observations_match(continuous: bool) -> None:
    h = harness(continuous)
    for seed in SEEDS:
        reset_matches(h, seed, RESET_ATOL)


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(("continuous", "max_cycles"), CONFIGS, ids=CONFIG_IDS)
def test_episode_matches_mpe2(continuous: bool, max_cycles: int, mode: Mode) -> None:
    h = harness(continuous, max_cycles)
    worst = max(run_episode(h, seed, mode, ATOL) for seed in SEEDS)
    assert worst <= ATOL
    assert h.traces == [1], "our step was retraced inside the episode loop"


def test_jaxmarl_spaces_match() -> None:
    jaxmarl = pytest.importorskip("jaxmarl")
    assert jaxmarl_space_sizes(harness(False).env, jaxmarl.make("MPE_simple_v3")) == []
    continuous = jaxmarl.make("MPE_simple_v3", action_type="Continuous")
    assert jaxmarl_space_sizes(harness(True).env, continuous) == []


# Negative controls: each must make the comparison raise, proving its assertions run.


def swap_landmark_axes(ts: TimeStep) -> TimeStep:
    obs = ts.obs["agents"]
    return ts._replace(obs={"agents": obs.at[:, [2, 3]].set(obs[:, [3, 2]])})


def shift_reward(amount: float) -> Tamper:
    return lambda ts: ts._replace(reward={"agents": ts.reward["agents"] + amount})


def flip_truncation(ts: TimeStep) -> TimeStep:
    return ts._replace(truncated={"agents": ~ts.truncated["agents"]})


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(
    "tamper",
    [swap_landmark_axes, shift_reward(2 * ATOL), flip_truncation],
    ids=["obs-order", "reward", "truncation"],
)
def test_negative_control_tampered_output(mode: Mode, tamper: Tamper) -> None:
    with pytest.raises(AssertionError, match="differs|!="):
        run_episode(harness(False), 0, mode, ATOL, tamper=tamper)


@pytest.mark.parametrize(("field", "value"), [("damping", 0.26), ("accel", 5.1), ("dt", 0.11)])
def test_negative_control_perturbed_params(field: str, value: Any) -> None:
    with pytest.raises(AssertionError, match=r"obs\[agents\]: differs"):
        run_episode(harness(True), 0, "injected", ATOL, perturb_params=lambda p: p.replace(**{field: value}))
