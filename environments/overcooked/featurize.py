"""overcooked-ai's hand-made observation (``OvercookedGridworld.featurize_state``): 96 numbers per player.

Each player ``i`` sees ``[own 46, other player's 46, other.pos - own.pos (dx, dy), own (x, y)]``. A player's
46 are, in overcooked-ai 1.1.0's order (``PLAYER_FEATURE_NAMES``): orientation one-hot (north, south, east,
west); held object one-hot (onion, soup, dish, tomato); ``(dx, dy)`` from the player to the closest onion,
tomato, dish and soup; the closest soup's onions and tomatoes; ``(dx, dy)`` to the closest serving window and
empty counter; ten numbers for each of the two closest pots (exists, empty, full, cooking, ready, onions,
tomatoes, remaining cook time, dx, dy); and a wall flag (the adjacent cell is not floor) for north, south,
east and west.

"Closest" is overcooked-ai's: the fewest actions (moves, turns, and the final interact) from the player's
position *and orientation* to a cell facing the feature, with the motion goals of its
``MediumLevelActionManager`` built from ``NO_COUNTERS_PARAMS``. Ties go to the first location in row-major
order; an unreachable or absent feature gives ``(0, 0)``, as does an item the player holds (a held soup still
gives its ingredient counts). Under those params a counter is never a motion goal, so objects lying on
counters and empty counters are never found: the closest soup and empty counter are always ``(0, 0)``
unless a soup is held, and onions, tomatoes and dishes come only from dispensers. The counter candidates are
still built here, but counter goals would need more than a new cost table: overcooked-ai breaks ties between
counter objects by their order in ``state.objects`` (the order they were put down), which our state lacks.

Everything that depends only on the kitchen (the cost from every ``(cell, orientation)`` to every cell, the
walls) is computed once per layout in NumPy (``featurizer``); the traced part is table lookups and masked
minima with the env batch last.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np

from .layouts import (
    COUNTER,
    DIRECTIONS,
    DISH,
    DISH_DISPENSER,
    FLOOR,
    NOTHING,
    ONION,
    ONION_DISPENSER,
    POT,
    SERVING,
    SOUP,
    TOMATO,
    TOMATO_DISPENSER,
    Layout,
)

Array = jax.Array

NUM_POTS = 2
"""overcooked-ai's default ``num_pots``: the closest two pots are described."""
MAX_INGREDIENTS = 3
"""overcooked-ai's ``Recipe.MAX_NUM_INGREDIENTS``: an idle pot with this many is "full"."""
HELD_ORDER = (ONION, SOUP, DISH, TOMATO)
"""The held-object one-hot's order (overcooked-ai's ``IDX_TO_OBJ``)."""

_DIRECTION_NAMES = ("north", "south", "east", "west")
_POT_NAMES = ("exists", "is_empty", "is_full", "is_cooking", "is_ready", "num_onions", "num_tomatoes",
              "cook_time", "dx", "dy")
PLAYER_FEATURE_NAMES: tuple[str, ...] = (
    *(f"orientation_{d}" for d in _DIRECTION_NAMES),
    *(f"holds_{name}" for name in ("onion", "soup", "dish", "tomato")),
    *(f"closest_{item}_{axis}" for item in ("onion", "tomato", "dish", "soup") for axis in ("dx", "dy")),
    "closest_soup_num_onions", "closest_soup_num_tomatoes",
    *(f"closest_{item}_{axis}" for item in ("serving", "empty_counter") for axis in ("dx", "dy")),
    *(f"pot_{j}_{name}" for j in range(NUM_POTS) for name in _POT_NAMES),
    *(f"wall_{d}" for d in _DIRECTION_NAMES),
)
"""The 46 features describing one player, in overcooked-ai's order."""
FEATURE_NAMES: tuple[str, ...] = (
    *(f"self_{name}" for name in PLAYER_FEATURE_NAMES),
    *(f"other_{name}" for name in PLAYER_FEATURE_NAMES),
    "other_dx", "other_dy", "self_x", "self_y",
)
"""The 96 features of one player's observation."""
NUM_FEATURES = len(FEATURE_NAMES)


class KitchenEnv(Protocol):
    """What ``featurize`` needs of the env (``Overcooked``). The three protocols stand for overcooked.py's
    classes so that this module never imports overcooked.py, which imports it."""

    @property
    def layout(self) -> Layout: ...


class KitchenParams(Protocol):
    """What ``featurize`` needs of ``OvercookedParams``."""

    @property
    def cook_time(self) -> Array | int: ...


class KitchenState(Protocol):
    """The fields of ``OvercookedState`` that ``featurize`` reads, each with the env batch last."""

    @property
    def position(self) -> Array: ...
    @property
    def orientation(self) -> Array: ...
    @property
    def held(self) -> Array: ...
    @property
    def held_onions(self) -> Array: ...
    @property
    def held_tomatoes(self) -> Array: ...
    @property
    def kind(self) -> Array: ...
    @property
    def onions(self) -> Array: ...
    @property
    def tomatoes(self) -> Array: ...
    @property
    def tick(self) -> Array: ...


@dataclasses.dataclass(frozen=True)
class FeaturizerTables:
    """What the features need from the kitchen alone, precomputed in NumPy. Cells are ``y * width + x``;
    a motion state is ``cell * 4 + orientation``."""

    width: int
    terrain: np.ndarray
    """``int32[C]`` terrain code of each cell."""
    motion_cost: np.ndarray
    """``int32[4 C, C]`` overcooked-ai's ``min_cost_to_feature`` from each motion state to each cell: the
    fewest moves and turns to stand next to it facing it, plus one for the interact. ``unreachable`` where
    no goal faces the cell (floor, counters), the goals lie in another room, or the start is not floor."""
    unreachable: int
    """Larger than every reachable cost."""
    walls: np.ndarray
    """``int32[C, 4]``: 1 where the neighbour to the north, south, east, west is not floor."""

    @property
    def num_cells(self) -> int:
        """``width * height``."""
        return int(self.terrain.shape[0])


def _neighbours(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """``int32[C, 4]`` the neighbouring cell in each direction, and where that neighbour is on the grid."""
    cells = np.arange(width * height)
    x, y = cells % width, cells // width
    nx, ny = x[:, None] + DIRECTIONS[None, :, 0], y[:, None] + DIRECTIONS[None, :, 1]
    inside = (nx >= 0) & (nx < width) & (ny >= 0) & (ny < height)
    return np.where(inside, ny * width + nx, cells[:, None]).astype(np.int32), inside


def _motion_cost(terrain: np.ndarray, width: int) -> tuple[np.ndarray, int]:
    num_cells = terrain.shape[0]
    floor = terrain == FLOOR
    neighbour, inside = _neighbours(width, num_cells // width)
    # A move turns the player and steps only onto floor, whatever it faced before, so the successors of a
    # motion state depend on its cell alone.
    steps_onto = inside & floor[neighbour] & floor[:, None]
    landing = np.where(steps_onto, neighbour, np.arange(num_cells)[:, None])
    successors = np.repeat(landing * 4 + np.arange(4)[None, :], 4, axis=0)  # [4 C, 4]
    start_on_floor = np.repeat(floor, 4)
    # Motion goals (NO_COUNTERS_PARAMS): a floor cell facing a non-floor, non-counter cell.
    goal_target = np.where(inside & floor[:, None], neighbour, -1).reshape(-1)  # [4 C]
    goal_target[(goal_target >= 0) & np.isin(terrain[np.maximum(goal_target, 0)], (FLOOR, COUNTER))] = -1
    # overcooked-ai's cost is the length of the plan it rebuilds from a shortest path, plus the interact.
    # That equals the shortest path: a turn anywhere but at the goal could be dropped (the next move sets
    # the orientation anyway), so shortest paths only move, then turn at most once at the goal.
    unreachable = 4 * num_cells + 1
    cost = np.full((4 * num_cells, num_cells), unreachable, np.int32)
    for target in np.unique(goal_target[goal_target >= 0]):
        # Breadth-first search backwards from the goals facing ``target``: every action costs one, and a
        # state's cost is one more than its cheapest successor's.
        reached = goal_target == target
        frontier = reached.copy()
        steps = 0
        while frontier.any():
            cost[frontier, target] = steps + 1  # + the interact
            steps += 1
            frontier = frontier[successors].any(1) & ~reached & start_on_floor
            reached |= frontier
    return cost, unreachable


@functools.lru_cache(maxsize=64)
def _tables(width: int, terrain_bytes: bytes) -> FeaturizerTables:
    terrain = np.frombuffer(terrain_bytes, np.int32).copy()
    cost, unreachable = _motion_cost(terrain, width)
    neighbour, inside = _neighbours(width, terrain.shape[0] // width)
    walls = (~inside | (terrain[neighbour] != FLOOR)).astype(np.int32)
    for array in (terrain, cost, walls):
        array.flags.writeable = False
    return FeaturizerTables(width, terrain, cost, unreachable, walls)


def featurizer(layout: Layout) -> FeaturizerTables:
    """The precomputed tables of ``layout``'s kitchen (cached per terrain)."""
    return _tables(layout.width, np.ascontiguousarray(layout.terrain, np.int32).reshape(-1).tobytes())


def featurize(env: KitchenEnv, state: KitchenState, params: KitchenParams) -> Array:
    """``float32[2, 96, B]``: overcooked-ai's ``featurize_state(state, mlam, num_pots=2)`` for players 0
    and 1 (``FEATURE_NAMES``), with ``mlam`` built from ``NO_COUNTERS_PARAMS``; the env batch last."""
    return featurize_with_tables(featurizer(env.layout), state, params.cook_time)


def featurize_with_tables(tables: FeaturizerTables, state: KitchenState, cook_time: Array | int) -> Array:
    """``featurize`` from explicit tables (``featurizer(layout)``) and the soups' cook time."""
    num_cells, width = tables.num_cells, tables.width
    # Both players at once, and features computed in groups so that the compiled program stays small:
    # per-cell arrays are [C, 1, B] against the players' [2, B].
    cells = jnp.arange(num_cells, dtype=jnp.int32)[:, None, None]
    terrain = jnp.asarray(tables.terrain)[:, None, None]
    kind, onions, tomatoes, tick = (values[:, None]
                                    for values in (state.kind, state.onions, state.tomatoes, state.tick))
    on_counter = terrain == COUNTER
    position, held = state.position, state.held
    x, y = position % width, position // width
    # A gather on the minor axis of the transposed table gives [C, 2, B] directly.
    cost = jnp.take(jnp.asarray(tables.motion_cost.T), position * 4 + state.orientation, axis=1)
    # One minimum finds the cheapest cell and breaks ties towards the lowest (row-major first) cell.
    rank = cost * num_cells + cells
    unreachable_rank = tables.unreachable * num_cells

    def closest(candidates: Array) -> tuple[Array, Array]:
        """``[..., C, 1 or 2, B]`` candidates -> found and cell, ``[..., 2, B]``."""
        best = jnp.where(candidates, rank, unreachable_rank).min(-3)
        return best < unreachable_rank, best % num_cells

    def deltas(found: Array, cell: Array) -> Array:
        """``[..., 2 (dx, dy), 2, B]``, zero where nothing was found."""
        return jnp.stack([jnp.where(found, cell % width - x, 0), jnp.where(found, cell // width - y, 0)], -3)

    def read(at: Array, values: Array) -> Array:
        return jnp.where(at, values, 0).sum(-3)

    pots = terrain == POT
    searches = jnp.stack(jnp.broadcast_arrays(
        (terrain == ONION_DISPENSER) | (on_counter & (kind == ONION)),
        (terrain == TOMATO_DISPENSER) | (on_counter & (kind == TOMATO)),
        (terrain == DISH_DISPENSER) | (on_counter & (kind == DISH)),
        on_counter & (kind == SOUP),
        terrain == SERVING,
        on_counter & (kind == NOTHING),
        pots,
    ))  # [7, C, 1, B]
    found, cell = closest(searches)
    # What the player holds is at (0, 0); nobody holds a serving window, a counter or a pot.
    held_item = jnp.asarray([ONION, TOMATO, DISH, SOUP, -1, -1, -1])[:, None, None]
    found = found & (held[None] != held_item)
    holds_soup = held == SOUP
    at_soup = found[3] & (cells == cell[3])
    soup_counts = jnp.stack([jnp.where(holds_soup, state.held_onions, read(at_soup, onions)),
                             jnp.where(holds_soup, state.held_tomatoes, read(at_soup, tomatoes))])

    second_found, second_cell = closest(pots & (cells != cell[6]))
    pot_found, pot_cell = jnp.stack([found[6], second_found]), jnp.stack([cell[6], second_cell])
    at_pot = pot_found[:, None] & (cells == pot_cell[:, None])  # [NUM_POTS, C, 2, B]
    soup = read(at_pot, kind) == SOUP
    pot_tick, pot_onions, pot_tomatoes = read(at_pot, tick), read(at_pot, onions), read(at_pot, tomatoes)
    started = soup & (pot_tick >= 0)
    ready = started & (pot_tick >= cook_time)
    full = started | (soup & (pot_onions + pot_tomatoes == MAX_INGREDIENTS))
    remaining = jnp.where(started, jnp.maximum(cook_time - pot_tick, 0), 0)
    pot_features = jnp.concatenate([
        jnp.stack([pot_found, pot_found & ~soup, full, started & ~ready, ready, pot_onions, pot_tomatoes,
                   remaining], 1).astype(jnp.int32),
        deltas(pot_found, pot_cell),
    ], 1)  # [NUM_POTS, 10, 2, B]

    item_deltas = deltas(found[:6], cell[:6])  # [6, 2, 2, B]
    groups = [
        state.orientation[None] == jnp.arange(4)[:, None, None],
        held[None] == jnp.asarray(HELD_ORDER)[:, None, None],
        item_deltas[:4],  # onion, tomato, dish, soup
        soup_counts,
        item_deltas[4:],  # serving, empty counter
        pot_features,
        jnp.asarray(tables.walls.T)[:, position],
    ]
    own = jnp.concatenate([g.astype(jnp.int32).reshape(-1, *position.shape) for g in groups])  # [46, 2, B]
    own = jnp.swapaxes(own, 0, 1)
    positions = jnp.stack([x[::-1] - x, y[::-1] - y, x, y], axis=1)  # [2, 4, B]: the other relative, own
    return jnp.concatenate([own, own[::-1], positions], axis=1).astype(jnp.float32)
