"""Live parity of our collect_treasure against mpe2's collect_treasure_v1, step by step.

Both envs take the same random actions for whole episodes (discrete and continuous actions, the default
world and a crowded one with more treasures, several seeds), plus a scripted episode that starts from a
world arranged so that every event happens on the first step: two free collectors on one treasure (the
lower index takes it), one collector touching two treasures (it takes only the first), a pickup and a
delivery in the same step, a plain delivery, overlapping collectors, and a dead treasure that respawns.

**Respawn draws.** A dead treasure respawns at the next step at a random place with a random type; mpe2
draws these from its NumPy generator and we draw from the step's JAX keys, so the draws cannot agree.
After each step in which a treasure respawned (it was dead before the step), the test copies the
reference's post-step position and type of exactly those treasures into our post-step state and
recomputes our observations and rewards from it with the env's own ``observe`` and ``rewards``. Every
other part of the post-step state (which treasures respawn, pickups, deliveries, holdings, the event
reward) is ours and is compared with mpe2's every step. ``test_negative_control_respawn_not_injected``
shows that without this injection the comparison fails.

Two comparisons run on every step: **injected** (mpe2's world copied into our state before each step, so
each step's error is its own) and **free-running** (our env runs from its own state). Both use
``ATOL = 1e-5``: nothing collides physically here (ghost agents), so there are no stiff contacts to
amplify float32 rounding, and the worst free-running error observed is 5e-7. The pickup, delivery and
overlap tests compare distances with radii sums; a rounding flip at a near-tie would fail loudly.
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
from mpe_scenario_harness import random_actions, reset_matches

from jaxmarl_suite.core.types import GroupDict, TimeStep
from jaxmarl_suite.environments.mpe.collect_treasure import CollectTreasure
from jaxmarl_suite.environments.mpe.parity import (
    actions_to_mpe2,
    assert_timestep_matches,
    make_matching_env,
    observe,
    state_from_mpe2,
)
from jaxmarl_suite.environments.mpe.physics import MPEParams, MPEState

collect_treasure_v1 = pytest.importorskip("mpe2.collect_treasure_v1", reason="mpe2 is the parity reference")

ATOL = 1e-5
"""Tolerance on observations and rewards, injected and free-running (see the module docstring)."""
RESET_ATOL = 1e-6
SEEDS = range(6)
CONFIGS = {
    "default-discrete": {},
    "default-continuous": {"continuous_actions": True},
    "crowded-discrete": {"num_collectors": 4, "num_deposits": 3, "num_treasures": 12},
}

Mode = Literal["injected", "free"]
Tamper = Callable[[TimeStep], TimeStep]


@dataclasses.dataclass
class Harness:
    """One reference env and our matching env, with our step, observe and rewards compiled once."""

    ref: Any
    env: CollectTreasure
    step: Callable[..., tuple[MPEState, TimeStep]]
    observe: Callable[[MPEState], GroupDict]
    rewards: Callable[[MPEState, MPEParams], GroupDict]


def make_harness(**kwargs: Any) -> Harness:
    ref = collect_treasure_v1.parallel_env(**kwargs)
    env = make_matching_env(ref)
    assert isinstance(env, CollectTreasure)

    def rewards(state: MPEState, params: MPEParams) -> GroupDict:
        batched = jax.tree.map(lambda x: x[..., None], state)
        return {group: value[..., 0] for group, value in env.rewards(batched, params).items()}

    return Harness(ref, env, jax.jit(env.step), jax.jit(functools.partial(observe, env)), jax.jit(rewards))


@functools.cache
def harness(config: str) -> Harness:
    """Shared, unmutated pairs: one compilation per configuration for the whole file."""
    return make_harness(**CONFIGS[config])


def reference_extra(raw: Any) -> dict[str, np.ndarray]:
    world = raw.world
    holding = [-1 if a.holding is None else a.holding for a in world.agents if a.collector]
    return {
        "holding": np.array(holding, np.int32),
        "alive": np.array([treasure.alive for treasure in world.landmarks]),
        "treasure_type": np.array([treasure.type for treasure in world.landmarks], np.int32),
    }


def inject_respawns(h: Harness, state: MPEState, dead_before: np.ndarray) -> MPEState:
    """Our post-step state with the reference's draws for the treasures that respawned in this step."""
    world, first = h.ref.unwrapped.world, h.env.num_agents_total
    pos, kinds = np.array(state.pos), np.array(state.extra["treasure_type"])
    for t in np.flatnonzero(dead_before):
        pos[first + t] = world.landmarks[t].state.p_pos
        kinds[t] = world.landmarks[t].type
    return state.replace(pos=jnp.asarray(pos), extra={**state.extra, "treasure_type": jnp.asarray(kinds)})


@dataclasses.dataclass
class EpisodeReport:
    max_error: float = 0.0
    pickups: int = 0
    deliveries: int = 0
    respawns: int = 0


def run_episode(
    h: Harness,
    seed: int,
    mode: Mode,
    *,
    arrange: Callable[[Any], None] = lambda ref: None,
    perturb_params: Callable[[Any], Any] = lambda p: p,
    perturb_state: Callable[[MPEState], MPEState] = lambda s: s,
    tamper: Tamper = lambda ts: ts,
    respawn_injection: bool = True,
) -> EpisodeReport:
    """Step mpe2 and our env side by side for a whole episode; raise AssertionError on any mismatch.

    ``arrange`` edits the reference world right after its reset (both sides then start from it).
    """
    h.ref.reset(seed=seed)
    arrange(h.ref)
    raw = h.ref.unwrapped
    state, params = state_from_mpe2(h.ref, h.env)
    state, params = perturb_state(state), perturb_params(params)
    rng = np.random.default_rng(seed)
    report = EpisodeReport()
    for t in range(raw.max_cycles):
        actions = random_actions(h.env, rng)
        if mode == "injected":
            state = perturb_state(state_from_mpe2(h.ref, h.env)[0])
        dead_before = ~np.asarray(state.extra["alive"])
        key = jax.random.fold_in(jax.random.key(seed), t)
        state, timestep = h.step(key, state, {g: jnp.asarray(a) for g, a in actions.items()}, params)
        obs, rewards, terminations, truncations, _ = h.ref.step(actions_to_mpe2(h.env, actions))
        context = f"{mode} seed={seed} step={t + 1}"
        if respawn_injection and dead_before.any():
            state = inject_respawns(h, state, dead_before)
            timestep = timestep._replace(obs=h.observe(state), reward=h.rewards(state, params))
            report.respawns += int(dead_before.sum())
        for name, expected in reference_extra(raw).items():
            if not np.array_equal(np.asarray(state.extra[name]), expected):
                raise AssertionError(f"{context}: {name} {state.extra[name]} != mpe2 {expected}")
        pickups, deliveries = raw.scenario._cached_global_collecting, raw.scenario._cached_global_deposit
        report.pickups += round(pickups / 5.0)
        report.deliveries += round(deliveries / 5.0)
        report.max_error = max(
            report.max_error,
            assert_timestep_matches(
                h.env, tamper(timestep), obs, rewards, terminations, truncations, atol=ATOL, context=context
            ),
        )
    if h.ref.agents:
        raise AssertionError("mpe2 did not end the episode where ours truncates")
    return report


def arrange_events(ref: Any) -> None:
    """Place entities so that every pickup, delivery and respawn case happens on the first step.

    Velocities are zero after a reset and positions move by the *old* velocity, so the first step's
    post-step logic sees exactly these positions.
    """
    world = ref.unwrapped.world
    collectors = [a for a in world.agents if a.collector]
    deposits = [a for a in world.agents if not a.collector]
    treasures = world.landmarks
    for t, treasure in enumerate(treasures):
        treasure.type = t % len(deposits)
        treasure.state.p_pos = np.array([-0.9 + 0.3 * t, 0.9])
    # Two free collectors touching treasure 0 (and each other): collector 0 takes it.
    collectors[0].state.p_pos = treasures[0].state.p_pos + [0.03, 0.0]
    collectors[1].state.p_pos = treasures[0].state.p_pos - [0.03, 0.0]
    # Collector 2 holds type 0 and touches deposit 0: a plain delivery.
    deposits[0].state.p_pos = np.array([0.0, -0.5])
    collectors[2].holding = 0
    collectors[2].state.p_pos = deposits[0].state.p_pos + [0.1, 0.0]
    # Collector 3 picks up treasure 1 (type 1) while touching deposit 1: pickup and delivery at once.
    treasures[1].state.p_pos = np.array([0.5, -0.5])
    deposits[1].state.p_pos = treasures[1].state.p_pos + [0.0, 0.12]
    collectors[3].state.p_pos = treasures[1].state.p_pos + [0.0, 0.05]
    # Collector 4 touches treasures 2 and 3 and takes only treasure 2.
    treasures[3].state.p_pos = treasures[2].state.p_pos + [0.05, 0.0]
    collectors[4].state.p_pos = treasures[2].state.p_pos + [0.025, 0.02]
    # Collector 5 stays clear of everything.
    collectors[5].state.p_pos = np.array([0.9, 0.0])
    # Treasure 4 is dead, as after a pickup: it respawns on the first step.
    treasures[4].alive = False
    treasures[4].state.p_pos = np.array([-999.0, -999.0])


def test_arranged_events_happen() -> None:
    """The scripted world triggers each case on step 1, on both sides, in both modes."""
    h = harness("default-discrete")
    for mode in ("injected", "free"):
        h.ref.reset(seed=0)
        arrange_events(h.ref)
        state, params = state_from_mpe2(h.ref, h.env)
        no_op = {group: jnp.zeros(len(names), jnp.int32) for group, names in h.env.groups.items()}
        state, _ = h.step(jax.random.key(0), state, no_op, params)
        h.ref.step(dict.fromkeys(h.ref.agents, 0))
        np.testing.assert_array_equal(state.extra["holding"], [0, -1, -1, -1, 0, -1])
        np.testing.assert_array_equal(state.extra["alive"], [False, False, False, True, True, True])
        assert float(state.extra["event_reward"]) == 5.0 * (3 + 2)  # pickups 0, 1, 2; deliveries by 2 and 3
        np.testing.assert_array_equal(reference_extra(h.ref.unwrapped)["holding"], [0, -1, -1, -1, 0, -1])
        report = run_episode(h, 0, mode, arrange=arrange_events)
        assert report.pickups >= 3 and report.deliveries >= 2 and report.respawns >= 4


@pytest.mark.parametrize("config", list(CONFIGS))
def test_initial_observations_match(config: str) -> None:
    h = harness(config)
    for seed in SEEDS:
        reset_matches(h, seed, RESET_ATOL)


@pytest.mark.parametrize("mode", ["injected", "free"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_episode_matches_mpe2(config: str, mode: Mode) -> None:
    h = harness(config)
    reports = [run_episode(h, seed, mode) for seed in SEEDS]
    if config.startswith("crowded"):
        # Random play must reach the pickup and respawn paths, or they would go untested here.
        assert sum(r.pickups for r in reports) > 0 and sum(r.respawns for r in reports) > 0


# Negative controls: each must make the comparison raise, proving its assertions run.


def swap_nearest_others(ts: TimeStep) -> TimeStep:
    """Swap the nearest and second-nearest other agent in the collectors' observations."""
    obs = ts.obs["collectors"]
    width, start = 8, 4 + 2  # per other agent: rel pos, vel, 2K encoding; after pos, vel, holding (K=2)
    first, second = slice(start, start + width), slice(start + width, start + 2 * width)
    swapped = obs.at[:, first].set(obs[:, second]).at[:, second].set(obs[:, first])
    return ts._replace(obs={**ts.obs, "collectors": swapped})


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_observation_order(mode: Mode) -> None:
    with pytest.raises(AssertionError, match=r"obs\[collectors\]: differs"):
        run_episode(harness("default-discrete"), 0, mode, tamper=swap_nearest_others)


@pytest.mark.parametrize("mode", ["injected", "free"])
def test_negative_control_perturbed_reward_constants(mode: Mode) -> None:
    h = harness("default-discrete")
    with pytest.raises(AssertionError, match=r"reward\[collectors\]: differs"):
        run_episode(h, 0, mode, perturb_params=lambda p: p.replace(shaping_weight=0.1 + 1e-3))
    with pytest.raises(AssertionError, match=r"reward\[collectors\]: differs"):
        run_episode(
            h, 0, mode, arrange=arrange_events, perturb_params=lambda p: p.replace(deposit_reward=5.5)
        )


def test_negative_control_falsified_holding() -> None:
    def holding_swapped(state: MPEState) -> MPEState:
        return state.replace(extra={**state.extra, "holding": state.extra["holding"].at[0].set(1)})

    with pytest.raises(AssertionError, match="holding|differs"):
        run_episode(harness("default-discrete"), 0, "injected", perturb_state=holding_swapped)


def test_negative_control_respawn_not_injected() -> None:
    """Without copying mpe2's respawn draws our respawned treasures sit elsewhere, and that is caught."""
    h = harness("default-discrete")
    with pytest.raises(AssertionError, match="differs|treasure_type"):
        run_episode(h, 0, "injected", arrange=arrange_events, respawn_injection=False)


def test_unsupported_references_raise() -> None:
    ref = collect_treasure_v1.parallel_env()
    ref.reset(seed=0)
    ref.unwrapped.world.landmarks[2].respawn_prob = 0.5
    with pytest.raises(ValueError, match="respawn_prob"):
        state_from_mpe2(ref)
    ref = collect_treasure_v1.parallel_env(num_collectors=2, num_deposits=3, num_treasures=4)
    env = make_matching_env(ref)
    assert isinstance(env, CollectTreasure)
    assert (env.num_collectors, env.num_deposits, env.num_treasures) == (2, 3, 4)
    ref.reset(seed=0)
    for group, names in env.groups.items():
        assert env.observation_space(group).shape == ref.observation_space(names[0]).shape
    ref.unwrapped.world.agents[0].max_speed = 2.0
    with pytest.raises(ValueError, match="max_speed"):
        state_from_mpe2(ref, env)
