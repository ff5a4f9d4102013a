"""What the STORM grids share: the 8x8 board, spawn tables, the egocentric view, payoff tables, drawing.

Coordinates follow JaxMARL's: a cell is ``(x, y)`` with ``x, y`` in ``[0, 8)``, stored flat as
``x * 8 + y``. Facing ``0`` steps ``+y``, ``1`` steps ``+x``, ``2`` steps ``-y``, ``3`` steps ``-x``;
turning left adds one to the facing, turning right subtracts one (mod 4).
"""

from __future__ import annotations

from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.types import TimeStep

from ..matrix.matrix import GAMES

Array = jax.Array
StateT = TypeVar("StateT")

GRID_SIZE = 8
"""Side of the square board."""
NUM_CELLS = GRID_SIZE * GRID_SIZE
VIEW_SIZE = 5
"""Side of the square each agent sees."""
VIEW_CELLS = VIEW_SIZE * VIEW_SIZE
NUM_COINS = 6
"""Coins of each kind."""

STEP_X = np.array([0, 1, 0, -1], np.int32)
"""x change of one step forward, by facing."""
STEP_Y = np.array([1, 0, -1, 0], np.int32)
"""y change of one step forward, by facing."""

# JaxMARL's 12 coin cells (storm_2p.py:116-133); the fixed layout alternates them between kinds.
COIN_CELLS = np.array([[1, 1], [1, 2], [2, 1], [1, 6], [2, 6], [1, 5],
                       [6, 2], [5, 1], [6, 1], [6, 6], [6, 5], [5, 6]], np.int32)

# JaxMARL's 18 start cells for the first agent, written (i, j) and used as cell (j, i); the second agent
# starts at the mirror image (7 - j, 7 - i) (storm_2p.py:150-179).
_START_IJ = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (0, 7), (0, 6), (0, 5), (1, 7),
             (7, 0), (7, 1), (7, 2), (6, 0), (7, 7), (7, 6), (7, 5), (6, 7), (6, 5)]
PAIR_STARTS = np.array([[(j, i), (GRID_SIZE - 1 - j, GRID_SIZE - 1 - i)] for i, j in _START_IJ], np.int32)
"""``int32[18, 2, 2]``: start pair, agent, (x, y)."""


def view_offsets(view_size: int = VIEW_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """``(dx, dy)``, each ``int32[4, view_size ** 2]``: for a facing and a cell of the (rotated) view, read
    row-major, the board offset from the viewer. The viewer sits at view cell ``(view_size // 2, 0)`` and
    sees ``view_size - 1`` cells ahead; the window is JaxMARL's ``_get_obs_point`` slice turned by
    ``rot90(k=facing)``."""
    half, far = view_size // 2, view_size - 1
    corner = {0: (-half, 0), 1: (0, -half), 2: (-half, -far), 3: (-far, -half)}  # window's (0, 0), relative
    rows, cols = np.meshgrid(np.arange(view_size), np.arange(view_size), indexing="ij")
    cells = view_size * view_size
    dx = np.stack([corner[d][0] + np.rot90(rows, k=d) for d in range(4)]).reshape(4, cells)
    dy = np.stack([corner[d][1] + np.rot90(cols, k=d) for d in range(4)]).reshape(4, cells)
    return dx.astype(np.int32), dy.astype(np.int32)


VIEW_DX, VIEW_DY = view_offsets()


def view_cells(x: Array, y: Array, facing: Array, grid_size: int = GRID_SIZE,
               view_size: int = VIEW_SIZE) -> tuple[Array, Array]:
    """For viewers at ``(x, y)`` facing ``facing`` (each ``[n, B]``), the flat board cell of each view
    cell (``int32[n, view_size ** 2, B]``, clipped onto the board) and whether it lies on the board."""
    if view_size == VIEW_SIZE:
        offsets_x, offsets_y = VIEW_DX, VIEW_DY
    else:
        offsets_x, offsets_y = view_offsets(view_size)
    dx = jnp.asarray(offsets_x)[facing].transpose(0, 2, 1)  # [n, view cells, B]
    dy = jnp.asarray(offsets_y)[facing].transpose(0, 2, 1)
    cx, cy = x[:, None] + dx, y[:, None] + dy
    inside = (cx >= 0) & (cx < grid_size) & (cy >= 0) & (cy < grid_size)
    cell = jnp.clip(cx, 0, grid_size - 1) * grid_size + jnp.clip(cy, 0, grid_size - 1)
    return cell, inside


def beam_cells(x: Array, y: Array, facing: Array, grid_size: int = GRID_SIZE) -> Array:
    """The four cells a zap reaches (``int32[4, ...]``, flat): one ahead, two ahead, ahead-right and
    ahead-left. As in JaxMARL, the first two are clipped onto the board and a diagonal that leaves it falls
    back on the (clipped) cell ahead."""
    sx, sy = jnp.asarray(STEP_X), jnp.asarray(STEP_Y)
    fx, fy = sx[facing], sy[facing]
    top = grid_size - 1

    def clipped(cx: Array, cy: Array) -> Array:
        return jnp.clip(cx, 0, top) * grid_size + jnp.clip(cy, 0, top)

    ahead = clipped(x + fx, y + fy)
    cells = [ahead, clipped(x + 2 * fx, y + 2 * fy)]
    for turn in (1, 3):  # right of the facing is facing + 1, left is facing - 1
        side = (facing + turn) % 4
        cx, cy = x + fx + sx[side], y + fy + sy[side]
        off = (cx < 0) | (cx > top) | (cy < 0) | (cy > top)
        cells.append(jnp.where(off, ahead, cx * grid_size + cy))
    return jnp.stack(cells)


def cell_value(grid: Array, cell: Array) -> Array:
    """``grid[cell]`` per env: ``grid`` is ``[cells, B]``, ``cell`` is ``[..., B]``."""
    flat = cell.reshape(-1, cell.shape[-1])
    return jnp.take_along_axis(grid, flat, axis=0).reshape(cell.shape)


def game_payoffs(game: str) -> np.ndarray:
    """JaxMARL's STORM layout of a matrix game: ``[player][first agent's coin][second agent's coin]``, so the
    second player's table is its ``[own][other]`` table transposed (JaxMARL applies both as
    ``inv_0 @ M[p] @ inv_1``). Coin 0 cooperates, coin 1 defects."""
    table = np.asarray(GAMES[game], np.float32)
    return np.stack([table[0], table[1].T])


GAME_NAMES = ("prisoners_dilemma", "stag_hunt", "chicken", "matching_pennies")

# Colours for drawing: the cooperate coin is green and the defect coin red, as in JaxMARL's renders.
BACKGROUND = (24, 24, 24)
GRID_LINE = (60, 60, 60)
WALL = (127, 127, 127)
BEAM = (188, 189, 34)
COOPERATE = (44, 160, 44)
DEFECT = (214, 39, 40)
AGENT_COLOURS = np.array([(255, 127, 14), (31, 119, 180), (236, 64, 122), (255, 235, 59),
                          (41, 182, 246), (171, 71, 188), (121, 85, 72), (255, 205, 210)], np.uint8)


def draw_board(codes: Array, agent_code: Array, facing: Array, frozen: Array, tile: int = 24,
               grid_size: int = GRID_SIZE) -> Array:
    """A jittable picture of one board, ``uint8[(size + 2) * tile, (size + 2) * tile, 3]`` with a wall border.

    ``codes`` (``int32[size * size]``) says what each cell shows: 0 empty, 1 cooperate coin, 2 defect coin,
    3 beam, 4 + a for agent ``a``. ``agent_code``/``facing``/``frozen`` are per agent. ``x`` runs left to
    right and ``y`` bottom to top; an agent is a disc with a white nose toward its facing, dimmed while
    frozen."""
    side = (grid_size + 2) * tile
    pix = jnp.arange(side)
    col, row = jnp.meshgrid(pix, pix, indexing="xy")  # row counts down from the top
    cx, cy = col // tile - 1, grid_size - row // tile  # board cell under each pixel
    u = (col % tile + 0.5) / tile - 0.5  # position inside the tile, in [-0.5, 0.5], y up
    v = 0.5 - (row % tile + 0.5) / tile
    on_board = (cx >= 0) & (cx < grid_size) & (cy >= 0) & (cy < grid_size)
    code = codes[jnp.clip(cx, 0, grid_size - 1) * grid_size + jnp.clip(cy, 0, grid_size - 1)]
    code = jnp.where(on_board, code, -1)

    def paint(image: Array, mask: Array, colour: Array | tuple[int, int, int]) -> Array:
        return jnp.where(mask[..., None], jnp.asarray(colour, jnp.uint8), image)

    image = jnp.broadcast_to(jnp.asarray(BACKGROUND, jnp.uint8), (side, side, 3))
    image = paint(image, ~on_board, WALL)
    edge = on_board & ((col % tile == 0) | (row % tile == 0))
    image = paint(image, edge, GRID_LINE)
    radius = u * u + v * v
    image = paint(image, (code == 1) & (radius < 0.09), COOPERATE)
    image = paint(image, (code == 2) & (radius < 0.09), DEFECT)
    image = paint(image, (code == 3) & (jnp.abs(u) < 0.4) & (jnp.abs(v) < 0.4), BEAM)
    for agent in range(agent_code.shape[0]):
        here = code == 4 + agent
        colour = jnp.asarray(AGENT_COLOURS[agent % len(AGENT_COLOURS)], jnp.int32)
        colour = jnp.where(frozen[agent], colour // 3, colour).astype(jnp.uint8)
        image = paint(image, here & (radius < 0.16), colour)
        fx, fy = jnp.asarray(STEP_X)[facing[agent]], jnp.asarray(STEP_Y)[facing[agent]]
        nose = (u - 0.28 * fx) ** 2 + (v - 0.28 * fy) ** 2 < 0.012
        image = paint(image, here & nose, (255, 255, 255))
    return image


def draw_inventories(inventory: Array, width: int, tile: int = 24) -> Array:
    """One strip per agent under the board: its cooperate coins (green) then its defect coins (red), one
    square each. ``inventory`` is ``[n, 2]``."""
    num = inventory.shape[0]
    height = num * tile
    row, col = jnp.meshgrid(jnp.arange(height), jnp.arange(width), indexing="ij")
    agent = row // tile
    slot = col // tile - 1  # the first tile holds the agent's colour
    held = inventory[agent].astype(jnp.int32)
    cooperate = (slot >= 0) & (slot < held[..., 0])
    defect = (slot >= held[..., 0]) & (slot < held[..., 0] + held[..., 1])
    inner = (col % tile > 2) & (col % tile < tile - 3) & (row % tile > 2) & (row % tile < tile - 3)
    image = jnp.broadcast_to(jnp.asarray(BACKGROUND, jnp.uint8), (height, width, 3))
    marker = (col < tile) & inner
    image = jnp.where(marker[..., None], jnp.asarray(AGENT_COLOURS[:num], jnp.uint8)[agent], image)
    image = jnp.where((cooperate & inner)[..., None], jnp.asarray(COOPERATE, jnp.uint8), image)
    image = jnp.where((defect & inner)[..., None], jnp.asarray(DEFECT, jnp.uint8), image)
    return image


def where_envs(where: Array, new: StateT, old: StateT) -> StateT:
    """The state ``new`` in the envs ``where`` (``bool[B]``) marks and ``old`` elsewhere (batch-last)."""
    return jax.tree.map(lambda a, b: jnp.where(where, a, b), new, old)


def storm_timestep(obs: Array, reward: Array, step: Array, max_steps: Array | int, num_actions: int,
                   cooperative: Array, defecting: Array) -> TimeStep:
    """Every STORM env's TimeStep: ``n`` agents in one group, never terminated, truncated on the
    ``max_steps``-th step, every action legal, and the pick-up counts of the social measures in ``info``."""
    n, num_envs = reward.shape
    truncated = jnp.broadcast_to((step >= max_steps)[None], (n, num_envs))
    return TimeStep(obs={"agents": obs}, reward={"agents": reward},
                    terminated={"agents": jnp.zeros((n, num_envs), bool)}, truncated={"agents": truncated},
                    action_mask={"agents": jnp.ones((n, num_actions, num_envs), bool)},
                    info={"cooperative_pickups": cooperative, "defecting_pickups": defecting})
