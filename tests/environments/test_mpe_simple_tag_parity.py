"""Live parity of our simple_tag against mpe2's simple_tag_v3, step by step.

Both envs take the same actions for whole episodes (seeds 0..5; the default world and a 2-good,
2-adversary, 1-obstacle world; discrete and continuous actions). The adversaries chase the nearest good
agent and everyone else acts at random: with purely random actions an adversary rarely touches a good
agent within 25 steps, and the catch reward and the stiff contacts would go untested. Two comparisons
run on every step, on observations, rewards, terminations and truncations:

- **Injected** (strict, ``ATOL = 1e-5``): before each step mpe2's world is copied into our state with
  ``state_from_mpe2``, so any error is that step's own (float32 against mpe2's float64). Worst
  observed: 3.6e-6.
- **Free-running** (``FREE_ATOL = 5e-4``): our env runs from its own state for the whole episode.
  float32 rounding grows through the soft contacts (chasers pressing on their prey and on the 0.2
  obstacles; the gap between two touching bodies grows ~1.66x per step, see ``test_mpe_parity.py``).
  Worst observed: 1.3e-4 on these seeds, 4.2e-4 on seeds 0..11. With jax's x64 mode and float64
  entity constants, the same free-running discrete episodes agree with mpe2 to 5e-15, so the drift is
  precision, not logic.

Rewards jump by 10 when an adversary and a good agent come into contact, so rounding could flip a
collision at a near-tie. Every step records the closest approach of any (good, adversary) pair to the
collision distance in mpe2's world and requires it to exceed ``DISTANCE_ERROR_FACTOR`` times that
step's largest error, which proves rounding did not decide a collision (worst ratio on these seeds:
190; one step of seeds 6..11 comes within 2.5, which this check would refuse); a flip would also fail
the reward comparison loudly. The boundary penalty is continuous.

The generic helpers here (``Harness``, ``run_episode``, policies) work for any mpe2 scenario that
``environments/mpe/parity.py`` supports; ``test_mpe_simple_world_comm_parity.py`` reuses them.
Negative controls perturb our env, its output or the reference and require the comparison to raise.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.core.spaces import Box
from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.environments.mpe.parity import (
    actions_to_mpe2,
    assert_timestep_matches,
    make_matching_env,
    observe,
    state_from_mpe2,
)

simple_tag_v3 = pytest.importorskip("mpe2.simple_tag_v3", reason="mpe2 is the parity reference")

ATOL = 1e-5
"""Per-step tolerance on observations and rewards (states injected from mpe2 before each step)."""
FREE_ATOL = 5e-4
"""Free-running tolerance: float32 rounding amplified by contacts (see the module docstring)."""
DISTANCE_ERROR_FACTOR = 3.0
"""A distance between two bodies moves by at most ``2 * sqrt(2)`` times the largest position error, and
every agent's position is in its observation (landmarks do not move): so a threshold rule whose gap in
mpe2 exceeds this factor times the step's largest obs error cannot have been decided by rounding."""
RESET_ATOL = 1e-6
"""Initial observations: only the float64 -> float32 cast of positions separates the two."""
SEEDS = range(6)
WORLDS = {"default": {}, "2v2": {"num_good": 2, "num_adversaries": 2, "num_obstacles": 1}}
CONFIGS = [(world, c) for world in WORLDS for c in (False, True)]
CONFIG_IDS = [f"{world}-{'continuous' if c else 'discrete'}" for world, c in CONFIGS]

Mode = Literal["injected", "free"]
Tamper = Callable[[TimeStep], TimeStep]


@dataclasses.dataclass
class Harness:
    """One reference env and our matching env, with our step compiled once."""

    ref: Any
    env: Any
    step: Callable[..., tuple[Any, TimeStep]]
    observe: Callable[[Any], dict[str, jax.Array]]
    traces: list[int]
    """How often ``step`` was traced; params are a traced argument, so perturbed params must not retrace."""


def make_harness(parallel_env: Callable[..., Any], **kwargs: Any) -> Harness:
    """A fresh pair from mpe2's ``parallel_env`` constructor and its keyword arguments."""
    ref = parallel_env(**kwargs)
    env = make_matching_env(ref)
    traces = [0]

    def counted_step(*args: Any) -> tuple[Any, TimeStep]:
        traces[0] += 1
        return env.step(*args)

    return Harness(ref, env, jax.jit(counted_step), jax.jit(functools.partial(observe, env)), traces)


def random_actions(env: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Uniform random actions per group. Continuous ones are drawn in ``[-0.25, 1.25]`` so that both
    sides' clipping to ``[0, 1]`` is exercised."""
    actions = {}
    for group, names in env.groups.items():
        space = env.action_space(group)
        if isinstance(space, Box):
            actions[group] = rng.uniform(-0.25, 1.25, (len(names), *space.shape)).astype(np.float32)
        else:
            actions[group] = rng.integers(0, space.n, len(names))
    return actions


Policy = Callable[[Any, Any, np.random.Generator], dict[str, np.ndarray]]
"""``policy(env, ref, rng) -> {group: actions}``; reads mpe2's world, so both sides see the same actions."""


def random_policy(env: Any, ref: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    del ref
    return random_actions(env, rng)


def toward(env: Any, group: str, direction: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Actions of ``group`` moving along ``direction`` ``[n, 2]`` (dominant axis), in its action format."""
    axis = np.argmax(np.abs(direction), axis=1)
    sign = np.take_along_axis(direction, axis[:, None], 1)[:, 0] > 0
    move = 1 + 2 * axis + sign  # 1 left, 2 right, 3 down, 4 up
    space = env.action_space(group)
    if isinstance(space, Box):
        actions = 0.3 * rng.random((len(move), *space.shape), dtype=np.float32)
        actions[np.arange(len(move)), move] = 1.0
        return actions
    comm = rng.integers(0, space.n // 5, len(move))
    return move + 5 * comm


def chase_policy(pursuers: str, prey: str) -> Policy:
    """``pursuers`` head for the nearest agent of group ``prey``; everyone else acts at random.

    Random actions rarely bring predator and prey into contact within 25 steps; chasing makes the
    collision rewards and the stiff contact forces happen in most episodes.
    """

    def policy(env: Any, ref: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
        actions = random_actions(env, rng)
        world = {a.name: a.state.p_pos for a in ref.unwrapped.world.agents}
        hunter = np.array([world[n] for n in env.groups[pursuers]])
        hunted = np.array([world[n] for n in env.groups[prey]])
        delta = hunted[None] - hunter[:, None]  # [P, Q, 2]
        nearest = np.argmin(np.linalg.norm(delta, axis=-1), axis=1)
        actions[pursuers] = toward(env, pursuers, delta[np.arange(len(hunter)), nearest], rng)
        return actions

    return policy


@dataclasses.dataclass
class EpisodeReport:
    max_error: float = 0.0
    errors: list[float] = dataclasses.field(default_factory=list)
    """Largest absolute obs/reward error at every step."""
    ref_rewards: list[dict[str, float]] = dataclasses.field(default_factory=list)
    """mpe2's rewards at every step, for tests that check which reward terms the episode exercised."""
    probes: list[Any] = dataclasses.field(default_factory=list)
    """``probe(ref)`` after every step."""


def run_episode(
    h: Harness,
    seed: int,
    mode: Mode,
    *,
    perturb_params: Callable[[Any], Any] = lambda p: p,
    tamper: Tamper = lambda ts: ts,
    perturb_reference: Callable[[Any], None] = lambda ref: None,
    probe: Callable[[Any], Any] = lambda ref: None,
    policy: Policy = random_policy,
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
        actions = policy(h.env, h.ref, rng)
        if mode == "injected":
            state, _ = state_from_mpe2(h.ref, h.env)
        ours = {group: jnp.asarray(a) for group, a in actions.items()}
        state, timestep = h.step(key, state, ours, params)
        obs, rewards, terminations, truncations, _ = h.ref.step(actions_to_mpe2(h.env, actions))
        context = f"{mode} seed={seed} step={t + 1}"
        error = assert_timestep_matches(
            h.env, tamper(timestep), obs, rewards, terminations, truncations, atol=atol, context=context
        )
        report.max_error = max(report.max_error, error)
        report.errors.append(error)
        report.ref_rewards.append(dict(rewards))
        report.probes.append(probe(h.ref))
    if h.ref.agents:
        raise AssertionError("mpe2 did not end the episode where ours truncates")
    return report


def check_initial_observations(h: Harness, seeds: range) -> None:
    """Observations of the injected reset state equal mpe2's reset observations."""
    for seed in seeds:
        ref_obs, _ = h.ref.reset(seed=seed)
        state, _ = state_from_mpe2(h.ref, h.env)
        assert state.pos.dtype == jnp.float32 and int(state.step) == 0
        timestep = TimeStep(h.observe(state), {}, {}, {}, {}, {})
        assert_timestep_matches(h.env, timestep, ref_obs, atol=RESET_ATOL, context=f"reset seed={seed}")


def check_jaxmarl_spaces(env: Any, jaxmarl_id: str, **jaxmarl_kwargs: Any) -> None:
    """JaxMARL's per-agent observation shapes and action sizes equal our groups' spaces."""
    jaxmarl = pytest.importorskip("jaxmarl")
    theirs = jaxmarl.make(jaxmarl_id, **jaxmarl_kwargs)
    assert list(theirs.agents) == list(env.agents)
    for group, names in env.groups.items():
        ours_obs, ours_action = env.observation_space(group), env.action_space(group)
        for name in names:
            assert tuple(theirs.observation_space(name).shape) == ours_obs.shape, name
            their_action = theirs.action_space(name)
            if isinstance(ours_action, Box):
                assert tuple(their_action.shape) == ours_action.shape, name
            else:
                assert int(their_action.n) == ours_action.n, name


# ------------------------------------------------------------------------------------------------------
# simple_tag


def tag_harness_uncached(world: str, continuous: bool, max_cycles: int = 25) -> Harness:
    return make_harness(
        simple_tag_v3.parallel_env, continuous_actions=continuous, max_cycles=max_cycles, **WORLDS[world]
    )


tag_harness = functools.cache(tag_harness_uncached)
"""Shared, unmutated pairs: one compilation per configuration for the whole file."""


def collision_gap(ref: Any) -> float:
    """Smallest ``|dist - (size_good + size_adversary)|`` over (good, adversary) pairs, in mpe2's world."""
    agents = ref.unwrapped.world.agents
    gaps = [
        abs(np.linalg.norm(g.state.p_pos - a.state.p_pos) - (g.size + a.size))
        for g in agents
        if not g.adversary
        for a in agents
        if a.adversary
    ]
    return float(min(gaps))


@pytest.mark.parametrize(("world", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_initial_observations_match(world: str, continuous: bool) -> None:
    check_initial_observations(tag_harness(world, continuous), SEEDS)


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(("world", "continuous"), CONFIGS, ids=CONFIG_IDS)
def test_episode_matches_mpe2(world: str, continuous: bool, mode: Mode) -> None:
    h = tag_harness(world, continuous)
    chase = chase_policy("adversaries", "agents")
    reports = [run_episode(h, seed, mode, probe=collision_gap, policy=chase) for seed in SEEDS]
    assert h.traces == [1], "our step was retraced inside the episode loop"
    rewards = [r for report in reports for r in report.ref_rewards]
    # The episodes must exercise both reward terms, or parity would say nothing about them.
    assert any(r["adversary_0"] > 0 for r in rewards), "no adversary caught a good agent"
    assert any(r["agent_0"] % 10 != 0 for r in rewards), "no good agent met the boundary penalty"
    for seed, report in zip(SEEDS, reports, strict=True):
        for step, (gap, error) in enumerate(zip(report.probes, report.errors, strict=True), 1):
            tie = f"seed {seed} step {step}: collision near-tie {gap:.2g}, error {error:.2g}"
            assert gap > DISTANCE_ERROR_FACTOR * error, tie


def test_jaxmarl_spaces_match() -> None:
    check_jaxmarl_spaces(tag_harness("default", False).env, "MPE_simple_tag_v3")
    check_jaxmarl_spaces(tag_harness("default", True).env, "MPE_simple_tag_v3", action_type="Continuous")


def test_per_agent_accel_and_max_speed() -> None:
    env = tag_harness("default", False).env
    np.testing.assert_array_equal(np.asarray(env._accel(env.default_params)).ravel(), [3.0, 3.0, 3.0, 4.0])
    np.testing.assert_allclose(env.entities.max_speed[:4], [1.0, 1.0, 1.0, 1.3])


# Negative controls: each must make the comparison raise, proving its assertions run.


def swap_adversary_velocity(ts: TimeStep) -> TimeStep:
    obs = ts.obs["adversaries"]
    return ts._replace(obs={**ts.obs, "adversaries": obs.at[:, [0, 1]].set(obs[:, [1, 0]])})


def shift_good_reward(amount: float) -> Tamper:
    return lambda ts: ts._replace(reward={**ts.reward, "agents": ts.reward["agents"] + amount})


def flip_truncation(ts: TimeStep) -> TimeStep:
    return ts._replace(truncated={**ts.truncated, "adversaries": ~ts.truncated["adversaries"]})


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize(
    "tamper",
    [swap_adversary_velocity, shift_good_reward(1e-3), flip_truncation],
    ids=["obs", "reward", "truncation"],
)
def test_negative_control_tampered_output(mode: Mode, tamper: Tamper) -> None:
    with pytest.raises(AssertionError, match="differs|!="):
        run_episode(tag_harness("default", False), 0, mode, tamper=tamper)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("adversary_collision_reward", 9.0, r"reward\[adversaries\]"),
        ("boundary_weight", 1.01, r"reward\[agents\]"),
        ("damping", 0.26, r"obs\[adversaries\]"),
    ],
)
def test_negative_control_perturbed_params(field: str, value: float, match: str) -> None:
    h, chase = tag_harness("default", True), chase_policy("adversaries", "agents")
    with pytest.raises(AssertionError, match=match):
        for seed in SEEDS:
            run_episode(
                h, seed, "injected", perturb_params=lambda p: p.replace(**{field: value}), policy=chase
            )


def test_unsupported_references_raise() -> None:
    for option in [{"curriculum": True}, {"terminate_on_success": True}, {"num_agent_neighbors": 1}]:
        with pytest.raises(ValueError, match=next(iter(option))):
            make_matching_env(simple_tag_v3.parallel_env(**option))
    ref = simple_tag_v3.parallel_env()
    ref.reset(seed=0)
    env = make_matching_env(ref)
    # accel and max_speed are compiled into our env per agent, so a changed reference is refused.
    ref.unwrapped.world.agents[3].accel = 4.5
    with pytest.raises(ValueError, match="accel"):
        state_from_mpe2(ref, env)
    ref.unwrapped.world.agents[3].accel = 4.0
    ref.unwrapped.world.agents[0].max_speed = 1.1
    with pytest.raises(ValueError, match="max_speed"):
        state_from_mpe2(ref, env)
