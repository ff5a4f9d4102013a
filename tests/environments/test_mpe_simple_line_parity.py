"""Live parity of our simple_line against mpe2's simple_line_v1: what is particular to the scenario.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``. Both envs take the same
random actions for whole episodes (N in {1, 3, 4, 6}, discrete and continuous actions, 6 seeds each).
The targets mpe2 draws at reset (``scenario._expected_positions``) are copied into
``state.extra["targets"]`` by ``state_from_mpe2``; the assignment is the batch-minor Hungarian that
``test_mpe_simple_formation_parity.py`` checks against scipy.

Both comparisons, **injected** (mpe2's world copied into our state before each step) and
**free-running**, use ``ATOL = 1e-5``: the agents are small (size 0.03), contacts are rare and brief, and
the worst errors observed are 3.1e-7 injected and 1.3e-6 free-running (N=6 seed 3, through a contact).

``terminate_on_success`` is checked on worlds with the agents placed on their targets. Our reset cannot
be compared draw for draw (JAX's PRNG), so its construction is checked for mpe2's invariants instead.
The table's negative controls perturb our env or its output; the one here ignores the termination.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mpe_scenario_harness import (
    ATOL,
    Control,
    Harness,
    cached_harness,
    kind,
    one_step,
    swap_obs,
)

from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.environments.mpe.parity import assert_timestep_matches, make_matching_env, state_from_mpe2
from jaxmarl_suite.environments.mpe.simple_line import SimpleLine

REFERENCE = "mpe2.simple_line_v1"
simple_line_v1 = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")

SEEDS = range(6)
CONFIGS = {
    f"N{n}-{kind(c)}": {"N": n, "continuous_actions": c}
    for n, c in [(4, False), (4, True), (6, False), (3, True), (1, False)]
}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {"seeds": SEEDS, "atol": ATOL}


def harness(num_agents: int, continuous: bool) -> Harness:
    """The table row's shared pair."""
    return cached_harness(REFERENCE, N=num_agents, continuous_actions=continuous)


def shifted_targets(state: Any) -> Any:
    """Targets off by 1e-3: only the reward sees them."""
    return state.replace(extra={"targets": state.extra["targets"] + jnp.array([1e-3, 0.0])})


CONTROLS = {
    "N4-discrete": (
        Control("obs", r"obs\[agents\]: differs", {"tamper": swap_obs("agents", [4, 5], [6, 7])}),
    ),
    "N4-continuous": (Control("targets", r"reward\[agents\]: differs", {"perturb_state": shifted_targets}),),
}


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


def first_step(ref: Any, offset: float, terminate: bool | None = None) -> tuple[TimeStep, tuple[Any, ...]]:
    """One no-op step of both sides from a 4-agent world on its targets; ``terminate`` overrides our param
    (``terminate_on_success`` and ``max_steps`` are params: the row's compiled step serves every ``ref``)."""
    overrides = {} if terminate is None else {"terminate_on_success": terminate}
    return one_step(harness(4, False), ref, 2, lambda ref: arrange_on_targets(ref, offset), **overrides)


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
