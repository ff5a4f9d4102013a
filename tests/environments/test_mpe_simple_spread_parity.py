"""Live parity of our simple_spread against mpe2's simple_spread_v3: what is particular to the scenario.

The step-by-step comparison itself is a row of the table in ``test_mpe_parity.py``, through the one
harness (``mpe_scenario_harness.py``): both envs take the same random actions for a full episode (seeds
0..11, N in {3, 4}, discrete and continuous actions, the latter in ``[0, 1)``) and two comparisons run
on every step of every episode:

- **Injected** (strict, ``ATOL = 1e-5``): before each step, mpe2's world is copied into our state with
  ``state_from_mpe2`` and we take one step from it, so both sides start the step from the same state
  (up to the float64 -> float32 cast) and any error is that step's own. Worst observed: 1.4e-6.
- **Free-running** (``FREE_ATOL = 1e-4``): our env steps from its own state for the whole episode. We
  compute in float32 and mpe2 in float64, and contacts amplify that rounding: inside a contact the
  force is ``contact_force * penetration``, and with ``dt = 0.1`` and ``damping = 0.25`` the
  linearised update of the gap between two touching agents has eigenvalues of modulus
  ``sqrt(0.75 + 2 * 100 * 0.01) ~ 1.66`` per step. Contact-free episodes stay near 1e-6; contact-heavy
  ones reach 2.2e-5 (``test_free_running_drift_needs_looser_tolerance`` pins one down). With jax's x64
  mode and float64 entity sizes, the same free-running discrete episodes agree to 1e-15, so the drift
  is precision, not logic.

The collision reward thresholds ``dist < 0.3``, so rounding could flip it at a near-tie and cost
``local_ratio`` of reward. On these seeds no agent pair comes within 2.3e-4 of the threshold (ten
times the worst drift), so no flip occurs; a flip would fail loudly, never be skipped. The injected
comparison is the one that localises such a failure to a single step.

The table's negative controls perturb our env or its output; those here perturb the reference.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from mpe_scenario_harness import (
    ATOL,
    INJECTED,
    MODES,
    Control,
    EpisodeReport,
    cached_harness,
    kind,
    make_harness,
    output_controls,
    perturbed,
    refuses_changed,
    run_episode,
    shift_reward,
    swap_obs,
)

from jaxmarl_suite.environments.mpe.parity import make_matching_env, state_from_mpe2

REFERENCE = "mpe2.simple_spread_v3"
simple_spread_v3 = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")

FREE_ATOL = 1e-4
"""Free-running tolerance: float32 rounding amplified by stiff contacts (see the module docstring)."""
SEEDS = range(12)
AGENT_DIAMETER = 0.3


def reference_kwargs(
    num_agents: int, continuous: bool, local_ratio: float = 0.5, max_cycles: int = 25
) -> dict:
    """mpe2's constructor arguments for one configuration (the table's rows use the defaults)."""
    return {
        "N": num_agents,
        "local_ratio": local_ratio,
        "max_cycles": max_cycles,
        "continuous_actions": continuous,
    }


def unit_interval_actions(env: Any, ref: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The draws this scenario's tolerances were measured with: continuous actions uniform in ``[0, 1)``
    (inside the action space, so nothing clips), discrete ones uniform."""
    del ref
    space = env.action_space("agents")
    if hasattr(space, "n"):
        return {"agents": rng.integers(0, space.n, env.n_agents)}
    return {"agents": rng.random((env.n_agents, *space.shape), dtype=np.float32)}


def agents_touching(ref: Any) -> bool:
    pos = np.array([a.state.p_pos for a in ref.unwrapped.world.agents])
    dist = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    return bool(np.any((dist < AGENT_DIAMETER) & ~np.eye(len(pos), dtype=bool)))


def some_contact(seeds: Sequence[int], reports: list[EpisodeReport]) -> None:
    # Without contacts the stiff collision forces and the collision reward would go untested.
    assert sum(sum(report.probes) for report in reports) > 0, "no seed brought agents into contact"


EPISODE = {"policy": unit_interval_actions, "probe": agents_touching}
"""The table rows' episode keywords."""
CONFIGS = {f"N{n}-{kind(c)}": reference_kwargs(n, c) for n in (3, 4) for c in (False, True)}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {
    "seeds": SEEDS,
    "free_atol": FREE_ATOL,
    "episode": EPISODE,
    "check_episodes": some_contact,
}
CONTROLS = {
    "N3-discrete": (
        *output_controls(("agents", swap_obs("agents", [0, 1], [2, 3])), ("agents", 1e-3), "agents"),
        # The per-step comparison notices an error just above ATOL.
        Control(
            "strict", r"reward\[agents\]: differs", {"tamper": shift_reward("agents", 2 * ATOL)}, INJECTED
        ),
    ),
    "N3-continuous": perturbed(r"obs\[agents\]: differs", MODES, damping=0.26),
}


def test_free_running_drift_needs_looser_tolerance() -> None:
    """Why ``FREE_ATOL > ATOL``: a contact-heavy episode passes step by step but drifts past ``ATOL``.

    If this starts failing (no AssertionError), the drift has shrunk: tighten ``FREE_ATOL``.
    """
    h = cached_harness(REFERENCE, **reference_kwargs(4, True))
    assert run_episode(h, 9, "injected", ATOL, **EPISODE).max_error <= ATOL
    with pytest.raises(AssertionError, match="differs from mpe2"):
        run_episode(h, 9, "free", ATOL, **EPISODE)


def test_state_from_mpe2_mid_episode_and_constants() -> None:
    h = make_harness(simple_spread_v3, **reference_kwargs(3, False))
    h.ref.reset(seed=1)
    for _ in range(7):
        h.ref.step(dict.fromkeys(h.ref.agents, 2))
    world = h.ref.unwrapped.world
    world.damping, world.dt, world.contact_force, world.contact_margin = 0.3, 0.05, 150.0, 2e-3
    state, params = state_from_mpe2(h.ref)
    assert int(state.step) == 7
    np.testing.assert_array_equal(state.vel, np.array([e.state.p_vel for e in world.entities], np.float32))
    constants = (params.damping, params.dt, params.contact_force, params.contact_margin)
    assert constants == (0.3, 0.05, 150.0, 2e-3)
    assert (params.max_steps, params.local_ratio, params.accel) == (25, 0.5, 5.0)


def perturb_world(ref: Any) -> None:
    world = ref.unwrapped.world
    world.damping, world.dt, world.contact_force = 0.4, 0.07, 130.0
    for agent in world.agents:
        agent.accel = 3.0


def test_perturbed_reference_is_followed() -> None:
    """Constants are read from the reference world, so a perturbed mpe2 still matches step by step."""
    h = make_harness(simple_spread_v3, **reference_kwargs(3, True, local_ratio=0.3, max_cycles=9))
    for mode, atol in (("injected", ATOL), ("free", FREE_ATOL)):
        run_episode(h, 3, mode, atol, perturb_reference=perturb_world, **EPISODE)


def test_negative_control_reference_perturbed_behind_our_back() -> None:
    """If we ignored the reference's constants, a perturbed mpe2 world would be caught."""

    def perturb(ref: Any) -> None:
        ref.unwrapped.world.contact_force = 120.0

    def ignore_reference(params: Any) -> Any:
        return params.replace(contact_force=100.0)

    h = make_harness(simple_spread_v3, **reference_kwargs(4, False))
    with pytest.raises(AssertionError, match="differs"):
        run_episode(
            h, 4, "injected", ATOL, perturb_reference=perturb, perturb_params=ignore_reference, **EPISODE
        )


def test_unsupported_references_raise() -> None:
    # Every mpe2 scenario is supported now, so an unknown one is a stand-in with another name.
    unknown = types.SimpleNamespace(metadata={"name": "not_an_mpe2_scenario_v0"})
    with pytest.raises(ValueError, match="supports the mpe2 scenarios"):
        state_from_mpe2(unknown)
    with pytest.raises(ValueError, match="terminate_on_success"):
        make_matching_env(simple_spread_v3.parallel_env(terminate_on_success=True))
    with pytest.raises(ValueError, match="num_agent_neighbors"):
        state_from_mpe2(simple_spread_v3.parallel_env(num_agent_neighbors=1))

    ref = simple_spread_v3.parallel_env(N=3)
    ref.reset(seed=0)
    agents = ref.unwrapped.world.agents
    refuses_changed(ref, make_matching_env(ref), [(agents[1], "size", 0.2), (agents[0], "accel", 4.0)])
