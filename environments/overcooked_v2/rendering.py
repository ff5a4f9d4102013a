"""A jittable tile view of one Overcooked V2 kitchen: static objects, items on counters, pots with their
ingredients and cooking progress, the recipe where it is shown, the chefs with their facing and what they
hold, and (with ``agent_view_size``) each chef's view window outlined in its colour.

Every pixel looks up its cell and its place inside the tile, so a frame is a handful of elementwise selects:
it jits, and vmaps over a whole episode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .layouts import (
    BUTTON_RECIPE_INDICATOR,
    EMPTY,
    GOAL,
    INGREDIENT_PILE_BASE,
    PLATE_PILE,
    POT,
    RECIPE_INDICATOR,
    WALL,
)

Array = jax.Array

TILE = 24
"""Pixels per cell side."""
STATIC_COLORS = {
    EMPTY: (0.93, 0.91, 0.86), WALL: (0.62, 0.47, 0.31), GOAL: (0.35, 0.62, 0.38), POT: (0.30, 0.30, 0.32),
    RECIPE_INDICATOR: (0.45, 0.40, 0.65), BUTTON_RECIPE_INDICATOR: (0.70, 0.45, 0.65),
    PLATE_PILE: (0.82, 0.84, 0.88),
}
INGREDIENT_COLORS = np.array([
    (0.96, 0.86, 0.30), (0.90, 0.22, 0.18), (0.35, 0.75, 0.30), (0.55, 0.35, 0.20), (0.95, 0.55, 0.15),
    (0.60, 0.30, 0.75), (0.20, 0.70, 0.75), (0.95, 0.60, 0.70), (0.50, 0.50, 0.10), (0.15, 0.25, 0.55),
], np.float32)
CHEF_COLORS = np.array([(0.20, 0.40, 0.85), (0.85, 0.30, 0.60), (0.15, 0.65, 0.55), (0.90, 0.55, 0.10)],
                       np.float32)
PLATE_COLOR = np.array([0.98, 0.98, 0.98], np.float32)


def _ingredient_of_unit(item: Array, num_ingredients: int) -> Array:
    """``int32[..., 3]``: the ingredient index of an item's first, second and third unit (-1 if absent)."""
    kinds = jnp.arange(num_ingredients)
    counts = (item[..., None] >> (2 + 2 * kinds)) & 3
    ends = jnp.cumsum(counts, axis=-1)  # [..., I]
    unit = jnp.arange(3)
    index = (ends[..., None, :] <= unit[:, None]).sum(-1)  # [..., 3]
    return jnp.where(unit < ends[..., -1:], index, -1)


def render_kitchen(static: np.ndarray, num_ingredients: int, grid: Array, recipe: Array, agent_pos: Array,
                   agent_dir: Array, held: Array, cook_time: Array, view_size: int | None) -> Array:
    """``uint8[height * TILE, width * TILE, 3]`` of one env (unbatched state arrays)."""
    rows_n, cols_n = static.shape
    height, width = rows_n * TILE, cols_n * TILE
    rows, cols = np.mgrid[0:height, 0:width]
    cell_y, cell_x = jnp.asarray(rows // TILE), jnp.asarray(cols // TILE)
    local_y = jnp.asarray((rows % TILE + 0.5) / TILE, jnp.float32)
    local_x = jnp.asarray((cols % TILE + 0.5) / TILE, jnp.float32)
    palette = np.zeros(static.shape + (3,), np.float32)
    for code, colour in STATIC_COLORS.items():
        palette[static == code] = colour
    piles = static >= INGREDIENT_PILE_BASE
    palette[piles] = 0.5 * INGREDIENT_COLORS[static[piles] - INGREDIENT_PILE_BASE] + 0.25
    image = jnp.asarray(palette)[cell_y, cell_x]
    radius = jnp.sqrt((local_x - 0.5) ** 2 + (local_y - 0.5) ** 2)
    colours = jnp.asarray(INGREDIENT_COLORS)

    def paint(image: Array, mask: Array, colour: Array) -> Array:
        return jnp.where(mask[..., None], colour, image)

    def dots(image: Array, mask: Array, item: Array, y: float) -> Array:
        """Up to three ingredient dots in a row at height ``y`` of each tile where ``mask``."""
        units = _ingredient_of_unit(item, num_ingredients)  # [H, W, 3]
        slot = jnp.clip(jnp.floor((local_x - 0.1) / 0.8 * 3).astype(jnp.int32), 0, 2)
        centre = 0.1 + (slot + 0.5) * 0.8 / 3
        in_dot = (jnp.abs(local_x - centre) < 0.1) & (jnp.abs(local_y - y) < 0.1)
        unit = jnp.take_along_axis(units, slot[..., None], axis=-1)[..., 0]
        return paint(image, mask & in_dot & (unit >= 0), colours[jnp.maximum(unit, 0)])

    kind, contents, timer = (grid[..., c][cell_y, cell_x] for c in range(3))
    is_pot = kind == POT
    # loose items: a plate (white disc) under its ingredients, or an ingredient disc
    loose = ~is_pot & (contents > 0)
    plated = loose & ((contents & 1) != 0)
    image = paint(image, plated & (radius < 0.38), jnp.asarray(PLATE_COLOR))
    single = _ingredient_of_unit(contents, num_ingredients)[..., 0]
    image = paint(image, loose & ~plated & (radius < 0.25), colours[jnp.maximum(single, 0)])
    image = dots(image, plated, contents, 0.5)
    # pots: contents as dots, a bar for cooking, green when cooked
    image = dots(image, is_pot, contents, 0.4)
    progress = 1.0 - timer / jnp.maximum(cook_time, 1)
    cooking = is_pot & (timer > 0)
    bar = (local_y > 0.75) & (local_y < 0.9)
    image = paint(image, cooking & bar & (local_x < progress), jnp.asarray([0.95, 0.55, 0.15]))
    image = paint(image, is_pot & ((contents & 2) != 0) & bar, jnp.asarray([0.3, 0.9, 0.3]))
    # the recipe, on indicators always and on buttons while they are shown
    shown = (kind == RECIPE_INDICATOR) | ((kind == BUTTON_RECIPE_INDICATOR) & (timer > 0))
    image = dots(image, shown, jnp.broadcast_to(recipe, shown.shape), 0.5)

    for agent in range(agent_pos.shape[0]):
        chef = jnp.asarray(CHEF_COLORS[agent % len(CHEF_COLORS)])
        here = (cell_x == agent_pos[agent, 0]) & (cell_y == agent_pos[agent, 1])
        image = paint(image, here & (radius < 0.42), chef)
        dx = jnp.asarray([0.0, 0.0, 1.0, -1.0])[agent_dir[agent]]
        dy = jnp.asarray([-1.0, 1.0, 0.0, 0.0])[agent_dir[agent]]
        notch = here & ((local_x - 0.5 - 0.3 * dx) ** 2 + (local_y - 0.5 - 0.3 * dy) ** 2 < 0.012)
        image = paint(image, notch, jnp.asarray([0.05, 0.05, 0.05]))
        item = held[agent]
        holding = here & (item > 0) & (radius < 0.2)
        first = _ingredient_of_unit(item, num_ingredients)[0]
        hand = jnp.where((item & 1) != 0, jnp.asarray(PLATE_COLOR), colours[jnp.maximum(first, 0)])
        image = paint(image, holding, hand)
        image = paint(image, holding & ((item & 1) != 0) & (item > 1) & (radius < 0.1),
                      colours[jnp.maximum(first, 0)])
        if view_size is not None:
            x0 = (agent_pos[agent, 0] - view_size) * TILE
            y0 = (agent_pos[agent, 1] - view_size) * TILE
            side = (2 * view_size + 1) * TILE
            px, py = jnp.asarray(cols), jnp.asarray(rows)
            inside = (px >= x0) & (px < x0 + side) & (py >= y0) & (py < y0 + side)
            border = inside & ((px < x0 + 2) | (px >= x0 + side - 2) | (py < y0 + 2) | (py >= y0 + side - 2))
            image = paint(image, border, chef)
    return (jnp.clip(image, 0.0, 1.0) * 255).astype(jnp.uint8)
