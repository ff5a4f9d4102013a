"""Live parity of our simple_tag against mpe2's simple_tag_v3: what is particular to the scenario.

The step-by-step comparison is a row of the table in ``test_mpe_parity.py``: both envs take the same
actions for whole episodes (seeds 0..5; the default world and a 2-good, 2-adversary, 1-obstacle world;
discrete and continuous actions). The adversaries chase the nearest good agent and everyone else acts at
random: with purely random actions an adversary rarely touches a good agent within 25 steps, and the
catch reward and the stiff contacts would go untested. Two comparisons run on every step, on
observations, rewards, terminations and truncations:

- **Injected** (strict, ``ATOL = 1e-5``): before each step mpe2's world is copied into our state with
  ``state_from_mpe2``, so any error is that step's own (float32 against mpe2's float64). Worst
  observed: 3.6e-6.
- **Free-running** (``FREE_ATOL = 5e-4``): our env runs from its own state for the whole episode.
  float32 rounding grows through the soft contacts (chasers pressing on their prey and on the 0.2
  obstacles; the gap between two touching bodies grows ~1.66x per step, see
  ``test_mpe_simple_spread_parity.py``). Worst observed: 1.3e-4 on these seeds, 4.2e-4 on seeds 0..11.
  With jax's x64 mode and float64 entity constants, the same free-running discrete episodes agree with
  mpe2 to 5e-15, so the drift is precision, not logic.

Rewards jump by 10 when an adversary and a good agent come into contact, so rounding could flip a
collision at a near-tie. Every step records the closest approach of any (good, adversary) pair to the
collision distance in mpe2's world and requires it to exceed ``DISTANCE_ERROR_FACTOR`` times that
step's largest error, which proves rounding did not decide a collision (worst ratio on these seeds:
190; one step of seeds 6..11 comes within 2.5, which this check would refuse); a flip would also fail
the reward comparison loudly. The boundary penalty is continuous.

The table's negative controls perturb our env or its output; ``test_mpe_simple_world_comm_parity.py``
reuses this scenario's tolerances.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from mpe_scenario_harness import (
    INJECTED,
    Control,
    EpisodeReport,
    Policy,
    assert_no_near_ties,
    cached_harness,
    check_jaxmarl_spaces,
    kind,
    output_controls,
    params,
    random_actions,
    refuses_changed,
    swap_obs,
    toward,
)

from jaxmarl_suite.environments.mpe.parity import make_matching_env

REFERENCE = "mpe2.simple_tag_v3"
simple_tag_v3 = pytest.importorskip(REFERENCE, reason="mpe2 is the parity reference")

FREE_ATOL = 5e-4
"""Free-running tolerance: float32 rounding amplified by contacts (see the module docstring)."""
DISTANCE_ERROR_FACTOR = 3.0
"""A distance between two bodies moves by at most ``2 * sqrt(2)`` times the largest position error, and
every agent's position is in its observation (landmarks do not move): so a threshold rule whose gap in
mpe2 exceeds this factor times the step's largest obs error cannot have been decided by rounding."""
SEEDS = range(6)
WORLDS = {"default": {}, "2v2": {"num_good": 2, "num_adversaries": 2, "num_obstacles": 1}}


def chase_policy(pursuers: str, prey: str) -> Policy:
    """``pursuers`` head for the nearest agent of group ``prey``; everyone else acts at random.

    Random actions rarely bring predator and prey into contact within 25 steps; chasing makes the
    collision rewards and the stiff contact forces happen in most episodes.
    """

    def policy(env: Any, ref: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
        actions = random_actions(env, rng, silence_prob=None)
        world = {a.name: a.state.p_pos for a in ref.unwrapped.world.agents}
        hunter = np.array([world[n] for n in env.groups[pursuers]])
        hunted = np.array([world[n] for n in env.groups[prey]])
        delta = hunted[None] - hunter[:, None]  # [P, Q, 2]
        nearest = np.argmin(np.linalg.norm(delta, axis=-1), axis=1)
        actions[pursuers] = toward(env, pursuers, delta[np.arange(len(hunter)), nearest], rng)
        return actions

    return policy


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


def catches_and_penalties(seeds: Sequence[int], reports: list[EpisodeReport]) -> None:
    rewards = [r for report in reports for r in report.ref_rewards]
    # The episodes must exercise both reward terms, or parity would say nothing about them.
    assert any(r["adversary_0"] > 0 for r in rewards), "no adversary caught a good agent"
    assert any(r["agent_0"] % 10 != 0 for r in rewards), "no good agent met the boundary penalty"
    assert_no_near_ties(seeds, reports, lambda gap: gap, DISTANCE_ERROR_FACTOR, "collision near-tie")


EPISODE = {"policy": chase_policy("adversaries", "agents"), "probe": collision_gap}
"""The table rows' episode keywords."""
CONFIGS = {
    f"{world}-{kind(c)}": {"continuous_actions": c, **arguments}
    for world, arguments in WORLDS.items()
    for c in (False, True)
}
"""The table's rows: mpe2's constructor arguments by configuration."""
ROW = {
    "seeds": SEEDS,
    "free_atol": FREE_ATOL,
    "episode": EPISODE,
    "check_episodes": catches_and_penalties,
}
CONTROLS = {
    "default-discrete": output_controls(
        ("adversaries", swap_obs("adversaries", [0], [1])), ("agents", 1e-3), "adversaries"
    ),
    # Catches are rare per seed: each perturbation must show on some seed.
    "default-continuous": (
        Control("catch", r"reward\[adversaries\]", params(adversary_collision_reward=9.0), INJECTED, SEEDS),
        Control("boundary", r"reward\[agents\]", params(boundary_weight=1.01), INJECTED, SEEDS),
        Control("damping", r"obs\[adversaries\]", params(damping=0.26), INJECTED, SEEDS),
    ),
}


def test_jaxmarl_spaces_match() -> None:
    check_jaxmarl_spaces(cached_harness(REFERENCE, continuous_actions=False).env, "MPE_simple_tag_v3")
    continuous = cached_harness(REFERENCE, continuous_actions=True).env
    check_jaxmarl_spaces(continuous, "MPE_simple_tag_v3", action_type="Continuous")


def test_per_agent_accel_and_max_speed() -> None:
    env = cached_harness(REFERENCE, continuous_actions=False).env
    np.testing.assert_array_equal(np.asarray(env._accel(env.default_params)).ravel(), [3.0, 3.0, 3.0, 4.0])
    np.testing.assert_allclose(env.entities.max_speed[:4], [1.0, 1.0, 1.0, 1.3])


def test_unsupported_references_raise() -> None:
    for option in [{"curriculum": True}, {"terminate_on_success": True}, {"num_agent_neighbors": 1}]:
        with pytest.raises(ValueError, match=next(iter(option))):
            make_matching_env(simple_tag_v3.parallel_env(**option))
    ref = simple_tag_v3.parallel_env()
    ref.reset(seed=0)
    # accel and max_speed are compiled into our env per agent, so a changed reference is refused.
    agents = ref.unwrapped.world.agents
    refuses_changed(ref, make_matching_env(ref), [(agents[3], "accel", 4.5), (agents[0], "max_speed", 1.1)])
