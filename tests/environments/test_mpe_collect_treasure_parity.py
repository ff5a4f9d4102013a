"""Live parity of our collect_treasure against mpe2's collect_treasure_v1: what is particular to it.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``. Both envs take the same
random actions for whole episodes (discrete and continuous actions, the default world and a crowded one
with more treasures, several seeds), plus a scripted episode that starts from a world arranged so that
every event happens on the first step: two free collectors on one treasure (the lower index takes it),
one collector touching two treasures (it takes only the first), a pickup and a delivery in the same
step, a plain delivery, overlapping collectors, and a dead treasure that respawns.

**Respawn draws.** A dead treasure respawns at the next step at a random place with a random type; mpe2
draws these from its NumPy generator and we draw from the step's JAX keys, so the draws cannot agree.
After each step in which a treasure respawned (it was dead before the step), the test copies the
reference's post-step position and type of exactly those treasures into our post-step state and
recomputes our observations and rewards from it with the env's own ``observe`` and ``rewards``. Every
other part of the post-step state (which treasures respawn, pickups, deliveries, holdings, the event
reward) is ours and is compared with mpe2's every step (``respawns_injected``, the rows' ``after_step``).
The table's negative control ``respawn-not-injected`` shows that without this injection the comparison
fails.

Two comparisons run on every step: **injected** (mpe2's world copied into our state before each step, so
each step's error is its own) and **free-running** (our env runs from its own state). Both use
``ATOL = 1e-5``: nothing collides physically here (ghost agents), so there are no stiff contacts to
amplify float32 rounding, and the worst free-running error observed is 5e-7. The pickup, delivery and
overlap tests compare distances with radii sums; a rounding flip at a near-tie would fail loudly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mpe_scenario_harness import (
    ATOL,
    INJECTED,
    AfterStep,
    Control,
    EpisodeReport,
    Harness,
    cached_harness,
    params,
    run_episode,
    swap_obs,
)

from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.environments.mpe.collect_treasure import CollectTreasure
from jaxmarl_suite.environments.mpe.parity import make_matching_env, state_from_mpe2
from jaxmarl_suite.environments.mpe.physics import MPEState

REFERENCE = "mpe2.collect_treasure_v1"
collect_treasure_v1 = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")

SEEDS = range(6)
CONFIGS = {  # the table's rows: mpe2's constructor arguments by configuration
    "default-discrete": {},
    "default-continuous": {"continuous_actions": True},
    "crowded-discrete": {"num_collectors": 4, "num_deposits": 3, "num_treasures": 12},
}


def reference_extra(raw: Any) -> dict[str, np.ndarray]:
    world = raw.world
    holding = [-1 if a.holding is None else a.holding for a in world.agents if a.collector]
    return {
        "holding": np.array(holding, np.int32),
        "alive": np.array([treasure.alive for treasure in world.landmarks]),
        "treasure_type": np.array([treasure.type for treasure in world.landmarks], np.int32),
    }


def respawns_injected(inject: bool = True) -> AfterStep:
    """The rows' ``after_step``: copy mpe2's draws for the treasures that respawned in this step (dead
    before it) into our post-step state and recompute our observations and rewards from it (unless
    ``inject`` is False, the negative control); then compare holdings, liveness and types with mpe2's."""

    def after_step(
        h: Harness, before: MPEState, state: MPEState, timestep: TimeStep, params: Any, context: str
    ) -> tuple[MPEState, TimeStep]:
        dead_before = ~np.asarray(before.extra["alive"])
        if inject and dead_before.any():
            world, first = h.ref.unwrapped.world, h.env.num_agents_total
            pos, kinds = np.array(state.pos), np.array(state.extra["treasure_type"])
            for t in np.flatnonzero(dead_before):
                pos[first + t] = world.landmarks[t].state.p_pos
                kinds[t] = world.landmarks[t].type
            extra = {**state.extra, "treasure_type": jnp.asarray(kinds)}
            state = state.replace(pos=jnp.asarray(pos), extra=extra)
            timestep = timestep._replace(obs=h.observe(state), reward=h.rewards(state, params))
        for name, expected in reference_extra(h.ref.unwrapped).items():
            if not np.array_equal(np.asarray(state.extra[name]), expected):
                raise AssertionError(f"{context}: {name} {state.extra[name]} != mpe2 {expected}")
        return state, timestep

    return after_step


def treasure_events(ref: Any) -> dict[str, int]:
    """mpe2's pickups and deliveries in the last step, and the treasures now dead (each respawns on the
    next step: ``respawn_prob`` other than 1 is refused)."""
    scenario, world = ref.unwrapped.scenario, ref.unwrapped.world
    return {
        "pickups": round(scenario._cached_global_collecting / 5.0),
        "deliveries": round(scenario._cached_global_deposit / 5.0),
        "dead": sum(not treasure.alive for treasure in world.landmarks),
    }


def count(report: EpisodeReport, event: str) -> int:
    """How often ``event`` happened in the episode (respawns: treasures dead after a step but the last)."""
    if event == "respawns":
        return sum(probe["dead"] for probe in report.probes[:-1])
    return sum(probe[event] for probe in report.probes)


def pickups_and_respawns(seeds: Sequence[int], reports: list[EpisodeReport]) -> None:
    # Random play must reach the pickup and respawn paths, or they would go untested here.
    assert sum(count(r, "pickups") for r in reports) > 0 and sum(count(r, "respawns") for r in reports) > 0


def holding_swapped(state: MPEState) -> MPEState:
    return state.replace(extra={**state.extra, "holding": state.extra["holding"].at[0].set(1)})


EPISODE = {"after_step": respawns_injected(), "probe": treasure_events}
"""The table rows' episode keywords."""
ROW = {"seeds": SEEDS, "episode": EPISODE}
ROW_OPTIONS = {"crowded-discrete": {"check_episodes": pickups_and_respawns}}


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


NEAREST, SECOND = list(range(6, 14)), list(range(14, 22))
"""The nearest and second-nearest other agent in the collectors' observations: 8 entries each (relative
position, velocity, 2K encoding) after position, velocity and holding (K=2)."""
CONTROLS = {
    "default-discrete": (
        Control(
            "obs-order", r"obs\[collectors\]: differs", {"tamper": swap_obs("collectors", NEAREST, SECOND)}
        ),
        Control("shaping", r"reward\[collectors\]: differs", params(shaping_weight=0.1 + 1e-3)),
        Control(
            "deposit",
            r"reward\[collectors\]: differs",
            {"perturb_reference": arrange_events, **params(deposit_reward=5.5)},
        ),
        Control("holding", "holding|differs", {"perturb_state": holding_swapped}, INJECTED),
        # Without copying mpe2's respawn draws our respawned treasures sit elsewhere, and that is caught.
        Control(
            "respawn-not-injected",
            "differs|treasure_type",
            {"perturb_reference": arrange_events, "after_step": respawns_injected(inject=False)},
            INJECTED,
        ),
    )
}


def test_arranged_events_happen() -> None:
    """The scripted world triggers each case on step 1, on both sides, in both modes."""
    h = cached_harness(REFERENCE, **CONFIGS["default-discrete"])
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
        report = run_episode(h, 0, mode, ATOL, perturb_reference=arrange_events, **EPISODE)
        respawns = 1 + count(report, "respawns")  # treasure 4 was arranged dead: it respawns on step 1
        assert count(report, "pickups") >= 3 and count(report, "deliveries") >= 2 and respawns >= 4


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
