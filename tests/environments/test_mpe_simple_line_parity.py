"""Live parity of our simple_line against mpe2's simple_line_v1, step by step.

Both envs take the same random actions for whole episodes (N in {1, 3, 4, 6}, discrete and continuous
actions, 6 seeds each). The targets mpe2 draws at reset (``scenario._expected_positions``) are copied
into ``state.extra["targets"]`` by ``state_from_mpe2``; the assignment is the batch-minor Hungarian that
``test_mpe_simple_formation_parity.py`` checks against scipy.

Both comparisons, **injected** (mpe2's world copied into our state before each step) and
**free-running**, use ``ATOL = 1e-5``: the agents are small (size 0.03), contacts are rare and brief, and
the worst errors observed are 3.1e-7 injected and 1.3e-6 free-running (N=6 seed 3, through a contact).

``terminate_on_success`` is checked on worlds with the agents placed on their targets. Our reset cannot
be compared draw for draw (JAX's PRNG), so its construction is checked for mpe2's invariants instead.
Negative controls perturb our env or its output and require the same comparison to raise.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mpe_scenario_harness import Harness, Mode, make_harness, reset_matches, run_episode

from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.environments.mpe.parity import (
    actions_to_mpe2,
    assert_timestep_matches,
    make_matching_env,
    state_from_mpe2,
)
from jaxmarl_suite.environments.mpe.simple_line import SimpleLine

simple_line_v1 = pytest.importorskip("mpe2.simple_line_v1", reason="mpe2 is the parity reference")

ATOL = 1e-5
"""Tolerance on observations and rewards, injected and free-running (see the module docstring)."""
RESET_ATOL = 1e-6
SEEDS = range(6)
CONFIGS = [(4, False), (4, True), (6, False), (3, True), (1, False)]
CONFIG_IDS = [f"N{n}-{'continuous' if c else 'discrete'}" for n, c in CONFIGS]


@functools.cache
def harness(num_agents: int, continuous: bool) -> Harness:
    """Shared, unmutated pairs: one compilation per configuration for the whole file."""
    return make_harness(simple_line_v1, N=num_agents, continuous_actions=continuous)


@pytest.mark.parametrize(("num_agents", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_initial_observations_match(num_agents: int, continuous: bool) -> None:
    h = harness(num_agents, continuous)
    for seed in SEEDS:
        reset_matches(h, seed, RESET_ATOL)


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(("num_agents", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_episode_matches_mpe2(num_agents: int, continuous: bool, mode: Mode) -> None:
    h = harness(num_agents, continuous)
    for seed in SEEDS:
        run_episode(h, seed, mode, ATOL)
    assert h.traces == [1], "our step was retraced inside the episode loop"


def test_targets_copied_from_mpe2() -> None:
    h = harness(4, False)
    h.ref.reset(seed=5)
    state, params = state_from_mpe2(h.ref, h.env)
    expected = np.array(h.ref.unwrapped.scenario._expected_positions, np.float32)
    np.testing.assert_array_equal(state.extra["targets"], expected)
    assert params.line_length == 1.25 and params.success_distance == 0.05


@pytest.mark.parametrize("num_agents", [1, 4])
def test_reset_follows_mpe2_construction(num_agents: int) -> None:
    """Landmark 0 in ``[-0.25, 0.25]^2``, landmark 1 at distance 1.25 inside ``(-1, 1)^2``, targets evenly
    spaced from landmark 0 towards landmark 1 (all at landmark 0 for one agent)."""
    env = SimpleLine(num_agents=num_agents)
    state, _ = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 512))
    pos, targets = np.asarray(state.pos), np.asarray(state.extra["targets"])
    anchor, end = pos[:, num_agents], pos[:, num_agents + 1]
    assert np.all(np.abs(anchor) <= 0.25) and np.all(np.abs(end) < 1.0)
    np.testing.assert_allclose(np.linalg.norm(end - anchor, axis=-1), 1.25, atol=1e-6)
    fraction = np.arange(num_agents) / max(num_agents - 1, 1)
    expected = anchor[:, None] + fraction[None, :, None] * (end - anchor)[:, None] * (num_agents > 1)
    np.testing.assert_allclose(targets, expected, atol=1e-6)
    assert np.all(np.abs(pos[:, :num_agents]) <= 1.0)


def arrange_on_targets(ref: Any, offset: float) -> None:
    """Agents at rest on their targets, shifted by ``offset`` along x."""
    targets = ref.unwrapped.scenario._expected_positions
    for agent, target in zip(ref.unwrapped.world.agents, targets, strict=True):
        agent.state.p_pos = target + np.array([offset, 0.0])
        agent.state.p_vel = np.zeros(2)


@functools.cache
def four_agent_step() -> Any:
    """A jitted step of our 4-agent env: ``terminate_on_success`` and ``max_steps`` are params, so one
    compilation serves every reference below."""
    return jax.jit(harness(4, False).env.step)


def first_step(ref: Any, offset: float, terminate: bool | None = None) -> tuple[TimeStep, tuple[Any, ...]]:
    """One no-op step of both sides from a 4-agent world on its targets; ``terminate`` overrides our param."""
    env = harness(4, False).env
    ref.reset(seed=2)
    arrange_on_targets(ref, offset)
    state, params = state_from_mpe2(ref, env)
    if terminate is not None:
        params = params.replace(terminate_on_success=terminate)
    _, timestep = four_agent_step()(jax.random.key(0), state, {"agents": jnp.zeros(4, jnp.int32)}, params)
    reference = ref.step(actions_to_mpe2(env, {"agents": np.zeros(4, int)}))
    return timestep, reference


@pytest.mark.parametrize("terminate", [False, True])
@pytest.mark.parametrize("offset", [0.01, 0.08])
def test_terminate_on_success(terminate: bool, offset: float) -> None:
    ref = simple_line_v1.parallel_env(N=4, terminate_on_success=terminate)
    timestep, (obs, rewards, terminations, truncations, _) = first_step(ref, offset)
    env = harness(4, False).env
    assert_timestep_matches(env, timestep, obs, rewards, terminations, truncations, atol=ATOL)
    assert bool(timestep.terminated["agents"].all()) == (terminate and offset < 0.05)


def test_success_on_the_last_step_truncates_only() -> None:
    ref = simple_line_v1.parallel_env(N=4, terminate_on_success=True, max_cycles=1)
    timestep, (obs, rewards, terminations, truncations, _) = first_step(ref, 0.01)
    env = harness(4, False).env
    assert_timestep_matches(env, timestep, obs, rewards, terminations, truncations, atol=ATOL)
    assert bool(timestep.truncated["agents"].all()) and not bool(timestep.terminated["agents"].any())


# Negative controls: each must make the comparison raise, proving its assertions run.


def swap_landmarks(ts: TimeStep) -> TimeStep:
    obs = ts.obs["agents"]
    return ts._replace(obs={"agents": obs.at[:, [4, 5, 6, 7]].set(obs[:, [6, 7, 4, 5]])})


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_tampered_observation(mode: Mode) -> None:
    with pytest.raises(AssertionError, match=r"obs\[agents\]: differs"):
        run_episode(harness(4, False), 0, mode, ATOL, tamper=swap_landmarks)


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_shifted_targets(mode: Mode) -> None:
    def shift(state: Any) -> Any:
        return state.replace(extra={"targets": state.extra["targets"] + jnp.array([1e-3, 0.0])})

    with pytest.raises(AssertionError, match=r"reward\[agents\]: differs"):
        run_episode(harness(4, True), 0, mode, ATOL, perturb_state=shift)


def test_negative_control_ignored_termination() -> None:
    ref = simple_line_v1.parallel_env(N=4, terminate_on_success=True)
    timestep, (obs, rewards, terminations, truncations, _) = first_step(ref, 0.01, terminate=False)
    with pytest.raises(AssertionError, match=r"terminated\[agents\]"):
        assert_timestep_matches(harness(4, False).env, timestep, obs, rewards, terminations, truncations)


def test_unsupported_references_raise() -> None:
    ref = simple_line_v1.parallel_env(N=4)
    ref.unwrapped.local_ratio = 0.5
    with pytest.raises(ValueError, match="local_ratio"):
        make_matching_env(ref)
