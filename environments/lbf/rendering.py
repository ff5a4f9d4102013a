"""A jittable tile view of one Level-Based Foraging field: foods, players, levels as pips, partial views.

Every pixel looks up its cell and its place inside the tile, so a frame is a few elementwise selects.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

TILE = 32
"""Pixels per cell side."""
FLOOR = np.array([0.95, 0.94, 0.90], np.float32)
GRID_LINE = np.array([0.80, 0.79, 0.75], np.float32)
FOOD = np.array([0.85, 0.45, 0.15], np.float32)
OUT_OF_VIEW = 0.82
"""Brightness of cells no player sees (partial observation only)."""
PIP = np.array([1.0, 1.0, 1.0], np.float32)
PLAYER_COLORS = np.array([(0.20, 0.40, 0.85), (0.85, 0.30, 0.60), (0.15, 0.65, 0.55), (0.90, 0.55, 0.10),
                          (0.55, 0.35, 0.75), (0.45, 0.60, 0.20), (0.80, 0.20, 0.20), (0.35, 0.35, 0.35)],
                         np.float32)
PIP_OFFSETS = np.array([(0, 0), (-1, -1), (1, 1), (-1, 1), (1, -1), (0, -1), (0, 1), (-1, 0), (1, 0)],
                       np.float32) * 0.22
"""Where a level's pips sit in a tile (up to nine), as fractions of the tile from its centre."""


def _pips(fy: Array, fx: Array, count: Array) -> Array:
    """Whether a pixel at tile fractions ``(fy, fx)`` lies on one of ``count`` pips."""
    offsets = jnp.asarray(PIP_OFFSETS)
    near = ((fy[..., None] - 0.5 - offsets[:, 0]) ** 2 + (fx[..., None] - 0.5 - offsets[:, 1]) ** 2) < 0.07**2
    return jnp.any(near & (jnp.arange(len(PIP_OFFSETS)) < count[..., None]), -1)


def render_field(rows_n: int, cols_n: int, sight: int, player_pos: Array, player_level: Array,
                 food_pos: Array, food_level: Array) -> Array:
    """``uint8[rows * TILE, cols * TILE, 3]`` of one env (unbatched state arrays)."""
    rows, cols = np.mgrid[0:rows_n * TILE, 0:cols_n * TILE]
    cell_r, cell_c = jnp.asarray(rows // TILE), jnp.asarray(cols // TILE)
    fy, fx = jnp.asarray((rows % TILE + 0.5) / TILE), jnp.asarray((cols % TILE + 0.5) / TILE)
    image = jnp.broadcast_to(jnp.asarray(FLOOR), (*rows.shape, 3))
    if sight < max(rows_n, cols_n):
        seen = jnp.any((jnp.abs(cell_r[..., None] - player_pos[:, 0]) <= sight)
                       & (jnp.abs(cell_c[..., None] - player_pos[:, 1]) <= sight), -1)
        image = jnp.where(seen[..., None], image, image * OUT_OF_VIEW)
    edge = (fy < 1.5 / TILE) | (fx < 1.5 / TILE)
    image = jnp.where(edge[..., None], jnp.asarray(GRID_LINE), image)

    at_food = (cell_r[..., None] == food_pos[:, 0]) & (cell_c[..., None] == food_pos[:, 1]) & (food_level > 0)
    food_here = (at_food * food_level).sum(-1)
    disc = (fy - 0.5) ** 2 + (fx - 0.5) ** 2 < (0.42) ** 2
    image = jnp.where(((food_here > 0) & disc)[..., None], jnp.asarray(FOOD), image)

    at_player = (cell_r[..., None] == player_pos[:, 0]) & (cell_c[..., None] == player_pos[:, 1])
    # the highest index wins a shared cell
    who = jnp.max(jnp.where(at_player, jnp.arange(player_pos.shape[0]), -1), -1)
    colors = jnp.asarray(PLAYER_COLORS)[jnp.maximum(who, 0) % len(PLAYER_COLORS)]
    square = (jnp.abs(fy - 0.5) < 0.38) & (jnp.abs(fx - 0.5) < 0.38)
    image = jnp.where(((who >= 0) & square)[..., None], colors, image)

    level_here = jnp.where(who >= 0, player_level[jnp.maximum(who, 0)], food_here)
    image = jnp.where(_pips(fy, fx, level_here)[..., None], jnp.asarray(PIP), image)
    return jnp.round(image * 255).astype(jnp.uint8)
