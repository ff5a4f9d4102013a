"""STORM for two players (JaxMARL's ``storm_2p``, ``InTheGrid_2p``): a matrix game played through a grid.

Two agents walk an 8x8 board collecting coins of two kinds, cooperate (green) and defect (red). An agent
holding at least one coin may zap; when a zap's beam reaches the other agent and both hold coins, the two
inventories, normalised to mixed strategies, are played through the payoff matrix, both agents freeze for
``freeze_penalty`` steps and then respawn on a fresh board with empty inventories. Every ``inner_steps``
steps the board starts over (JaxMARL's inner episode); the episode is ``max_steps`` steps.

Rules, constants and random draws follow JaxMARL 0.2.0's ``storm_2p.py`` step for step; see README.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv, per_env
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.types import EnvParams, TimeStep
from jaxmarl_suite.errors import require

from .grid import (
    COIN_CELLS,
    GAME_NAMES,
    GRID_SIZE,
    NUM_CELLS,
    NUM_COINS,
    PAIR_STARTS,
    STEP_X,
    STEP_Y,
    VIEW_CELLS,
    beam_cells,
    cell_value,
    draw_board,
    draw_inventories,
    game_payoffs,
    storm_timestep,
    view_cells,
    where_envs,
)

Array = jax.Array

LEFT, RIGHT, FORWARD, INTERACT, STAY = range(5)
"""The five actions."""

EMPTY, FIRST_AGENT, SECOND_AGENT, COOPERATE_COIN, DEFECT_COIN, WALL, BEAM = range(7)
"""Cell codes, JaxMARL's ``Items`` (JaxMARL calls the coins red and blue; red cooperates)."""

NUM_CHANNELS = 10
"""Per view cell: self, other agent, cooperate coin, defect coin, wall, beam, then the other agent's
facing relative to the viewer's (one-hot of 4)."""
INVENTORY_SIZE = 6
OBS_SIZE = VIEW_CELLS * NUM_CHANNELS + INVENTORY_SIZE

# JaxMARL's fixed layout: its coin-picking draw is randint(0, 1), always 0, so the cooperate coins always
# take COIN_CELLS[1::2] and the defect coins COIN_CELLS[::2] (storm_2p.py:809-811).
_FIXED_COOPERATE, _FIXED_DEFECT = COIN_CELLS[1::2], COIN_CELLS[::2]


def _coin_board(cooperate: np.ndarray | Array, defect: np.ndarray | Array) -> Array:
    """``int8[64]`` with the coins of each kind at their ``[6, 2]`` cells."""
    board = jnp.zeros((NUM_CELLS,), jnp.int8)
    board = board.at[cooperate[:, 0] * GRID_SIZE + cooperate[:, 1]].set(COOPERATE_COIN)
    return board.at[defect[:, 0] * GRID_SIZE + defect[:, 1]].set(DEFECT_COIN)


_FIXED_COINS = np.asarray(_coin_board(_FIXED_COOPERATE, _FIXED_DEFECT))


def _first_of_permutation(key: Array, size: int) -> Array:
    """``jax.random.permutation(key, size)[0]`` (JaxMARL's ``choice(key, starts, replace=False)``) without
    the sort: below 2**10 elements JAX shuffles in one round, a stable sort by 32 random bits drawn from the
    key's second half, so the first element is the first argmin of those bits (tested against JAX)."""
    return jnp.argmin(jax.random.bits(jax.random.split(key)[1], (size,), jnp.uint32))


@struct.dataclass
class Storm2pParams(EnvParams):
    """Traceable parameters: vmap over ``payoff_matrix`` for a family of games."""

    payoff_matrix: Any = None
    """``float32[2, 2, 2]``, JaxMARL's layout: ``[player][agent_0's coin][agent_1's coin]``, coin 0
    cooperates. Player ``p`` is paid ``s_0 @ payoff_matrix[p] @ s_1`` for normalised inventories ``s``."""
    freeze_penalty: int = 5
    """Steps both agents stand frozen after an interaction before they respawn."""
    inner_steps: int = 152
    """The board starts over every ``inner_steps`` steps (JaxMARL's inner episode)."""
    max_steps: int = 152
    """Episode length (JaxMARL's ``num_inner_steps * num_outer_steps``); truncated after the last."""


@struct.dataclass
class Storm2pState:
    """Batch-last state of ``B`` boards."""

    grid: Array
    """``int8[64, B]``: what each cell (``x * 8 + y``) holds, as a code from ``EMPTY`` to ``BEAM``."""
    coins: Array
    """``int8[64, B]``: the coin layout the board returns to when the agents respawn."""
    x: Array
    """``int32[2, B]``."""
    y: Array
    """``int32[2, B]``."""
    facing: Array
    """``int32[2, B]``: 0 +y, 1 +x, 2 -y, 3 -x."""
    inventory: Array
    """``int32[2, 2, B]``: agent, coin kind (cooperate, defect)."""
    freeze: Array
    """``int32[B]``: -1 when free; after an interaction counts ``freeze_penalty`` down to 1."""
    step: Array
    """``int32[B]``: steps taken in this episode."""


class Storm2p(BatchNativeEnv):
    """Two-player STORM (JaxMARL's ``storm_2p``). ``game`` picks the payoffs (``prisoners_dilemma``,
    ``stag_hunt``, ``chicken``, ``matching_pennies``); ``payoff_matrix`` overrides them in JaxMARL's layout.
    ``num_inner_steps * num_outer_steps`` is the episode length; ``fixed_coin_location=False`` shuffles
    the 12 coin cells between the kinds at every start."""

    reference = "jaxmarl.storm_2p"
    render_fps = 8
    episodes_end_together = True
    all_actions_legal = True
    social_measures = True

    def __init__(self, game: str = "prisoners_dilemma", payoff_matrix: Any = None, freeze_penalty: int = 5,
                 num_inner_steps: int = 152, num_outer_steps: int = 1, fixed_coin_location: bool = True,
                 num_agents: int = 2) -> None:
        require(game in GAME_NAMES, "game", f"must be one of {list(GAME_NAMES)}, got {game!r}")
        table = np.asarray(game_payoffs(game) if payoff_matrix is None else payoff_matrix, np.float32)
        require(table.shape == (2, 2, 2) and bool(np.isfinite(table).all()), "payoff_matrix",
                "must be finite numbers [player][agent_0's coin][agent_1's coin], shape (2, 2, 2), "
                f"got {table}")
        for name, value in (("freeze_penalty", freeze_penalty), ("num_inner_steps", num_inner_steps),
                            ("num_outer_steps", num_outer_steps)):
            require(isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 1,
                    name, f"must be an integer >= 1, got {value!r}")
        require(isinstance(fixed_coin_location, bool), "fixed_coin_location",
                f"must be True or False, got {fixed_coin_location!r}")
        require(num_agents == 2, "num_agents", f"storm_2p has exactly 2 agents, got {num_agents!r}")
        self.game = game
        self.fixed_coin_location = fixed_coin_location
        self.groups = {"agents": ("agent_0", "agent_1")}
        self._params = Storm2pParams(payoff_matrix=jnp.asarray(table), freeze_penalty=int(freeze_penalty),
                                     inner_steps=int(num_inner_steps),
                                     max_steps=int(num_inner_steps) * int(num_outer_steps))

    @property
    def default_params(self) -> Storm2pParams:
        """The game's payoffs, freeze penalty and episode lengths."""
        return self._params

    def observation_space(self, group: str) -> Box:
        """``float32[256]``: the 5x5 egocentric view as ``[5, 5, 10]`` flattened row-major (channels: self,
        other, cooperate coin, defect coin, wall, beam, other's relative facing x4), then the inventory part:
        own cooperate and defect coins, own and other's "holds a coin", and the other's coins while frozen."""
        return Box(0.0, float(NUM_COINS), (OBS_SIZE,), np.float32)  # at most the 6 coins of a kind

    def action_space(self, group: str) -> Discrete:
        """0 turn left, 1 turn right, 2 forward, 3 zap, 4 stay."""
        return Discrete(5)

    # --- starts -----------------------------------------------------------------------------------------

    def _start_draws(self, keys: Array) -> tuple[Array, Array, Array]:
        """JaxMARL's ``_reset_state`` draws from each key: start pair, facings and the coin shuffle."""

        def draw(key: Array) -> tuple[Array, Array, Array]:
            _, sub = jax.random.split(key)
            pair = _first_of_permutation(sub, len(PAIR_STARTS))
            facing = jax.random.randint(sub, (2,), 0, 3, jnp.int8)  # JaxMARL never starts facing -x
            order = jax.random.permutation(sub, len(COIN_CELLS))
            return pair, facing.astype(jnp.int32), order

        return per_env(keys, draw)

    def _respawn_draws(self, keys: Array) -> tuple[Array, Array]:
        """JaxMARL's ``_soft_reset_state`` draws (from the step's key itself)."""

        def draw(key: Array) -> tuple[Array, Array]:
            pair = _first_of_permutation(key, len(PAIR_STARTS))
            facing = jax.random.randint(key, (2,), 0, 3, jnp.int8)
            return pair, facing.astype(jnp.int32)

        return per_env(keys, draw)

    def _coins(self, order: Array) -> Array:
        """``int8[64, B]`` coin layouts: fixed, or the first 6 shuffled cells cooperate."""
        num_envs = order.shape[-1]
        if self.fixed_coin_location:
            return jnp.broadcast_to(jnp.asarray(_FIXED_COINS)[:, None], (NUM_CELLS, num_envs))
        cells = jnp.asarray(COIN_CELLS)[order]  # [12, B, 2]
        flat = cells[..., 0] * GRID_SIZE + cells[..., 1]
        kind = jnp.where(jnp.arange(2 * NUM_COINS) < NUM_COINS, COOPERATE_COIN, DEFECT_COIN)
        here = flat[None] == jnp.arange(NUM_CELLS)[:, None, None]  # [64, 12, B]
        return jnp.sum(jnp.where(here, kind[None, :, None], 0), axis=1).astype(jnp.int8)

    @staticmethod
    def _place(pair: Array) -> tuple[Array, Array, Array]:
        """Positions ``[2, B]`` of the start pair and their flat cells."""
        starts = jnp.asarray(PAIR_STARTS)[pair]  # [B, 2, 2]
        x, y = starts[..., 0].T, starts[..., 1].T
        return x, y, x * GRID_SIZE + y

    def _start(self, keys: Array) -> Storm2pState:
        """A fresh board: agents written first, then every coin over them, as JaxMARL does (so an agent whose
        start cell is a coin cell is hidden under that coin until it moves)."""
        pair, facing, order = self._start_draws(keys)
        x, y, cell = self._place(pair)
        coins = self._coins(order)
        cells = jnp.arange(NUM_CELLS)[:, None]
        grid = jnp.where(cells == cell[0], FIRST_AGENT, jnp.where(cells == cell[1], SECOND_AGENT, 0))
        grid = jnp.where(coins != EMPTY, coins, grid.astype(jnp.int8))
        num_envs = keys.shape[0]
        return Storm2pState(grid=grid, coins=coins, x=x, y=y, facing=facing,
                            inventory=jnp.zeros((2, 2, num_envs), jnp.int32),
                            freeze=jnp.full((num_envs,), -1, jnp.int32),
                            step=jnp.zeros((num_envs,), jnp.int32))

    # --- reset and step ---------------------------------------------------------------------------------

    def reset_batch(self, keys: Array, params: Storm2pParams) -> tuple[Storm2pState, TimeStep]:
        """JaxMARL's ``reset(key)`` for every key."""
        state = self._start(keys)
        zeros = jnp.zeros((2, keys.shape[0]), jnp.float32)
        return state, self._timestep(state, zeros, zeros, zeros, params)

    def step_batch(self, keys: Array, state: Storm2pState, actions: dict[str, Array],
                   params: Storm2pParams) -> tuple[Storm2pState, TimeStep]:
        """JaxMARL's ``step_env(key, ...)`` for every key: move, pick up, zap, pay, freeze, respawn."""
        num_envs = keys.shape[0]
        cells = jnp.arange(NUM_CELLS)[:, None]
        act = jnp.where(state.freeze[None] > 0, STAY, actions["agents"].astype(jnp.int32))

        # Turn, or step forward and stop at the edge.
        facing = (state.facing + jnp.where(act == LEFT, 1, jnp.where(act == RIGHT, 3, 0))) % 4
        forward = act == FORWARD
        x = jnp.clip(state.x + jnp.where(forward, jnp.asarray(STEP_X)[state.facing], 0), 0, GRID_SIZE - 1)
        y = jnp.clip(state.y + jnp.where(forward, jnp.asarray(STEP_Y)[state.facing], 0), 0, GRID_SIZE - 1)
        moved = (x != state.x) | (y != state.y)
        # Both heading for one cell: whoever stood still keeps it; if both moved, a coin flip.
        collide = (x[0] == x[1]) & (y[0] == y[1])
        both = collide & moved[0] & moved[1]
        first_wins = jax.lax.cond(  # the flip is rare: draw only on steps where some env needs it
            jnp.any(both), lambda: per_env(keys, lambda key: jax.random.choice(key, jnp.array([0, 1]))),
            lambda: jnp.zeros((num_envs,), jnp.int32))
        back = jnp.stack([collide & moved[0] & ~moved[1] | both & (first_wins == 0),
                          collide & ~moved[0] & moved[1] | both & (first_wins == 1)])
        x, y = jnp.where(back, state.x, x), jnp.where(back, state.y, y)
        facing = jnp.where(back, state.facing, facing)

        # Coins are taken from the cell entered (before the board is redrawn).
        old_cell, cell = state.x * GRID_SIZE + state.y, x * GRID_SIZE + y
        found = cell_value(state.grid, cell)
        took_cooperate, took_defect = found == COOPERATE_COIN, found == DEFECT_COIN
        inventory = state.inventory + jnp.stack([took_cooperate, took_defect], axis=1).astype(jnp.int32)
        grid = jnp.where((cells == old_cell[0]) | (cells == old_cell[1]), jnp.int8(EMPTY), state.grid)
        grid = jnp.where(cells == cell[0], jnp.int8(FIRST_AGENT),
                         jnp.where(cells == cell[1], jnp.int8(SECOND_AGENT), grid))

        # Zaps: last step's beams fade; each zap lights the empty cells its beam reaches.
        grid = jnp.where(grid == BEAM, jnp.int8(EMPTY), grid)
        zap = act == INTERACT
        beams = beam_cells(x, y, facing)  # [4, 2, B]
        reaches_other = jnp.any(beams == cell[::-1][None], axis=0)
        lit = jnp.any((beams[:, :, None] == cells[None, None]) & zap[None, :, None], axis=(0, 1))
        grid = jnp.where(lit & (grid == EMPTY), jnp.int8(BEAM), grid)
        holds = jnp.sum(inventory, axis=1) > 0
        interact = jnp.any(zap & reaches_other, axis=0) & holds[0] & holds[1]

        # The inventories as mixed strategies through the payoff matrix.
        held = inventory.astype(jnp.float32)
        share = held / jnp.maximum(jnp.sum(held, axis=1, keepdims=True), 1.0)
        payoff = jnp.asarray(params.payoff_matrix, jnp.float32)
        first, second = share[0][:, None, None], share[1]  # [2 coins, 1, 1, B], [2 coins, B]
        row = first[0] * payoff[:, 0, :, None] + first[1] * payoff[:, 1, :, None]  # s_0 @ M[p]: [p, coin, B]
        reward = jnp.where(interact[None], row[:, 0] * second[0] + row[:, 1] * second[1], 0.0)

        # Freeze, count down, respawn when the count reaches zero.
        countdown = jnp.where(interact, params.freeze_penalty, state.freeze)
        countdown = jnp.where(countdown > 0, countdown - 1, countdown)
        respawn = countdown == 0
        state = Storm2pState(grid=grid, coins=state.coins, x=x, y=y, facing=facing, inventory=inventory,
                             freeze=countdown, step=state.step + 1)
        state = jax.lax.cond(jnp.any(respawn), lambda s: self._respawn(keys, s, respawn), lambda s: s, state)
        state = dataclasses.replace(state, freeze=jnp.where(interact, params.freeze_penalty, state.freeze))

        # Inner episodes: the board starts over (the last step's reward is dropped, as in JaxMARL).
        inner_end = state.step % params.inner_steps == 0
        restart = inner_end & (state.step < params.max_steps)
        state = jax.lax.cond(jnp.any(restart), lambda s: self._restart(keys, s, restart), lambda s: s, state)
        reward = jnp.where(inner_end[None], 0.0, reward)
        return state, self._timestep(state, reward, took_cooperate.astype(jnp.float32),
                                     took_defect.astype(jnp.float32), params)

    def _respawn(self, keys: Array, state: Storm2pState, where: Array) -> Storm2pState:
        """JaxMARL's soft reset where ``where``: every coin back, new start cells and facings, empty hands."""
        pair, facing = self._respawn_draws(keys)
        x, y, cell = self._place(pair)
        cells = jnp.arange(NUM_CELLS)[:, None]
        grid = jnp.where(cells == cell[0], jnp.int8(FIRST_AGENT),
                         jnp.where(cells == cell[1], jnp.int8(SECOND_AGENT), state.coins))
        fresh = Storm2pState(grid=grid, coins=state.coins, x=x, y=y, facing=facing,
                             inventory=jnp.zeros_like(state.inventory),
                             freeze=jnp.full_like(state.freeze, -1), step=state.step)
        return where_envs(where, fresh, state)

    def _restart(self, keys: Array, state: Storm2pState, where: Array) -> Storm2pState:
        """A new board where ``where`` (an inner episode ends), keeping the step count."""
        fresh = dataclasses.replace(self._start(keys), step=state.step)
        return where_envs(where, fresh, state)

    # --- observations -----------------------------------------------------------------------------------

    def _timestep(self, state: Storm2pState, reward: Array, cooperative: Array, defecting: Array,
                  params: Storm2pParams) -> TimeStep:
        return storm_timestep(self._observe(state), reward, state.step, params.max_steps, 5, cooperative,
                              defecting)

    def _observe(self, state: Storm2pState) -> Array:
        """``float32[2, 256, B]``; agent 1 sees itself in the "self" channel, as agent 0 does."""
        view, inside = view_cells(state.x, state.y, state.facing)  # [2, 25, B]
        seen = jnp.where(inside, cell_value(state.grid, view), WALL)
        own = jnp.array([FIRST_AGENT, SECOND_AGENT])[:, None, None]
        other = jnp.array([SECOND_AGENT, FIRST_AGENT])[:, None, None]
        relative = (state.facing[::-1] - state.facing) % 4  # the other's facing as the viewer sees it
        is_other = seen == other
        channels = [seen == own, is_other]
        channels += [seen == code for code in (COOPERATE_COIN, DEFECT_COIN, WALL, BEAM)]
        channels += [is_other & (relative[:, None] == turn) for turn in range(4)]
        image = jnp.stack(channels, axis=2).reshape(2, VIEW_CELLS * NUM_CHANNELS, -1)
        holds = jnp.sum(state.inventory, axis=1) > 0
        shown = jnp.where(state.freeze[None, None] >= 0, state.inventory[::-1], 0)
        inventory = jnp.concatenate([state.inventory, holds[:, None], holds[::-1, None], shown], axis=1)
        return jnp.concatenate([image, inventory], axis=1).astype(jnp.float32)

    # --- rendering --------------------------------------------------------------------------------------

    def render(self, state: Storm2pState, params: Storm2pParams | None = None) -> Array:
        """The board with a wall border (``x`` to the right, ``y`` up; agents as discs with a nose toward
        their facing, dimmed while frozen; beams yellow), then one inventory strip per agent."""
        code = state.grid.astype(jnp.int32)
        codes = jnp.select([code == COOPERATE_COIN, code == DEFECT_COIN, code == BEAM,
                            code == FIRST_AGENT, code == SECOND_AGENT], [1, 2, 3, 4, 5], 0)
        frozen = jnp.broadcast_to(state.freeze > 0, (2,))
        board = draw_board(codes, jnp.arange(2), state.facing, frozen)
        return jnp.concatenate([board, draw_inventories(state.inventory, board.shape[1])], axis=0)
