"""Live parity of our simple_spread against mpe2's simple_spread_v3, step by step.

Both envs take the same random actions for a full episode (seeds 0..11, N in {3, 4}, discrete and
continuous actions). Two comparisons run on every step of every episode:

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

Negative controls perturb our env or its output and require the same comparison to raise.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.environments.mpe.parity import (
    actions_to_mpe2,
    assert_timestep_matches,
    make_matching_env,
    observe,
    state_from_mpe2,
)

simple_spread_v3 = pytest.importorskip("mpe2.simple_spread_v3", reason="mpe2 is the parity reference")

ATOL = 1e-5
"""Per-step tolerance on observations and rewards (states injected from mpe2 before each step)."""
FREE_ATOL = 1e-4
"""Free-running tolerance: float32 rounding amplified by stiff contacts (see the module docstring)."""
RESET_ATOL = 1e-6
"""Initial observations: only the float64 -> float32 cast of positions separates the two."""
NUM_STEPS = 25
SEEDS = range(12)
CONFIGS = [(n, c) for n in (3, 4) for c in (False, True)]
CONFIG_IDS = [f"N{n}-{'continuous' if c else 'discrete'}" for n, c in CONFIGS]
AGENT_DIAMETER = 0.3

Mode = Literal["injected", "free"]
Tamper = Callable[[TimeStep], TimeStep]


@dataclasses.dataclass
class Harness:
    """One reference env and our matching env, with our step compiled once."""

    ref: Any
    env: Any
    step: Callable[..., tuple[Any, TimeStep]]
    observe: Callable[[Any], dict[str, jax.Array]]
    continuous: bool
    traces: list[int]
    """How often ``step`` was traced; params are a traced argument, so perturbed params must not retrace."""


def make_harness(
    num_agents: int, continuous: bool, local_ratio: float = 0.5, max_cycles: int = 25
) -> Harness:
    """A fresh pair; tests that mutate the reference world use their own, never the shared ones."""
    ref = simple_spread_v3.parallel_env(
        N=num_agents, local_ratio=local_ratio, max_cycles=max_cycles, continuous_actions=continuous
    )
    env = make_matching_env(ref)
    traces = [0]

    def counted_step(*args: Any) -> tuple[Any, TimeStep]:
        traces[0] += 1
        return env.step(*args)

    observe_jit = jax.jit(functools.partial(observe, env))
    return Harness(ref, env, jax.jit(counted_step), observe_jit, continuous, traces)


harness = functools.cache(make_harness)
"""Shared, unmutated pairs: one compilation per configuration for the whole file."""


def random_actions(h: Harness, rng: np.random.Generator) -> np.ndarray:
    num_agents = h.env.n_agents
    if h.continuous:
        return rng.random((num_agents, 5), dtype=np.float32)
    return rng.integers(0, 5, num_agents)


def agents_touching(ref: Any) -> bool:
    pos = np.array([a.state.p_pos for a in ref.unwrapped.world.agents])
    dist = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    return bool(np.any((dist < AGENT_DIAMETER) & ~np.eye(len(pos), dtype=bool)))


@dataclasses.dataclass
class EpisodeReport:
    max_error: float = 0.0
    contact_steps: int = 0


def run_episode(
    h: Harness,
    seed: int,
    mode: Mode,
    *,
    perturb_params: Callable[[Any], Any] = lambda p: p,
    tamper: Tamper = lambda ts: ts,
    perturb_reference: Callable[[Any], None] = lambda ref: None,
    atol: float | None = None,
) -> EpisodeReport:
    """Step mpe2 and our env side by side for a whole episode; raise AssertionError on any mismatch."""
    h.ref.reset(seed=seed)
    perturb_reference(h.ref)
    state, params = state_from_mpe2(h.ref, h.env)
    params = perturb_params(params)
    rng = np.random.default_rng(seed)
    key = jax.random.key(seed)
    if atol is None:
        atol = ATOL if mode == "injected" else FREE_ATOL
    report = EpisodeReport()
    for t in range(h.ref.unwrapped.max_cycles):
        actions = random_actions(h, rng)
        if mode == "injected":
            state, _ = state_from_mpe2(h.ref, h.env)
        state, timestep = h.step(key, state, {"agents": jnp.asarray(actions)}, params)
        obs, rewards, terminations, truncations, _ = h.ref.step(actions_to_mpe2(h.env, {"agents": actions}))
        context = f"{mode} seed={seed} step={t + 1}"
        error = assert_timestep_matches(
            h.env, tamper(timestep), obs, rewards, terminations, truncations, atol=atol, context=context
        )
        report.max_error = max(report.max_error, error)
        report.contact_steps += agents_touching(h.ref)
    if h.ref.agents:
        raise AssertionError("mpe2 did not end the episode where ours truncates")
    return report


@pytest.mark.parametrize(("num_agents", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_initial_observations_match(num_agents: int, continuous: bool) -> None:
    h = harness(num_agents, continuous)
    for seed in SEEDS:
        ref_obs, _ = h.ref.reset(seed=seed)
        state, _ = state_from_mpe2(h.ref, h.env)
        assert state.pos.dtype == jnp.float32 and state.vel.dtype == jnp.float32
        assert state.pos.shape == (2 * num_agents, 2) and int(state.step) == 0
        timestep = TimeStep(h.observe(state), {}, {}, {}, {}, {})
        assert_timestep_matches(h.env, timestep, ref_obs, atol=RESET_ATOL, context=f"reset seed={seed}")


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(("num_agents", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_episode_matches_mpe2(num_agents: int, continuous: bool, mode: Mode) -> None:
    h = harness(num_agents, continuous)
    reports = [run_episode(h, seed, mode) for seed in SEEDS]
    assert h.traces == [1], "our step was retraced inside the episode loop"
    # Without contacts the stiff collision forces and the collision reward would go untested.
    assert sum(r.contact_steps for r in reports) > 0, "no seed brought agents into contact"


def test_free_running_drift_needs_looser_tolerance() -> None:
    """Why ``FREE_ATOL > ATOL``: a contact-heavy episode passes step by step but drifts past ``ATOL``.

    If this starts failing (no AssertionError), the drift has shrunk: tighten ``FREE_ATOL``.
    """
    h = harness(4, True)
    assert run_episode(h, 9, "injected").max_error <= ATOL
    with pytest.raises(AssertionError, match="differs from mpe2"):
        run_episode(h, 9, "free", atol=ATOL)


def test_state_from_mpe2_mid_episode_and_constants() -> None:
    h = make_harness(3, False)
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


def test_perturbed_reference_is_followed() -> None:
    """Constants are read from the reference world, so a perturbed mpe2 still matches step by step."""
    h = make_harness(3, True, local_ratio=0.3, max_cycles=9)

    def perturb(ref: Any) -> None:
        world = ref.unwrapped.world
        world.damping, world.dt, world.contact_force = 0.4, 0.07, 130.0
        for agent in world.agents:
            agent.accel = 3.0

    for mode in ("injected", "free"):
        run_episode(h, 3, mode, perturb_reference=perturb)


# Negative controls: each must make the comparison raise, proving its assertions run.


def permute_observation(ts: TimeStep) -> TimeStep:
    obs = ts.obs["agents"]
    return ts._replace(obs={"agents": obs.at[:, [0, 1, 2, 3]].set(obs[:, [2, 3, 0, 1]])})


def shift_reward(amount: float) -> Tamper:
    return lambda ts: ts._replace(reward={"agents": ts.reward["agents"] + amount})


def flip_truncation(ts: TimeStep) -> TimeStep:
    return ts._replace(truncated={"agents": ~ts.truncated["agents"]})


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(
    "tamper",
    [permute_observation, shift_reward(1e-3), flip_truncation],
    ids=["obs-order", "reward", "truncation"],
)
def test_negative_control_tampered_output(mode: Mode, tamper: Tamper) -> None:
    with pytest.raises(AssertionError, match="differs|!="):
        run_episode(harness(3, False), 0, mode, tamper=tamper)


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_perturbed_damping(mode: Mode) -> None:
    with pytest.raises(AssertionError, match=r"obs\[agents\]: differs"):
        run_episode(harness(3, True), 0, mode, perturb_params=lambda p: p.replace(damping=0.26))


def test_negative_control_reference_perturbed_behind_our_back() -> None:
    """If we ignored the reference's constants, a perturbed mpe2 world would be caught."""

    def perturb(ref: Any) -> None:
        ref.unwrapped.world.contact_force = 120.0

    def ignore_reference(params: Any) -> Any:
        return params.replace(contact_force=100.0)

    h = make_harness(4, False)
    with pytest.raises(AssertionError, match="differs"):
        run_episode(h, 4, "injected", perturb_reference=perturb, perturb_params=ignore_reference)


def test_negative_control_strict_tolerance() -> None:
    """The per-step comparison notices an error just above ``ATOL``."""
    with pytest.raises(AssertionError, match=r"reward\[agents\]: differs"):
        run_episode(harness(3, False), 0, "injected", tamper=shift_reward(2 * ATOL))


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
    env = make_matching_env(ref)
    ref.unwrapped.world.agents[1].size = 0.2
    with pytest.raises(ValueError, match="size"):
        state_from_mpe2(ref, env)
    ref.unwrapped.world.agents[1].size = 0.15
    ref.unwrapped.world.agents[0].accel = 4.0
    with pytest.raises(ValueError, match="accel"):
        state_from_mpe2(ref, env)
