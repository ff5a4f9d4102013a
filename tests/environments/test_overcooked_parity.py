"""Overcooked against live overcooked-ai 1.1.0, step for step, on all five classic layouts.

Both are stepped with the same random joint actions for whole 400-step episodes, from the layout's start
and from overcooked-ai's random start states (players anywhere, pots with soups, objects in hands), and
compared at every step: positions, orientations, held objects, what is on every counter and pot and how
long it has cooked, sparse and shaped rewards per agent, the end of the episode, and the 26-channel
lossless encoding of both agents. overcooked-ai 1.1.0 has only the new dynamics (a pot cooks when
interacted with); the classic old dynamics (a pot starts by itself at 3 ingredients) are checked against
the same package with upstream's two ``old_dynamics`` changes applied (``OldDynamicsGridworld``).
Negative controls: a perturbed env and the wrong dynamics must fail.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

np.Inf = np.inf  # overcooked-ai 1.1.0 uses np.Inf, which NumPy 2 removed  # noqa: N816
overcooked_mdp = pytest.importorskip("overcooked_ai_py.mdp.overcooked_mdp")
actions_module = pytest.importorskip("overcooked_ai_py.mdp.actions")

from jaxmarl_suite.environments.overcooked import Overcooked  # noqa: E402
from jaxmarl_suite.environments.overcooked.layouts import CLASSIC_GRIDS, OVERCOOKED_AI_NAMES  # noqa: E402
from jaxmarl_suite.environments.overcooked.parity import state_from_overcooked_ai  # noqa: E402

HORIZON = 400
INTERACT_PROBABILITY = 0.35
"""Random joint actions lean on interact, so pots fill, cook and get served within an episode."""
FIELDS = ("position", "orientation", "held", "held_onions", "held_tomatoes", "kind", "onions", "tomatoes",
          "tick", "time")


class OldDynamicsGridworld(overcooked_mdp.OvercookedGridworld):
    """overcooked-ai 1.1.0 with upstream's ``old_dynamics=True`` (HumanCompatibleAI/overcooked_ai master):
    interacting never starts a pot, and a pot holding 3 ingredients starts cooking in the environment
    effects, then ticks in the same step."""

    def soup_to_be_cooked_at_location(self, state, pos):
        return False

    def step_environment_effects(self, state):
        state.timestep += 1
        for obj in state.objects.values():
            if obj.name == "soup":
                if not obj.is_cooking and not obj.is_ready and len(obj.ingredients) == 3:
                    obj.begin_cooking()
                if obj.is_cooking:
                    obj.cook()


def make_mdp(layout: str, old_dynamics: bool):
    """A fresh mdp (overcooked-ai keeps its recipe settings in class attributes: build it just before use)."""
    mdp = overcooked_mdp.OvercookedGridworld.from_layout_name(OVERCOOKED_AI_NAMES[layout])
    if old_dynamics:
        mdp.__class__ = OldDynamicsGridworld
    return mdp


def reference_episode(mdp, start, actions):
    """overcooked-ai's states, rewards and encodings after each of ``actions`` (``[T, 2]`` indices)."""
    state = start
    states, sparse, shaped, encodings = [], [], [], []
    for joint in actions:
        state, info = mdp.get_state_transition(state, tuple(actions_module.Action.INDEX_TO_ACTION[a]
                                                            for a in joint))
        states.append(state)
        sparse.append(info["sparse_reward_by_agent"])
        shaped.append(info["shaped_reward_by_agent"])
        encodings.append(np.stack(mdp.lossless_state_encoding(state, horizon=HORIZON)))
    return states, np.array(sparse, np.float32), np.array(shaped, np.float32), np.array(encodings)


def our_episode(env: Overcooked, params, start, actions):
    """Our states and timesteps after each of ``actions``, in one compiled scan."""

    def body(state, joint):
        state, timestep = env.step(jax.random.PRNGKey(0), state, {"agents": joint}, params)
        return state, (state, timestep)

    return jax.lax.scan(body, start, jnp.asarray(actions, jnp.int32))[1]


_compiled: dict[str, object] = {}


def run_episode(env: Overcooked, mdp, ref_start, actions, params=None) -> Counter:
    """Step both from ``ref_start``; assert equality at every step. Returns counts of the events seen."""
    start, params = state_from_overcooked_ai(mdp, ref_start, env, params)
    key = env.layout.name
    if key not in _compiled:
        _compiled[key] = jax.jit(lambda p, s, a, env=env: our_episode(env, p, s, a))
    states, timesteps = jax.tree.map(np.asarray, _compiled[key](params, start, actions))
    ref_states, sparse, shaped, encodings = reference_episode(mdp, ref_start, actions)
    events: Counter = Counter()
    for t, ref_state in enumerate(ref_states):
        want, _ = state_from_overcooked_ai(mdp, ref_state, env, params)
        for field in FIELDS:
            got = getattr(states, field)[t]
            np.testing.assert_array_equal(got, np.asarray(getattr(want, field)),
                                          err_msg=f"{env.layout.name} step {t}: {field}")
        info = timesteps.info
        np.testing.assert_array_equal(info["sparse_reward"][t], sparse[t], err_msg=f"step {t}: sparse reward")
        np.testing.assert_array_equal(info["shaped_reward"][t], shaped[t], err_msg=f"step {t}: shaped reward")
        np.testing.assert_array_equal(timesteps.reward["agents"][t], np.full(2, sparse[t].sum()),
                                      err_msg=f"step {t}: team reward")
        done = ref_state.timestep >= HORIZON
        np.testing.assert_array_equal(timesteps.truncated["agents"][t], [done, done], err_msg=f"step {t}")
        assert not timesteps.terminated["agents"][t].any()
        np.testing.assert_array_equal(timesteps.obs["agents"][t], encodings[t],
                                      err_msg=f"{env.layout.name} step {t}: lossless encoding")
        events["delivery"] += int(sparse[t].sum() > 0)
        events["shaped"] += int(shaped[t].sum() > 0)
        events["cooking"] += int(any(o.name == "soup" and o.is_cooking for o in ref_state.objects.values()))
    return events


def random_actions(seed: int, steps: int = HORIZON) -> np.ndarray:
    rng = np.random.default_rng(seed)
    moves = rng.integers(0, 5, size=(steps, 2))
    return np.where(rng.random((steps, 2)) < INTERACT_PROBABILITY, 5, moves)


def random_start(mdp, seed: int):
    """overcooked-ai's random start state: players anywhere, pots and hands filled at random."""
    np.random.seed(seed)
    return mdp.get_random_start_state_fn(random_start_pos=True, rnd_obj_prob_thresh=0.6)()


CASES = [
    pytest.param(layout, old, seed, marks=[pytest.mark.slow] if seed > 0 else [],
                 id=f"{layout}-{'old' if old else 'new'}-seed{seed}")
    for layout in CLASSIC_GRIDS for old in (True, False) for seed in (0, 1, 2)
]


@pytest.mark.parametrize("layout, old_dynamics, seed", CASES)
def test_parity_from_the_layout_start_and_from_random_starts(layout: str, old_dynamics: bool,
                                                             seed: int) -> None:
    env = Overcooked(layout, old_dynamics=old_dynamics)
    mdp = make_mdp(layout, old_dynamics)
    run_episode(env, mdp, mdp.get_standard_start_state(), random_actions(seed))
    run_episode(env, mdp, random_start(mdp, seed), random_actions(seed + 100))


def handmade_starts(mdp) -> list:
    """cramped_room states that random play seldom reaches: a ready pot before a dish, soups at the serving
    window (one on the order, one not), and a dish on a counter while a pot cooks."""
    m = overcooked_mdp
    north, south = (0, -1), (0, 1)

    def state(players, objects):
        return m.OvercookedState(players, objects, bonus_orders=[], all_orders=mdp.start_all_orders)

    def soup(position, onions, tomatoes=0, tick=-1, finished=False):
        return m.SoupState.get_soup(position, num_onions=onions, num_tomatoes=tomatoes, cooking_tick=tick,
                                    finished=finished)

    def holding(position, orientation, obj):
        return m.PlayerState(position, orientation, held_object=obj)

    return [
        state([holding((2, 1), north, m.ObjectState("dish", (2, 1))),
               holding((3, 2), south, soup((3, 2), 3, finished=True))],
              {(2, 0): soup((2, 0), 3, finished=True)}),
        state([holding((2, 1), north, m.ObjectState("dish", (2, 1))),
               holding((3, 2), south, soup((3, 2), 1, 1, finished=True))],
              {(2, 0): soup((2, 0), 2, tick=5)}),
        state([m.PlayerState((1, 2), south), holding((2, 1), north, m.ObjectState("onion", (2, 1)))],
              {(2, 0): soup((2, 0), 2), (0, 0): m.ObjectState("dish", (0, 0))}),
        state([m.PlayerState((1, 2), south), holding((3, 1), north, soup((3, 1), 3, finished=True))],
              {(2, 0): soup((2, 0), 1, tick=3)}),
    ]


def handmade_actions(seed: int) -> np.ndarray:
    """Both interact first (pick up, serve, drop), then random play."""
    return np.concatenate([[[5, 5]], random_actions(seed, 80)])


def test_parity_from_handmade_states_with_pickups_and_deliveries() -> None:
    env = Overcooked("cramped_room")
    events: Counter = Counter()
    for old_dynamics in (True, False):
        mdp = make_mdp("cramped_room", old_dynamics)
        env = Overcooked("cramped_room", old_dynamics=old_dynamics)
        for seed, start in enumerate(handmade_starts(mdp)):
            events += run_episode(env, mdp, start, handmade_actions(seed))
    assert events["delivery"] >= 2 and events["shaped"] > 0, events


@pytest.mark.parametrize("change", [{"cook_time": 19}, {"soup_pickup_reward": 4.0},
                                    {"placement_in_pot_reward": 2.0}, {"old_dynamics": False}])
def test_negative_control_a_perturbed_env_fails(change: dict) -> None:
    env = Overcooked("cramped_room")
    mdp = make_mdp("cramped_room", True)
    params = dataclasses.replace(env.default_params, **change)
    failures = 0
    runs = [(start, random_actions(seed)) for seed in range(2)
            for start in (mdp.get_standard_start_state(), random_start(mdp, seed))]
    runs += [(start, handmade_actions(seed)) for seed, start in enumerate(handmade_starts(mdp))]
    for start, actions in runs:
        try:
            run_episode(env, mdp, start, actions, params)
        except AssertionError:
            failures += 1
    assert failures > 0, f"{change} went unnoticed"


def test_state_from_overcooked_ai_rejects_another_kitchen() -> None:
    mdp = make_mdp("coordination_ring", False)
    with pytest.raises(ValueError, match="cramped_room"):
        state_from_overcooked_ai(mdp, mdp.get_standard_start_state(), Overcooked("cramped_room"))
