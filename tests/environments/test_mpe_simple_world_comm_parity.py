"""Live parity of our simple_world_comm against mpe2's simple_world_comm_v3: what is particular to it.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``, by the method of
``test_mpe_simple_tag_parity.py`` (whose tolerances this file shares): whole episodes (seeds 0..5) on
the default world, on a world with one plain adversary, three good agents, three
forests and one food, and on a leader-only world without forests (no ``adversaries`` group), with
discrete and continuous actions. Adversaries mostly chase the nearest good agent and good agents mostly
head for the nearest food, and the leader's messages are random: random play rarely catches, eats or
meets inside a forest within 25 steps, and those are the rules under test.

- **Injected** (``ATOL = 1e-5``): mpe2's world is copied into our state before every step. Worst
  observed: 1.9e-6 (4.7e-6 on seeds 0..11).
- **Free-running** (``FREE_ATOL = 5e-4``, simple_tag's): our env runs from its own state, and float32
  rounding grows through the soft contacts as in simple_tag. Worst observed: 1.3e-4 (1.6e-4 on seeds
  0..11). With jax's x64 mode and float64 entity constants, free-running discrete episodes of all
  three worlds agree with mpe2's positions and velocities to 2e-14, so the drift is precision, not
  logic.

Three rules switch discontinuously on a distance: catches (reward 5), eating (reward 2), and being in
a forest (which hides other agents' positions and velocities and flips a +-1 flag). Every step records
the closest approach of any such pair to its threshold in mpe2's world and requires it to exceed
``DISTANCE_ERROR_FACTOR`` times that step's largest error, which proves rounding did not decide a
switch (worst ratio seen: 6.6); a flip would also fail the comparison loudly. The table's negative
controls tamper with the leader's messages, the forest flags, a reward and a flag, and perturb params.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from mpe_scenario_harness import (
    ATOL,
    INJECTED,
    Control,
    EpisodeReport,
    Policy,
    assert_no_near_ties,
    cached_harness,
    check_jaxmarl_spaces,
    flip_truncation,
    kind,
    params,
    random_actions,
    refuses_changed,
    reward_off,
    run_episode,
    set_obs,
    swap_obs,
    toward,
)
from test_mpe_simple_tag_parity import DISTANCE_ERROR_FACTOR, FREE_ATOL

from jaxmarl_suite.environments.mpe.parity import make_matching_env

REFERENCE = "mpe2.simple_world_comm_v3"
simple_world_comm_v3 = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")

SEEDS = range(6)
WORLDS = {
    "default": {},
    "forests": {"num_adversaries": 2, "num_good": 3, "num_forests": 3, "num_food": 1, "num_obstacles": 2},
    "leader-only": {"num_adversaries": 1, "num_forests": 0},
}
ADVERSARY_GROUPS = ("leadadversary", "adversaries")


def world_comm_harness(world: str, continuous: bool) -> Any:
    """The table row's shared pair for ``world``."""
    return cached_harness(REFERENCE, continuous_actions=continuous, **WORLDS[world])


def nearest_direction(sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """``[S, 2]`` direction from each source to its nearest target."""
    delta = targets[None] - sources[:, None]
    nearest = np.argmin(np.linalg.norm(delta, axis=-1), axis=1)
    return delta[np.arange(len(sources)), nearest]


def hunt_and_forage(purposeful: float = 0.75) -> Policy:
    """Adversaries chase the nearest good agent and good agents seek the nearest food, each with
    probability ``purposeful`` per step (a random action otherwise); the leader's messages are random.

    The random steps keep chasers of one prey from stacking onto each other: two colliding bodies with
    near-coincident centres make the contact direction ill-conditioned in float32
    (``test_stacked_chasers_are_ill_conditioned``).
    """

    def policy(env: Any, ref: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
        actions = random_actions(env, rng, silence_prob=None)
        world = ref.unwrapped.world
        good = np.array([a.state.p_pos for a in world.agents if not a.adversary])
        food = np.array([f.state.p_pos for f in world.food])
        positions = {a.name: a.state.p_pos for a in world.agents}
        for group, names in env.groups.items():
            sources = np.array([positions[n] for n in names])
            direction = nearest_direction(sources, food if group == "agents" else good)
            chosen = rng.random(len(names)) < purposeful
            mask = chosen.reshape(-1, *[1] * (actions[group].ndim - 1))
            actions[group] = np.where(mask, toward(env, group, direction, rng), actions[group])
        return actions

    return policy


HUNT_AND_FORAGE = hunt_and_forage()


def gaps(a: Any, b: Any) -> float:
    return abs(float(np.linalg.norm(a.state.p_pos - b.state.p_pos)) - (a.size + b.size))


def switch_probe(ref: Any) -> dict[str, Any]:
    """Counts of the discontinuous rules in mpe2's world, and the closest approach to any threshold."""
    world = ref.unwrapped.world
    good = [a for a in world.agents if not a.adversary]
    adversaries = [a for a in world.agents if a.adversary]
    scenario = ref.unwrapped.scenario
    in_forest = [[scenario.is_collision(a, f) for f in world.forests] for a in world.agents]
    hidden = sum(
        not (any(x and y for x, y in zip(mine, theirs, strict=True)) or (not any(mine) and not any(theirs)))
        for i, mine in enumerate(in_forest)
        for j, theirs in enumerate(in_forest)
        if i != j and not world.agents[i].leader
    )
    pairs = [(g, a) for g in good for a in adversaries]
    pairs += [(g, f) for g in good for f in world.food]
    pairs += [(a, f) for a in world.agents for f in world.forests]
    return {
        "caught": sum(scenario.is_collision(g, a) for g in good for a in adversaries),
        "eating": sum(scenario.is_collision(g, f) for g in good for f in world.food),
        "in_forest": sum(map(any, in_forest)),
        "hidden": hidden,
        "closest": min(gaps(x, y) for x, y in pairs),
    }


def rules_switched(world: str) -> Any:
    """The check on a mode's episodes in ``world``: every switching rule happened, none near a tie."""
    rules = ("caught", "eating") + (("in_forest", "hidden") if WORLDS[world].get("num_forests", 2) else ())

    def check(seeds: Sequence[int], reports: list[EpisodeReport]) -> None:
        probes = [p for report in reports for p in report.probes]
        # The episodes must exercise every switching rule, or parity would say nothing about it.
        for rule in rules:
            assert sum(p[rule] for p in probes) > 0, f"no step had {rule}"
        # Our distances differ from mpe2's by < 3x the step's obs error (obs hold the positions).
        near = "a rule near its threshold"
        assert_no_near_ties(seeds, reports, lambda probe: probe["closest"], DISTANCE_ERROR_FACTOR, near)

    return check


EPISODE = {"policy": HUNT_AND_FORAGE, "probe": switch_probe}
"""The table rows' episode keywords."""
CONFIGS = {
    f"{world}-{kind(c)}": {"continuous_actions": c, **arguments}
    for world, arguments in WORLDS.items()
    for c in (False, True)
}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {"seeds": SEEDS, "free_atol": FREE_ATOL, "episode": EPISODE}
ROW_OPTIONS = {
    f"{world}-{kind(c)}": {"check_episodes": rules_switched(world)} for world in WORLDS for c in (False, True)
}
ADVERSARY_REWARD = r"reward\[adversaries\]|reward\[leadadversary\]"
CONTROLS = {
    "default-discrete": (
        Control(
            "comm",
            r"obs\[adversaries\]: differs",
            {"tamper": swap_obs("adversaries", [-4], [-3])},
            seeds=SEEDS,
        ),
        # Good agents' forest flags read "outside" everywhere (the default world: 24 + 2 flags).
        Control(
            "forest",
            r"obs\[agents\]: differs",
            {"tamper": set_obs("agents", slice(24, 26), -1.0)},
            seeds=SEEDS,
        ),
        reward_off("leadadversary", 1e-2),
        Control("truncation", r"truncated\[agents\]: ", {"tamper": flip_truncation("agents")}),
    ),
    # Each rule is rare per seed: each perturbation must show on some seed.
    "default-continuous": (
        Control("food", r"reward\[agents\]", params(food_reward=2.5), INJECTED, SEEDS),
        Control("chase", ADVERSARY_REWARD, params(chase_distance_weight=0.11), INJECTED, SEEDS),
        Control("catch", ADVERSARY_REWARD, params(adversary_collision_reward=4.0), INJECTED, SEEDS),
        Control("damping", r"obs\[", params(damping=0.26), INJECTED, SEEDS),
    ),
}


def test_jaxmarl_spaces_match() -> None:
    check_jaxmarl_spaces(
        world_comm_harness("default", False).env, "MPE_simple_world_comm_v3", action_type="Discrete"
    )
    check_jaxmarl_spaces(world_comm_harness("default", True).env, "MPE_simple_world_comm_v3")


def test_groups_and_spaces() -> None:
    env = world_comm_harness("default", False).env
    assert env.groups == {
        "leadadversary": ("leadadversary_0",),
        "adversaries": ("adversary_0", "adversary_1", "adversary_2"),
        "agents": ("agent_0", "agent_1"),
    }
    assert [env.action_space(g).n for g in env.groups] == [20, 5, 5]
    assert "adversaries" not in world_comm_harness("leader-only", False).env.groups


def test_stacked_chasers_are_ill_conditioned() -> None:
    """Why the chase policy mixes in random steps.

    With pure chasing, the forests world's seed 3 reaches a step where the leader and adversary_0, both
    on agent_1, are 0.0036 apart. Their contact force (about 15) points along that offset, which the
    float32 cast of the positions (about 3e-8) turns by about 1e-5 rad, so one step's velocity differs
    from mpe2 by 1.5e-5 > ``ATOL``: float32 cannot do better from those positions. If this stops
    raising, the episode changed; find another stacked case or delete the test.
    """
    h, pure = world_comm_harness("forests", False), hunt_and_forage(purposeful=1.0)
    with pytest.raises(AssertionError, match=r"step=20: obs\[leadadversary\]: differs from mpe2 by 1.5"):
        run_episode(h, 3, "injected", ATOL, policy=pure)
    run_episode(h, 3, "injected", 1e-4, policy=pure)


def test_reference_with_other_static_constants_is_refused() -> None:
    ref = simple_world_comm_v3.parallel_env()
    ref.reset(seed=0)
    world = ref.unwrapped.world
    refuses_changed(
        ref, make_matching_env(ref), [(world.forests[0], "size", 0.25), (world.agents[0], "accel", 3.5)]
    )
