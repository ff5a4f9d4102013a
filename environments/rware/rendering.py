"""A jittable tile view of one warehouse: highways, goals, shelves (requested ones highlighted), robots with
a notch on the side they face, and a carried shelf as a frame around its robot.

Every pixel looks up its cell and its place inside the tile, so a frame is a handful of elementwise selects:
it jits, and vmaps over a whole episode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

TILE = 16
"""Pixels per cell side."""
SHELF_AREA = (0.82, 0.82, 0.80)
HIGHWAY = (0.96, 0.96, 0.94)
GOAL = (0.35, 0.35, 0.38)
SHELF = (0.45, 0.55, 0.70)
REQUESTED = (0.20, 0.75, 0.70)
ROBOT = (0.95, 0.55, 0.10)
LOADED_ROBOT = (0.85, 0.25, 0.20)
NOTCH = (0.08, 0.08, 0.08)
FACING = np.array([(0.0, -1.0), (0.0, 1.0), (-1.0, 0.0), (1.0, 0.0)], np.float32)
"""``(dx, dy)`` per facing (up, down, left, right)."""


def render_warehouse(highway: np.ndarray, goals: np.ndarray, agent_pos: Array, agent_dir: Array,
                     carried: Array, shelf_pos: Array, requested: Array) -> Array:
    """``uint8[H * TILE, W * TILE, 3]`` of one env (unbatched state arrays)."""
    rows_n, cols_n = highway.shape
    rows, cols = np.mgrid[0 : rows_n * TILE, 0 : cols_n * TILE]
    cell_y, cell_x = jnp.asarray(rows // TILE), jnp.asarray(cols // TILE)
    local_y = jnp.asarray((rows % TILE + 0.5) / TILE, jnp.float32)
    local_x = jnp.asarray((cols % TILE + 0.5) / TILE, jnp.float32)
    palette = np.where(highway[..., None], np.asarray(HIGHWAY, np.float32),
                       np.asarray(SHELF_AREA, np.float32)).astype(np.float32)
    palette[goals[:, 1], goals[:, 0]] = GOAL
    image = jnp.asarray(palette)[cell_y, cell_x]
    grid_lines = (rows % TILE == 0) | (cols % TILE == 0)
    image = jnp.where(jnp.asarray(grid_lines)[..., None], image * 0.85, image)

    def paint(image: Array, mask: Array, colour: tuple[float, ...] | Array) -> Array:
        return jnp.where(mask[..., None], jnp.asarray(colour, jnp.float32), image)

    # shelves: a square per shelf, coloured by whether it is requested
    num_shelves = shelf_pos.shape[0]
    shelf_ids = jnp.zeros((rows_n, cols_n), jnp.int32).at[shelf_pos[:, 1], shelf_pos[:, 0]].set(
        jnp.arange(1, num_shelves + 1))
    shelf_here = shelf_ids[cell_y, cell_x]
    square = (jnp.abs(local_x - 0.5) < 0.42) & (jnp.abs(local_y - 0.5) < 0.42)
    is_requested = requested[jnp.maximum(shelf_here - 1, 0)] & (shelf_here > 0)
    image = paint(image, square & (shelf_here > 0), SHELF)
    image = paint(image, square & is_requested, REQUESTED)
    # robots: a disc (red when loaded, the shelf showing as a frame), a notch where they face
    radius = jnp.sqrt((local_x - 0.5) ** 2 + (local_y - 0.5) ** 2)
    robot_ids = jnp.zeros((rows_n, cols_n), jnp.int32).at[agent_pos[:, 1], agent_pos[:, 0]].set(
        jnp.arange(1, agent_pos.shape[0] + 1))
    robot_here = robot_ids[cell_y, cell_x]
    index = jnp.maximum(robot_here - 1, 0)
    present = robot_here > 0
    loaded = present & (carried[index] >= 0)
    image = paint(image, present & (radius < 0.3), ROBOT)
    image = paint(image, loaded & (radius < 0.3), LOADED_ROBOT)
    facing = jnp.asarray(FACING)[agent_dir[index]]
    notch = (local_x - 0.5 - 0.2 * facing[..., 0]) ** 2 + (local_y - 0.5 - 0.2 * facing[..., 1]) ** 2 < 0.008
    image = paint(image, present & notch, NOTCH)
    return (jnp.clip(image, 0.0, 1.0) * 255).astype(jnp.uint8)
