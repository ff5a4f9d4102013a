"""The featurized observation against live overcooked-ai 1.1.0's ``featurize_state`` (96 numbers per player).

On the five classic layouts and on a test kitchen with tomato dispensers, three pots, two rooms and
equidistant features, overcooked-ai plays random joint actions from its standard start, from its random
start states (players anywhere, filled pots, objects in hands) and from hand-made states (every kind of
object on counters and in hands, pots in every condition). Each of its states is converted into ours;
all of a layout's states go through one jitted ``featurize`` call as one batch, and every feature of both
players must equal overcooked-ai's, whose ``MediumLevelActionManager`` is built from ``NO_COUNTERS_PARAMS``.
Negative controls (ties broken the other way, a free first turn, a wrong cook time, two swapped features)
must fail.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from typing import Any

import jax
import numpy as np
import pytest

np.Inf = np.inf  # overcooked-ai 1.1.0 uses np.Inf, which NumPy 2 removed  # noqa: N816
overcooked_mdp = pytest.importorskip("overcooked_ai_py.mdp.overcooked_mdp")
actions_module = pytest.importorskip("overcooked_ai_py.mdp.actions")
planners = pytest.importorskip("overcooked_ai_py.planning.planners")

from jaxmarl_suite.environments.overcooked import Overcooked, get_layout, layout_from_grid  # noqa: E402
from jaxmarl_suite.environments.overcooked.featurize import (  # noqa: E402
    FEATURE_NAMES,
    PLAYER_FEATURE_NAMES,
    featurize,
    featurize_with_tables,
    featurizer,
)
from jaxmarl_suite.environments.overcooked.layouts import CLASSIC_GRIDS, OVERCOOKED_AI_NAMES  # noqa: E402
from jaxmarl_suite.environments.overcooked.parity import state_from_overcooked_ai  # noqa: E402

EPISODE_STEPS = 400
HANDMADE_STEPS = 40
INTERACT_PROBABILITY = 0.35
"""Random joint actions lean on interact, so objects get picked up, dropped on counters and put in pots."""
TEST_KITCHEN = "featurize_test_kitchen"
TEST_KITCHEN_GRID = """
    XPXXXTXPX
    P  1X   T
    O   X  2X
    T   P   O
    XDXSXXSDX
"""
"""Tomato dispensers; three pots seen from the left room (two at one corner cell), two from the right; the
middle pot is shared; in the right room two tomato dispensers are equally far from some cells."""
LAYOUTS = [*CLASSIC_GRIDS, TEST_KITCHEN]
POT_CONDITIONS = ("ready", "cooking", "idle_full", "idle_partial", "empty")


def make_mdp(layout: str):
    """A fresh mdp (overcooked-ai keeps its recipe settings in class attributes: build it just before use)."""
    if layout == TEST_KITCHEN:
        rows = [row.strip() for row in TEST_KITCHEN_GRID.strip().split("\n")]
        params = {"layout_name": TEST_KITCHEN, "start_all_orders": [{"ingredients": ["onion"] * 3}]}
        return overcooked_mdp.OvercookedGridworld.from_grid(rows, base_layout_params=params)
    return overcooked_mdp.OvercookedGridworld.from_layout_name(OVERCOOKED_AI_NAMES[layout])


def make_env(layout: str) -> Overcooked:
    return Overcooked(layout_from_grid(TEST_KITCHEN_GRID, TEST_KITCHEN) if layout == TEST_KITCHEN else layout)


def random_actions(rng: np.random.Generator, steps: int) -> np.ndarray:
    moves = rng.integers(0, 5, size=(steps, 2))
    return np.where(rng.random((steps, 2)) < INTERACT_PROBABILITY, 5, moves)


def play(mdp, start, actions: np.ndarray) -> list:
    """``start`` and overcooked-ai's state after each joint action."""
    states = [start]
    for joint in actions:
        joint_action = tuple(actions_module.Action.INDEX_TO_ACTION[a] for a in joint)
        states.append(mdp.get_state_transition(states[-1], joint_action)[0])
    return states


def handmade_starts(mdp) -> list:
    """States random play seldom reaches: each pot in each condition in turn, soups, onions, dishes and
    tomatoes on counters, and every kind of object in the players' hands, in every orientation."""
    m = overcooked_mdp
    directions = actions_module.Direction.ALL_DIRECTIONS

    def soup(position, onions, tomatoes=0, tick=-1, finished=False):
        return m.SoupState.get_soup(position, num_onions=onions, num_tomatoes=tomatoes, cooking_tick=tick,
                                    finished=finished)

    pot_contents = {
        "ready": lambda p: soup(p, 3, finished=True),
        "cooking": lambda p: soup(p, 2, 1, tick=7),
        "idle_full": lambda p: soup(p, 3),
        "idle_partial": lambda p: soup(p, 1, 1),
        "empty": None,
    }
    counter_contents = [lambda p: soup(p, 2, 1, finished=True), lambda p: m.ObjectState("onion", p),
                        lambda p: m.ObjectState("dish", p), lambda p: m.ObjectState("tomato", p), None]
    held = [lambda p: soup(p, 1, 2, finished=True), lambda p: m.ObjectState("tomato", p),
            lambda p: m.ObjectState("dish", p), lambda p: m.ObjectState("onion", p), None]
    starts = []
    for variant in range(len(POT_CONDITIONS)):
        objects = {}
        for j, pot in enumerate(mdp.get_pot_locations()):
            make = pot_contents[POT_CONDITIONS[(variant + j) % len(POT_CONDITIONS)]]
            if make is not None:
                objects[pot] = make(pot)
        for j, counter in enumerate(mdp.get_counter_locations()):
            make = counter_contents[(variant + j) % len(counter_contents)]
            if make is not None:
                objects[counter] = make(counter)
        players = []
        for index, position in enumerate(mdp.start_player_positions):
            make = held[(variant + 2 * index) % len(held)]
            players.append(m.PlayerState(position, directions[(variant + index) % 4],
                                         held_object=None if make is None else make(position)))
        starts.append(m.OvercookedState(players, objects, bonus_orders=[], all_orders=mdp.start_all_orders))
    return starts


def coverage(mdp, states: list) -> Counter:
    """What the states exercise: objects on counters and in hands, pot conditions."""
    seen: Counter = Counter()
    counters = set(mdp.get_counter_locations())
    for state in states:
        for position, obj in state.objects.items():
            if position in counters:
                seen[f"counter_{obj.name}"] += 1
        for player in state.players:
            if player.held_object is not None:
                seen[f"held_{player.held_object.name}"] += 1
        for condition, pots in mdp.get_pot_states(state).items():
            name = {"empty": "empty", "cooking": "cooking", "ready": "ready", "3_items": "idle_full"}.get(
                condition, "idle_partial")
            seen[f"pot_{name}"] += len(pots)
    return seen


@functools.cache
def episodes(layout: str, seed: int) -> tuple[Any, np.ndarray, Counter]:
    """Our states (numpy, batch last), overcooked-ai's features ``[2, 96, N]`` and the coverage, for
    overcooked-ai's states along random episodes from its standard start, a random start and the hand-made
    starts."""
    mdp = make_mdp(layout)
    env = make_env(layout)
    mlam = planners.MediumLevelActionManager.from_pickle_or_compute(mdp, planners.NO_COUNTERS_PARAMS,
                                                                   force_compute=True)
    rng = np.random.default_rng(seed)
    np.random.seed(seed)
    random_start = mdp.get_random_start_state_fn(random_start_pos=True, rnd_obj_prob_thresh=0.6)()
    states = play(mdp, mdp.get_standard_start_state(), random_actions(rng, EPISODE_STEPS))
    states += play(mdp, random_start, random_actions(rng, EPISODE_STEPS))
    for start in handmade_starts(mdp):
        states += play(mdp, start, random_actions(rng, HANDMADE_STEPS))
    want = np.array([mdp.featurize_state(state, mlam, num_pots=2) for state in states]).transpose(1, 2, 0)
    ours = [jax.tree.map(np.asarray, state_from_overcooked_ai(mdp, state, env)[0]) for state in states]
    batch = jax.tree.map(lambda *leaves: np.stack(leaves, axis=-1), *ours)
    return batch, want, coverage(mdp, states)


def assert_features_equal(got: np.ndarray, want: np.ndarray, label: str) -> None:
    """Raise with the first few differing features named."""
    assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
    wrong = np.argwhere(np.abs(got - want) > 1e-6)
    if wrong.size:
        details = "; ".join(f"state {n} player {p} {FEATURE_NAMES[f]}: ours {got[p, f, n]:g}, "
                            f"overcooked-ai {want[p, f, n]:g}" for p, f, n in wrong[:5])
        raise AssertionError(f"{label}: {len(wrong)} features differ: {details}")


_jitted: dict[str, Any] = {}


def our_features(layout: str, batch) -> np.ndarray:
    """One compile per layout: every state of the layout goes through in one batch."""
    if layout not in _jitted:
        env = make_env(layout)
        _jitted[layout] = jax.jit(lambda state, params, env=env: featurize(env, state, params))
    return np.asarray(_jitted[layout](batch, make_env(layout).default_params))


CASES = [pytest.param(layout, seed, marks=[pytest.mark.slow] if seed > 0 else [], id=f"{layout}-seed{seed}")
         for layout in LAYOUTS for seed in (0, 1, 2)]


@pytest.mark.parametrize("layout, seed", CASES)
def test_featurize_matches_overcooked_ai(layout: str, seed: int) -> None:
    batch, want, seen = episodes(layout, seed)
    got = our_features(layout, batch)
    assert got.dtype == np.float32
    assert_features_equal(got, want, f"{layout} seed {seed}")
    for kind in ("onion", "tomato", "dish", "soup"):
        assert seen[f"counter_{kind}"] > 0 and seen[f"held_{kind}"] > 0, seen
    for condition in POT_CONDITIONS:
        assert seen[f"pot_{condition}"] > 0, seen


def test_feature_layout_and_cached_tables() -> None:
    mdp = make_mdp("cramped_room")
    assert len(FEATURE_NAMES) == mdp.get_featurize_state_shape(num_pots=2)[0] == 96
    assert len(PLAYER_FEATURE_NAMES) == 46
    assert featurizer(get_layout("cramped_room")) is featurizer(Overcooked("cramped_room").layout)
    batch, want, _ = episodes(TEST_KITCHEN, 0)
    pot_exists = [PLAYER_FEATURE_NAMES.index(f"pot_{j}_exists") for j in range(2)]
    # The left room sees three pots and keeps two; the right sees two; both players see both.
    assert (want[:, pot_exists] == 1).all()
    tomato = PLAYER_FEATURE_NAMES.index("closest_tomato_dx")
    assert (want[:, tomato] != 0).any()


def _ties_to_the_last(tables):
    """Costs that rank equally costly cells last-first."""
    cells = tables.num_cells
    reachable = tables.motion_cost < tables.unreachable
    cost = np.where(reachable, tables.motion_cost * cells + (cells - 1 - np.arange(cells))[None],
                    tables.unreachable * cells)
    return dataclasses.replace(tables, motion_cost=cost.astype(np.int32),
                               unreachable=tables.unreachable * cells)


def _first_turn_free(tables):
    """Costs that ignore the player's orientation."""
    by_cell = tables.motion_cost.reshape(tables.num_cells, 4, tables.num_cells).min(1)
    return dataclasses.replace(tables, motion_cost=np.repeat(by_cell, 4, axis=0))


def _swap(features: jax.Array, first: str, second: str) -> jax.Array:
    i, j = FEATURE_NAMES.index(first), FEATURE_NAMES.index(second)
    order = np.arange(len(FEATURE_NAMES))
    order[[i, j]] = order[[j, i]]
    return features[:, order]


PERTURBATIONS = {
    "ties_to_the_last": lambda layout, state, params: featurize_with_tables(
        _ties_to_the_last(featurizer(layout)), state, params.cook_time),
    "first_turn_free": lambda layout, state, params: featurize_with_tables(
        _first_turn_free(featurizer(layout)), state, params.cook_time),
    "cook_time_off_by_one": lambda layout, state, params: featurize_with_tables(
        featurizer(layout), state, params.cook_time - 1),
    "swapped_pot_features": lambda layout, state, params: _swap(
        featurize_with_tables(featurizer(layout), state, params.cook_time),
        "self_pot_0_is_cooking", "self_pot_0_is_ready"),
}


@functools.cache
def perturbed_features() -> dict[str, np.ndarray]:
    """Every perturbation's features of the test kitchen's states, in one compiled program."""
    env = make_env(TEST_KITCHEN)
    batch, _, _ = episodes(TEST_KITCHEN, 0)
    every = jax.jit(lambda state, params: {name: perturb(env.layout, state, params)
                                           for name, perturb in PERTURBATIONS.items()})
    return jax.tree.map(np.asarray, every(batch, env.default_params))


@pytest.mark.parametrize("perturbation", sorted(PERTURBATIONS))
def test_negative_control_a_perturbed_featurizer_fails(perturbation: str) -> None:
    _, want, _ = episodes(TEST_KITCHEN, 0)
    with pytest.raises(AssertionError, match="features differ"):
        assert_features_equal(perturbed_features()[perturbation], want, perturbation)
