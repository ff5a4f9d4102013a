"""Live parity of our simple_formation against mpe2's simple_formation_v1, step by step.

Both envs take the same random actions for whole episodes (N in {3, 4, 6}, discrete and continuous
actions, 6 seeds each). mpe2 matches agents to the circle's points with scipy's Hungarian solver; ours is
``assignment.min_cost_assignment`` (all permutations for N <= 5, a batch-minor Hungarian above), and
both solvers are checked against scipy on their own too; N = 6 runs the Hungarian in the episodes.

- **Injected** (``ATOL = 1e-5``): mpe2's world is copied into our state before each step. Worst: 6.6e-7.
- **Free-running** (``FREE_ATOL = 1e-4``): agents collide (size 0.05), and stiff contacts amplify our
  float32 rounding against mpe2's float64 as in simple_spread (see ``test_mpe_parity.py``). Contact-free
  episodes stay below 1e-6; N=6 seed 3 reaches 1.0e-5, past ``ATOL``
  (``test_free_running_drift_needs_looser_tolerance`` pins it down).

``terminate_on_success`` is checked on worlds arranged in formation, where both sides must terminate
after the first step, and must not when the same step also truncates (mpe2's ``elif``).

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
from jaxmarl_suite.environments.mpe.assignment import (
    ENUMERATION_MAX_SIZE,
    enumerated_assignment,
    hungarian_assignment,
    min_cost_assignment,
)
from jaxmarl_suite.environments.mpe.parity import (
    actions_to_mpe2,
    assert_timestep_matches,
    make_matching_env,
    state_from_mpe2,
)

simple_formation_v1 = pytest.importorskip("mpe2.simple_formation_v1", reason="mpe2 is the parity reference")
scipy_optimize = pytest.importorskip("scipy.optimize")

ATOL = 1e-5
"""Per-step tolerance on observations and rewards (states injected from mpe2 before each step)."""
FREE_ATOL = 1e-4
"""Free-running tolerance: float32 rounding amplified by stiff contacts (see the module docstring)."""
RESET_ATOL = 1e-6
SEEDS = range(6)
CONFIGS = [(4, False), (4, True), (6, False), (3, True)]
CONFIG_IDS = [f"N{n}-{'continuous' if c else 'discrete'}" for n, c in CONFIGS]


@functools.cache
def harness(num_agents: int, continuous: bool) -> Harness:
    """Shared, unmutated pairs: one compilation per configuration for the whole file."""
    return make_harness(simple_formation_v1, N=num_agents, continuous_actions=continuous)


@pytest.mark.parametrize(("num_agents", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_initial_observations_match(num_agents: int, continuous: bool) -> None:
    h = harness(num_agents, continuous)
    for seed in SEEDS:
        reset_matches(h, seed, RESET_ATOL)


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(("num_agents", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_episode_matches_mpe2(num_agents: int, continuous: bool, mode: Mode) -> None:
    h = harness(num_agents, continuous)
    atol = ATOL if mode == "injected" else FREE_ATOL
    for seed in SEEDS:
        run_episode(h, seed, mode, atol)
    assert h.traces == [1], "our step was retraced inside the episode loop"


def test_free_running_drift_needs_looser_tolerance() -> None:
    """Why ``FREE_ATOL > ATOL``. If this stops raising, the drift has shrunk: tighten ``FREE_ATOL``."""
    h = harness(6, False)
    assert run_episode(h, 3, "injected", ATOL) <= ATOL
    with pytest.raises(AssertionError, match="differs from mpe2"):
        run_episode(h, 3, "free", ATOL)


SOLVERS = {"enumerated": enumerated_assignment, "hungarian": hungarian_assignment}


SOLVER_CASES = [("enumerated", 1), ("enumerated", 4), ("enumerated", 5)]
SOLVER_CASES += [("hungarian", 2), ("hungarian", 4), ("hungarian", 6)]


@pytest.mark.parametrize(("solver", "size"), SOLVER_CASES)
def test_assignment_matches_scipy(solver: str, size: int) -> None:
    """Both solvers find an assignment as cheap as scipy's, including costs with many ties."""
    rng = np.random.default_rng(size)
    cost = rng.random((size, size, 64)).astype(np.float32)
    cost[..., :16] = rng.integers(0, 3, (size, size, 16))
    assignment = np.asarray(jax.jit(SOLVERS[solver])(cost))
    np.testing.assert_array_equal(assignment.sum(axis=0), 1)
    np.testing.assert_array_equal(assignment.sum(axis=1), 1)
    ours = np.sum(assignment * cost, axis=(0, 1))
    reference = [cost[..., b][scipy_optimize.linear_sum_assignment(cost[..., b])].sum() for b in range(64)]
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-6)


def test_assignment_dispatch() -> None:
    cost = jnp.asarray(np.random.default_rng(0).random((3, 3, 8)), jnp.float32)
    assert ENUMERATION_MAX_SIZE >= 4  # mpe2's default N = 4 takes the fast path
    np.testing.assert_array_equal(min_cost_assignment(cost), enumerated_assignment(cost))


def arrange_in_formation(ref: Any, offset: float) -> None:
    """Landmark at the origin, agents on the circle (radially ``offset`` outside it), at rest."""
    world = ref.unwrapped.world
    world.landmarks[0].state.p_pos = np.zeros(2)
    count = len(world.agents)
    for i, agent in enumerate(world.agents):
        angle = 0.3 + 2 * np.pi * i / count
        agent.state.p_pos = (0.5 + offset) * np.array([np.cos(angle), np.sin(angle)])
        agent.state.p_vel = np.zeros(2)


@functools.cache
def four_agent_step() -> Any:
    """A jitted step of our 4-agent env: ``terminate_on_success`` and ``max_steps`` are params, so one
    compilation serves every reference below."""
    return jax.jit(harness(4, False).env.step)


def first_step(ref: Any, offset: float, terminate: bool | None = None) -> tuple[TimeStep, tuple[Any, ...]]:
    """One no-op step of both sides from a 4-agent world in formation; ``terminate`` overrides our param."""
    ref.reset(seed=0)
    arrange_in_formation(ref, offset)
    state, params = state_from_mpe2(ref, harness(4, False).env)
    if terminate is not None:
        params = params.replace(terminate_on_success=terminate)
    actions = {"agents": jnp.zeros(4, jnp.int32)}
    _, timestep = four_agent_step()(jax.random.key(0), state, actions, params)
    reference = ref.step(actions_to_mpe2(harness(4, False).env, {"agents": np.zeros(4, int)}))
    return timestep, reference


@pytest.mark.parametrize("terminate", [False, True])
@pytest.mark.parametrize("offset", [0.01, 0.08])
def test_terminate_on_success(terminate: bool, offset: float) -> None:
    ref = simple_formation_v1.parallel_env(N=4, terminate_on_success=terminate)
    env = make_matching_env(ref)
    timestep, (obs, rewards, terminations, truncations, _) = first_step(ref, offset)
    assert_timestep_matches(env, timestep, obs, rewards, terminations, truncations, atol=ATOL)
    assert bool(timestep.terminated["agents"].all()) == (terminate and offset < 0.05)


def test_success_on_the_last_step_truncates_only() -> None:
    ref = simple_formation_v1.parallel_env(N=4, terminate_on_success=True, max_cycles=1)
    env = make_matching_env(ref)
    timestep, (obs, rewards, terminations, truncations, _) = first_step(ref, 0.01)
    assert_timestep_matches(env, timestep, obs, rewards, terminations, truncations, atol=ATOL)
    assert bool(timestep.truncated["agents"].all()) and not bool(timestep.terminated["agents"].any())


# Negative controls: each must make the comparison raise, proving its assertions run.


def swap_velocity_and_position(ts: TimeStep) -> TimeStep:
    obs = ts.obs["agents"]
    return ts._replace(obs={"agents": obs.at[:, [0, 1, 2, 3]].set(obs[:, [2, 3, 0, 1]])})


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_tampered_observation(mode: Mode) -> None:
    with pytest.raises(AssertionError, match=r"obs\[agents\]: differs"):
        run_episode(harness(4, False), 0, mode, ATOL, tamper=swap_velocity_and_position)


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_perturbed_radius(mode: Mode) -> None:
    with pytest.raises(AssertionError, match=r"reward\[agents\]: differs"):
        run_episode(harness(4, True), 0, mode, ATOL, perturb_params=lambda p: p.replace(target_radius=0.501))


def test_negative_control_ignored_termination() -> None:
    ref = simple_formation_v1.parallel_env(N=4, terminate_on_success=True)
    env = make_matching_env(ref)
    timestep, (obs, rewards, terminations, truncations, _) = first_step(ref, 0.01, terminate=False)
    with pytest.raises(AssertionError, match=r"terminated\[agents\]"):
        assert_timestep_matches(env, timestep, obs, rewards, terminations, truncations, atol=ATOL)


def test_unsupported_references_raise() -> None:
    ref = simple_formation_v1.parallel_env(N=4)
    ref.unwrapped.local_ratio = 0.5
    with pytest.raises(ValueError, match="local_ratio"):
        make_matching_env(ref)
