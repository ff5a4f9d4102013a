"""Overcooked V2 kitchens: JaxMARL 0.2.0's 23 ``overcooked_v2_layouts`` under their names, and the grid
parser that builds a ``Layout`` from a map string.

Map characters: ``W`` counter (wall), ``A`` a chef's start (floor), ``X`` serving window (goal), ``B`` plate
pile (bowls), ``P`` pot, ``R`` recipe indicator, ``L`` button that shows the recipe for a while, ``0``-``9``
ingredient piles (``O`` is read as ``0``), a space is floor; any other character is floor too.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
from collections.abc import Sequence

import numpy as np

# Static objects (the first grid channel), with JaxMARL's codes; agents (2, 3) appear in no grid.
EMPTY, WALL, GOAL, POT, RECIPE_INDICATOR, BUTTON_RECIPE_INDICATOR, PLATE_PILE = 0, 1, 4, 5, 6, 7, 9
INGREDIENT_PILE_BASE = 10
"""Pile of ingredient ``i`` is ``INGREDIENT_PILE_BASE + i``."""
MAX_INGREDIENT_KINDS = 10

CHAR_TO_STATIC = {" ": EMPTY, "W": WALL, "X": GOAL, "B": PLATE_PILE, "P": POT, "R": RECIPE_INDICATOR,
                  "L": BUTTON_RECIPE_INDICATOR, **{str(i): INGREDIENT_PILE_BASE + i for i in range(10)}}


@dataclasses.dataclass(frozen=True)
class Layout:
    """A kitchen: its static objects, the chefs' starts and the recipes an episode may ask for.

    ``static_objects`` is ``int[height, width]`` of the static codes above; ``agent_positions`` lists each
    chef's start as ``(x, y)`` (column, row); ``possible_recipes`` lists recipes as three ingredient indices.
    """

    agent_positions: tuple[tuple[int, int], ...]
    static_objects: np.ndarray
    num_ingredients: int
    possible_recipes: tuple[tuple[int, int, int], ...]
    name: str = "custom"

    def __post_init__(self) -> None:
        if len(self.agent_positions) == 0:
            raise ValueError("a layout needs at least one agent start ('A')")
        if self.num_ingredients < 1:
            raise ValueError("a layout needs at least one ingredient pile ('0'-'9')")
        for recipe in self.possible_recipes:
            if len(recipe) != 3 or not all(0 <= int(i) < self.num_ingredients for i in recipe):
                raise ValueError(f"each recipe must be 3 ingredient indices in [0, {self.num_ingredients}), "
                                 f"got {list(recipe)}")

    @property
    def height(self) -> int:
        """Rows of the grid."""
        return int(self.static_objects.shape[0])

    @property
    def width(self) -> int:
        """Columns of the grid."""
        return int(self.static_objects.shape[1])

    @property
    def num_agents(self) -> int:
        """Chefs in the kitchen (one per ``A``)."""
        return len(self.agent_positions)


def all_recipes(num_ingredients: int) -> tuple[tuple[int, int, int], ...]:
    """Every multiset of three ingredients, in the order JaxMARL lists them (the iteration order of a Python
    set of sorted triples built from ``combinations(range(n) * 3, 3)``), which fixes which recipe a drawn
    index names."""
    pool = list(range(num_ingredients)) * 3
    distinct = {tuple(sorted(triple)) for triple in itertools.combinations(pool, 3)}
    return tuple((int(a), int(b), int(c)) for a, b, c in distinct)


def layout_from_grid(grid: str, possible_recipes: Sequence[Sequence[int]] | None = None,
                     swap_agents: bool = False, name: str = "custom") -> Layout:
    """A ``Layout`` from a map string (one line per row; see the module docstring for the characters).

    Without ``possible_recipes`` every three-ingredient recipe is possible, which needs a recipe indicator
    (``R``) so the chefs can see it. ``swap_agents`` reverses the chefs' order (JaxMARL does so for two
    overcooked-ai layouts).
    """
    rows = grid.split("\n")
    if rows and rows[0] == "":
        rows = rows[1:]
    if rows and rows[-1] == "":
        rows = rows[:-1]
    if not rows:
        raise ValueError("the grid string is empty")
    static = np.zeros((len(rows), max(len(r) for r in rows)), np.int32)
    starts: list[tuple[int, int]] = []
    for y, row in enumerate(rows):
        for x, char in enumerate(row):
            char = "0" if char == "O" else char
            if char == "A":
                starts.append((x, y))
            static[y, x] = CHAR_TO_STATIC.get(char, EMPTY)
    piles = static[static >= INGREDIENT_PILE_BASE]
    num_ingredients = int(piles.max()) - INGREDIENT_PILE_BASE + 1 if piles.size else 0
    if possible_recipes is None:
        if not (static == RECIPE_INDICATOR).any():
            raise ValueError("a layout without a recipe indicator ('R') needs possible_recipes")
        recipes = all_recipes(num_ingredients) if num_ingredients >= 1 else ()
    else:
        if not isinstance(possible_recipes, Sequence) or not all(
                isinstance(r, Sequence) and len(r) == 3 for r in possible_recipes):
            raise ValueError(f"possible_recipes must be a list of 3-ingredient lists, "
                             f"got {possible_recipes!r}")
        if len(possible_recipes) == 0:
            raise ValueError("possible_recipes must list at least one recipe")
        recipes = tuple((int(r[0]), int(r[1]), int(r[2])) for r in possible_recipes)
    if swap_agents:
        starts = starts[::-1]
    return Layout(agent_positions=tuple(starts), static_objects=static, num_ingredients=num_ingredients,
                  possible_recipes=recipes, name=name)


# The maps, as JaxMARL 0.2.0 writes them (game data).
GRIDS: dict[str, str] = {
    # overcooked-ai's classic kitchens
    "cramped_room": "WWPWW\nOA AO\nW   W\nWBWXW",
    "asymm_advantages": "WWWWWWWWW\nO WXWOW X\nW   P   W\nW A PA  W\nWWWBWBWWW",
    "coord_ring": "WWWPW\nW A P\nBAW W\nO   W\nWOXWW",
    "forced_coord": "WWWPW\nO WAP\nOAW W\nB W W\nWWWXW",
    "counter_circuit": "WWWPPWWW\nW A    W\nB WWWW X\nW     AW\nWWWOOWWW",
    # adapted kitchens with two ingredients and a recipe indicator
    "cramped_room_v2": "WWPWW\n0A A1\nW   R\nWBWXW",
    "asymm_advantages_recipes_center": "WWWWWWWWW\n0 WXR01 X\n1   P   W\nW A PA  W\nWWWBWBWWW",
    "asymm_advantages_recipes_right": "WWWWWWWWW\n0 WXW01 X\n1   P   R\nW A PA  W\nWWWBWBWWW",
    "asymm_advantages_recipes_left": "WWWWWWWWW\n0 WXW01 X\n1   P   R\nR A PA  W\nWWWBWBWWW",
    "two_rooms": "WWWWWB10W\nW   W   R\nP A W A W\nW   W   X\nWWWWWWWWW",
    # other kitchens
    "two_rooms_both": "W01BWB10W\nW   W   R\nP A W A W\nW   W   X\nWWWWWWWWW",
    "long_room": "WWWWWWWWWWWWWWW\nB            AP\n0             X\nWWWWWWWWWWWWWWW",
    "fun_coordination": "WWWWWWWWW\n0   X   2\nRA  P  AW\n1   B   3\nWWWWWWWWW",
    "more_fun_coordination": "WWWWWWWWW\nW   X   W\nRA  P  A1\n0   P   2\nW   B   W\nWWWWWWWWW",
    "fun_symmetries": "WWWWBWW\n2  W  0\nR APA X\n2  W  1\nWWWWBWW",
    "fun_symmetries_plates": "WWWWWWW\nB  W  0\nR APA X\nB  W  1\nWWWWWWW",
    "fun_symmetries1": "WWWWWBWW\n2  WW  0\nR AWPA X\n2  WW  1\nWWWWWBWW",
    # extended cat-dog problem
    "grounded_coord_simple": "WW2WWWWW\nW  WB  0\nR ALPA X\nW  WB  1\nWW2WWWWW",
    "grounded_coord_ring": ("WWW2R2WWW\nW       W\nW WWLWW W\n2 0   B 2\nRAXAP X R\n2 1   B 2\nW WWLWW W\n"
                            "W       W\nWWW2R2WWW"),
    # test-time protocol formation
    "test_time_simple": "WW2WWWWW\nW  WB  0\nR AWPA X\nW  WB  1\nWW2WWWWW",
    "test_time_wide": "WWXBWW\n0 A  0\n1    1\nWPWPWW\n3 A  3\nW    W\nWWRWWW",
    # demo cook
    "demo_cook_simple": "WWWWWR2W0WW\n0      W  B\nW     APA X\n1      W  B\nWWWWWR2W1WW",
    "demo_cook_wide": "WWWWBXBWWWW\nWWW0 A 1WWW\nWWWWWPWWWWW\nW    A    W\n0  W3R3W  0\nW1WWWWWWW1W",
}

ONION_SOUP = [[0, 0, 0]]
TWO_SOUPS = [[0, 0, 0], [1, 1, 1]]
LAYOUT_RECIPES: dict[str, list[list[int]] | None] = {
    "cramped_room": ONION_SOUP, "asymm_advantages": ONION_SOUP, "coord_ring": ONION_SOUP,
    "forced_coord": ONION_SOUP, "counter_circuit": ONION_SOUP, "long_room": ONION_SOUP,
    "fun_coordination": [[0, 0, 2], [1, 1, 3]], "more_fun_coordination": [[0, 1, 1], [0, 2, 2]],
    **{name: TWO_SOUPS for name in ("fun_symmetries", "fun_symmetries_plates", "fun_symmetries1",
                                    "grounded_coord_simple", "grounded_coord_ring", "test_time_simple",
                                    "test_time_wide", "demo_cook_simple", "demo_cook_wide")},
}
"""Recipes per layout (None: every recipe of the layout's ingredients)."""
SWAPPED_AGENTS = ("cramped_room", "counter_circuit")
"""Layouts whose chefs JaxMARL lists in reverse reading order (to match overcooked-ai)."""

LAYOUT_NAMES: tuple[str, ...] = tuple(GRIDS)


def get_layout(layout: str | Layout) -> Layout:
    """A layout by name (answering an unknown name with the closest ones), or a ``Layout`` as is; a string
    holding a newline is parsed as a grid with ``layout_from_grid``."""
    if isinstance(layout, Layout):
        return layout
    if not isinstance(layout, str):
        raise TypeError(f"layout must be a layout name, a grid string or a Layout, got {layout!r}")
    if "\n" in layout:
        return layout_from_grid(layout)
    if layout not in GRIDS:
        close = difflib.get_close_matches(layout, LAYOUT_NAMES, n=3, cutoff=0.4)
        hint = f"; closest: {', '.join(close)}" if close else ""
        raise ValueError(f"unknown Overcooked V2 layout {layout!r}{hint}. Known: {', '.join(LAYOUT_NAMES)}")
    return layout_from_grid(GRIDS[layout], LAYOUT_RECIPES.get(layout), layout in SWAPPED_AGENTS, name=layout)
