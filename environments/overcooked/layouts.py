"""Kitchens: the five classic layouts of overcooked-ai and ``layout_from_grid`` for new ones.

A grid is rows of characters: ``X`` counter, ``P`` pot, ``O`` onion dispenser, ``T`` tomato dispenser,
``D`` dish dispenser, ``S`` serving window, a space for floor, and ``1``/``2`` for the floor cells where
players 0 and 1 start. Positions are ``(x, y)`` with ``x`` the column and ``y`` the row, growing down, as in
overcooked-ai; a cell's index is ``y * width + x``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from jaxmarl_suite.errors import ConfigError, closest, did_you_mean

FLOOR, COUNTER, POT, ONION_DISPENSER, TOMATO_DISPENSER, DISH_DISPENSER, SERVING = range(7)
TERRAIN_CHARS = {" ": FLOOR, "X": COUNTER, "P": POT, "O": ONION_DISPENSER, "T": TOMATO_DISPENSER,
                 "D": DISH_DISPENSER, "S": SERVING}

NOTHING, ONION, TOMATO, DISH, SOUP = range(5)
"""Object kinds, on a cell or in a player's hands."""

NORTH, SOUTH, EAST, WEST = range(4)
DIRECTIONS = np.array([(0, -1), (0, 1), (1, 0), (-1, 0)], np.int32)
"""``(dx, dy)`` of north, south, east and west: overcooked-ai's ``Direction.INDEX_TO_DIRECTION`` order."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """A kitchen: static terrain and the players' start cells and orientations."""

    name: str
    terrain: np.ndarray
    """``int32[height, width]`` of the terrain codes (``FLOOR`` ... ``SERVING``)."""
    start_positions: tuple[tuple[int, int], tuple[int, int]]
    """``(x, y)`` of players 0 and 1 at the start."""
    start_orientations: tuple[int, int] = (NORTH, NORTH)
    """Direction indices; overcooked-ai starts both players facing north."""

    @property
    def height(self) -> int:
        """Rows."""
        return int(self.terrain.shape[0])

    @property
    def width(self) -> int:
        """Columns."""
        return int(self.terrain.shape[1])

    @property
    def num_cells(self) -> int:
        """``width * height``."""
        return self.width * self.height

    def cells_of(self, kind: int) -> np.ndarray:
        """Cell indices of one terrain kind, in row-major order."""
        return np.flatnonzero(self.terrain.reshape(-1) == kind).astype(np.int32)

    def cell(self, position: tuple[int, int]) -> int:
        """The cell index of ``(x, y)``."""
        return int(position[1]) * self.width + int(position[0])

    def grid(self) -> str:
        """The layout as a grid string (``layout_from_grid(layout.grid())`` rebuilds it)."""
        chars = {code: char for char, code in TERRAIN_CHARS.items()}
        rows = [[chars[int(code)] for code in row] for row in self.terrain]
        for player, (x, y) in enumerate(self.start_positions):
            rows[y][x] = str(player + 1)
        return "\n".join("".join(row) for row in rows)


def layout_from_grid(grid: str, name: str = "custom",
                     start_orientations: tuple[int, int] = (NORTH, NORTH)) -> Layout:
    """A layout from rows of characters (see the module docstring). Leading and trailing blank lines
    and each row's surrounding whitespace are dropped, as overcooked-ai reads its layout files.

    Raises ``ValueError`` for ragged rows, unknown characters, missing or repeated starts, and floor on
    the border (a player there could face out of the kitchen).
    """
    rows = [row.strip() for row in grid.strip("\n").split("\n")]
    rows = [row for row in rows if row]
    if not rows:
        raise ValueError("a layout needs at least one row")
    if len({len(row) for row in rows}) != 1:
        raise ValueError(f"layout {name!r}: rows differ in length: {[len(row) for row in rows]}")
    starts: dict[str, tuple[int, int]] = {}
    terrain = np.zeros((len(rows), len(rows[0])), np.int32)
    for y, row in enumerate(rows):
        for x, char in enumerate(row):
            if char in "12":
                if char in starts:
                    raise ValueError(f"layout {name!r}: player {char} starts twice")
                starts[char] = (x, y)
                char = " "
            if char not in TERRAIN_CHARS:
                raise ValueError(f"layout {name!r}: unknown character {char!r} at (x={x}, y={y}); "
                                 f"use one of {sorted(TERRAIN_CHARS)} or 1/2")
            terrain[y, x] = TERRAIN_CHARS[char]
    if set(starts) != {"1", "2"}:
        raise ValueError(f"layout {name!r}: needs one start for each of players 1 and 2")
    border = np.ones_like(terrain, bool)
    border[1:-1, 1:-1] = False
    if (terrain[border] == FLOOR).any():
        raise ValueError(f"layout {name!r}: floor on the border; surround the kitchen with counters")
    for orientation in start_orientations:
        if orientation not in range(4):
            raise ValueError(f"start orientations are direction indices 0-3, got {start_orientations}")
    return Layout(name, terrain, (starts["1"], starts["2"]), tuple(start_orientations))  # type: ignore[arg-type]


CLASSIC_GRIDS = {
    "cramped_room": """
        XXPXX
        O  2O
        X1  X
        XDXSX
    """,
    "asymmetric_advantages": """
        XXXXXXXXX
        O XSXOX S
        X   P 1 X
        X2  P   X
        XXXDXDXXX
    """,
    "coordination_ring": """
        XXXPX
        X 1 P
        D2X X
        O   X
        XOSXX
    """,
    "forced_coordination": """
        XXXPX
        O X1P
        O2X X
        D X X
        XXXSX
    """,
    "counter_circuit": """
        XXXPPXXX
        X  2   X
        D XXXX S
        X  1   X
        XXXOOXXX
    """,
}
"""overcooked-ai 1.1.0's grids (``data/layouts``; counter_circuit is its ``counter_circuit_o_1order``)."""

LAYOUT_ALIASES = {
    "asymm_advantages": "asymmetric_advantages",
    "coord_ring": "coordination_ring",
    "forced_coord": "forced_coordination",
    "counter_circuit_o_1order": "counter_circuit",
}
"""JaxMARL's and overcooked-ai's other names for the classic layouts."""

OVERCOOKED_AI_NAMES = {name: name for name in CLASSIC_GRIDS} | {"counter_circuit": "counter_circuit_o_1order"}
"""The layout file overcooked-ai loads for each classic layout."""


JAXMARL_KEYS = {"goal_idx": SERVING, "plate_pile_idx": DISH_DISPENSER, "onion_pile_idx": ONION_DISPENSER,
                "pot_idx": POT}
"""JaxMARL's layout-dict keys of special cells (``wall_idx`` lists them and the plain counters)."""


def layout_from_jaxmarl(layout: Mapping[str, Any], name: str | None = None) -> Layout:
    """A layout from JaxMARL's dict (``jaxmarl.environments.overcooked.overcooked_layouts[...]``: flat cell
    indices per kind, ``agent_idx`` the two starts). Named ``jaxmarl_<classic name>`` when its kitchen is a
    classic layout's (its starts differ from overcooked-ai's in four of the five), else ``name`` or
    ``jaxmarl_custom``."""
    height, width = int(layout["height"]), int(layout["width"])
    terrain = np.full(height * width, FLOOR, np.int32)
    terrain[np.asarray(layout["wall_idx"], np.int64)] = COUNTER
    for key, code in JAXMARL_KEYS.items():
        terrain[np.asarray(layout[key], np.int64)] = code
    terrain = terrain.reshape(height, width)
    starts = [int(cell) for cell in np.asarray(layout["agent_idx"]).reshape(-1)]
    if len(starts) != 2:
        raise ValueError(f"a JaxMARL layout for two chefs needs two agent_idx cells, got {starts}")
    if name is None:
        classic = next((n for n, grid in CLASSIC_GRIDS.items()
                        if np.array_equal(layout_from_grid(grid, n).terrain, terrain)), None)
        name = f"jaxmarl_{classic or 'custom'}"
    positions = tuple((cell % width, cell // width) for cell in starts)
    return Layout(name, terrain, positions)  # type: ignore[arg-type]


def get_layout(layout: str | Layout | Mapping[str, Any]) -> Layout:
    """A classic layout by name (or alias), ``layout`` itself when it is a ``Layout``, or one converted from
    JaxMARL's layout dict (``layout_from_jaxmarl``). An unknown name is a ``ConfigError`` naming the
    ``layout`` argument and the closest names."""
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, Mapping) and "wall_idx" in layout:
        return layout_from_jaxmarl(layout)
    if not isinstance(layout, str):
        raise TypeError("layout: must be a name, a Layout or JaxMARL's layout dict, got "
                        f"{type(layout).__name__}")
    name = LAYOUT_ALIASES.get(layout, layout)
    if name not in CLASSIC_GRIDS:
        known = sorted([*CLASSIC_GRIDS, *LAYOUT_ALIASES])
        hint = did_you_mean(closest(layout, known))
        raise ConfigError(f"layout: unknown Overcooked layout {layout!r}" + (f"; {hint}" if hint else ".")
                          + f" Known: {known}, or pass a Layout from layout_from_grid(...)")
    return layout_from_grid(CLASSIC_GRIDS[name], name)
