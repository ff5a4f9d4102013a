"""A jittable tile view of one kitchen: terrain, objects, pots with their onions and cooking progress, and
the two chefs with their facing and what they hold.

Every pixel looks up its cell (a static map) and its place inside the tile, so a frame is a handful of
elementwise selects: it jits, and vmaps over a whole episode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .layouts import (
    COUNTER,
    DISH_DISPENSER,
    FLOOR,
    ONION,
    ONION_DISPENSER,
    POT,
    SERVING,
    TOMATO,
    TOMATO_DISPENSER,
    Layout,
)

Array = jax.Array

TILE = 24
"""Pixels per cell side."""
TERRAIN_COLORS = {
    FLOOR: (0.93, 0.91, 0.86), COUNTER: (0.62, 0.47, 0.31), POT: (0.30, 0.30, 0.32),
    ONION_DISPENSER: (0.80, 0.72, 0.35), TOMATO_DISPENSER: (0.75, 0.30, 0.25),
    DISH_DISPENSER: (0.82, 0.84, 0.88), SERVING: (0.35, 0.62, 0.38),
}
OBJECT_COLORS = np.array([
    (0.0, 0.0, 0.0),      # nothing (unused)
    (0.96, 0.86, 0.30),   # onion
    (0.90, 0.22, 0.18),   # tomato
    (0.98, 0.98, 0.98),   # dish
    (0.95, 0.55, 0.15),   # soup
], np.float32)
CHEF_COLORS = np.array([(0.20, 0.40, 0.85), (0.85, 0.30, 0.60)], np.float32)


def render_kitchen(layout: Layout, position: Array, orientation: Array, held: Array, kind: Array,
                   onions: Array, tomatoes: Array, tick: Array, cook_time: Array) -> Array:
    """``uint8[height * TILE, width * TILE, 3]`` of one env's kitchen (unbatched state arrays)."""
    height, width = layout.height * TILE, layout.width * TILE
    rows, cols = np.mgrid[0:height, 0:width]
    cell = jnp.asarray((rows // TILE) * layout.width + cols // TILE)
    local_y = jnp.asarray((rows % TILE + 0.5) / TILE, jnp.float32)  # 0..1 inside the tile, down
    local_x = jnp.asarray((cols % TILE + 0.5) / TILE, jnp.float32)
    terrain = layout.terrain.reshape(-1)
    palette = np.array([TERRAIN_COLORS[int(t)] for t in terrain], np.float32)
    image = jnp.asarray(palette)[cell]
    is_pot = jnp.asarray(terrain == POT)[cell]
    radius = jnp.sqrt((local_x - 0.5) ** 2 + (local_y - 0.5) ** 2)

    # objects on counters (a disc) and pot contents (one dot per ingredient, a progress bar)
    cell_kind = kind[cell]
    disc = (cell_kind > 0) & ~is_pot & (radius < 0.3)
    image = jnp.where(disc[..., None], jnp.asarray(OBJECT_COLORS)[cell_kind], image)
    ingredients = onions[cell] + tomatoes[cell]
    dot = jnp.floor(local_x * 3).astype(jnp.int32)  # which third of the tile
    dot_center = (dot + 0.5) / 3
    in_dot = (jnp.abs(local_x - dot_center) < 0.12) & (jnp.abs(local_y - 0.4) < 0.12)
    dot_is_tomato = dot >= onions[cell]
    show_dot = is_pot & (cell_kind > 0) & in_dot & (dot < ingredients)
    dot_color = jnp.where(dot_is_tomato[..., None], jnp.asarray(OBJECT_COLORS[TOMATO]),
                          jnp.asarray(OBJECT_COLORS[ONION]))
    image = jnp.where(show_dot[..., None], dot_color, image)
    progress = jnp.clip(tick[cell] / jnp.maximum(cook_time, 1), 0.0, 1.0)
    bar = is_pot & (tick[cell] >= 0) & (local_y > 0.75) & (local_y < 0.9) & (local_x < progress)
    ready = tick[cell] >= cook_time
    bar_color = jnp.where(ready[..., None], jnp.asarray([0.3, 0.9, 0.3]), jnp.asarray([0.95, 0.55, 0.15]))
    image = jnp.where(bar[..., None], bar_color, image)

    # chefs: a disc, a notch on the side they face, what they hold in the middle
    for player in range(2):
        here = cell == position[player]
        body = here & (radius < 0.42)
        image = jnp.where(body[..., None], jnp.asarray(CHEF_COLORS[player]), image)
        dx = jnp.asarray([0.0, 0.0, 1.0, -1.0])[orientation[player]]
        dy = jnp.asarray([-1.0, 1.0, 0.0, 0.0])[orientation[player]]
        notch = here & ((local_x - 0.5 - 0.3 * dx) ** 2 + (local_y - 0.5 - 0.3 * dy) ** 2 < 0.012)
        image = jnp.where(notch[..., None], 0.05, image)
        hand = here & (held[player] > 0) & (radius < 0.17)
        image = jnp.where(hand[..., None], jnp.asarray(OBJECT_COLORS)[held[player]], image)
    return (jnp.clip(image, 0.0, 1.0) * 255).astype(jnp.uint8)
