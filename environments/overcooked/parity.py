"""Live parity with overcooked-ai 1.1.0: build our state from one of its states.

``state_from_overcooked_ai(mdp, ref_state, env)`` reads an ``OvercookedGridworld`` and an
``OvercookedState`` (duck-typed: nothing here imports overcooked-ai, which needs ``np.Inf`` aliased under
NumPy 2) and returns our single-env state and the params to step it with. Tests step both from there with
the same actions and compare every step (``tests/environments/test_overcooked_parity.py``).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from .layouts import DIRECTIONS, DISH, NOTHING, ONION, SOUP, TERRAIN_CHARS, TOMATO
from .overcooked import Overcooked, OvercookedParams, OvercookedState

OBJECT_KINDS = {"onion": ONION, "tomato": TOMATO, "dish": DISH, "soup": SOUP}
"""overcooked-ai's object names -> our object kinds."""


def direction_index(orientation: tuple[int, int]) -> int:
    """Our direction index of an overcooked-ai orientation tuple ``(dx, dy)``."""
    matches = np.flatnonzero((np.asarray(orientation) == DIRECTIONS).all(1))
    if matches.size != 1:
        raise ValueError(f"not a direction: {orientation!r}")
    return int(matches[0])


def check_same_kitchen(mdp: Any, env: Overcooked) -> None:
    """Raise ``ValueError`` unless ``mdp``'s terrain is ``env``'s layout."""
    terrain = np.array([[TERRAIN_CHARS[char] for char in row] for row in mdp.terrain_mtx], np.int32)
    if terrain.shape != env.layout.terrain.shape or not (terrain == env.layout.terrain).all():
        raise ValueError(f"the mdp's kitchen ({mdp.layout_name}) is not the env's layout {env.layout.name!r}")


def _contents(obj: Any) -> tuple[int, int]:
    ingredients = list(getattr(obj, "ingredients", []))
    return ingredients.count("onion"), ingredients.count("tomato")


def state_from_overcooked_ai(
    mdp: Any, ref_state: Any, env: Overcooked, params: OvercookedParams | None = None
) -> tuple[OvercookedState, OvercookedParams]:
    """Our single-env state (no batch axis) equal to overcooked-ai's ``ref_state``, and the params to step
    it with (``params``, default ``env.default_params``).

    Soups on counters and in hands are done, so they take ``tick = cook_time``; a pot's soup keeps its
    cooking tick. Only two players are supported, as in our env.
    """
    check_same_kitchen(mdp, env)
    params = env.default_params if params is None else params
    if len(ref_state.players) != 2:
        raise ValueError(f"Overcooked has two players, the state has {len(ref_state.players)}")
    layout = env.layout
    cells = layout.num_cells
    kind = np.zeros(cells, np.int32)
    onions = np.zeros(cells, np.int32)
    tomatoes = np.zeros(cells, np.int32)
    tick = np.full(cells, -1, np.int32)
    pots = {tuple(p) for p in mdp.get_pot_locations()}
    for position, obj in ref_state.objects.items():
        cell = layout.cell(position)
        kind[cell] = OBJECT_KINDS[obj.name]
        if obj.name == "soup":
            onions[cell], tomatoes[cell] = _contents(obj)
            tick[cell] = obj._cooking_tick if tuple(position) in pots else int(params.cook_time)
    held = np.zeros(2, np.int32)
    held_onions = np.zeros(2, np.int32)
    held_tomatoes = np.zeros(2, np.int32)
    for index, player in enumerate(ref_state.players):
        obj = player.held_object
        held[index] = NOTHING if obj is None else OBJECT_KINDS[obj.name]
        if obj is not None and obj.name == "soup":
            held_onions[index], held_tomatoes[index] = _contents(obj)
    state = OvercookedState(
        position=jnp.asarray([layout.cell(p.position) for p in ref_state.players], jnp.int32),
        orientation=jnp.asarray([direction_index(p.orientation) for p in ref_state.players], jnp.int32),
        held=jnp.asarray(held), held_onions=jnp.asarray(held_onions),
        held_tomatoes=jnp.asarray(held_tomatoes),
        kind=jnp.asarray(kind), onions=jnp.asarray(onions), tomatoes=jnp.asarray(tomatoes),
        tick=jnp.asarray(tick), time=jnp.asarray(ref_state.timestep, jnp.int32),
    )
    return state, params

