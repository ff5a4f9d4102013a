"""STORM for n players (JaxMARL's ``storm_np``/``InTheMatrix``, also its ``storm``/``InTheGrid``), bugs fixed.

``n`` agents walk a square board gathering cooperate and defect coins. An agent holding a coin may zap in one
of four directions (one cell ahead, two ahead, ahead-right, ahead-left). When the zap reaches another unfrozen
agent that holds a coin, the pair interacts: both normalised inventories are played through the payoff matrix,
each agent is paid its own side, and the two freeze for ``freeze_penalty`` steps, then respawn on free cells
with empty hands (taken coins come back on free cells at the same moment). Conflicts follow JaxMARL's intent:
of several one-cell zaps on one target a random one wins, two-cell zaps yield to a one-cell zap on the same
target, and among two-cell zaps a random one wins.

Rules, constants and random draws follow JaxMARL 0.2.0's ``storm.py`` key for key, except where its code
contradicts its own intent (the wrong agents paid, the left zap testing the right cell, ...); see README.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core import threefry
from jaxmarl_suite.core.env import BatchNativeEnv
from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.types import EnvParams, TimeStep
from jaxmarl_suite.errors import require

from .grid import (
    GAME_NAMES,
    STEP_X,
    STEP_Y,
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

LEFT, RIGHT, FORWARD, STAY, ZAP_FORWARD, ZAP_AHEAD, ZAP_RIGHT, ZAP_LEFT = range(8)
"""The eight actions (JaxMARL's ``Actions``): turn left, turn right, step forward, stay, and four zaps: one
cell ahead, two cells ahead, ahead-right, ahead-left (right of facing ``d`` is ``d + 1``, as in JaxMARL)."""
NUM_ACTIONS = 8

EMPTY, WALL, BEAM, COOPERATE_COIN, DEFECT_COIN, FIRST_AGENT = range(6)
"""Cell codes (JaxMARL's ``Items``); agent ``a`` is ``FIRST_AGENT + a``. JaxMARL's red coin cooperates."""

NUM_CHANNELS = 14
"""Per view cell: wall, beam, cooperate coin, defect coin, self, other agent, the other's facing relative to
the viewer's (one-hot of 4), "holds a coin", an inventory (2), "is frozen"."""


@struct.dataclass
class StormParams(EnvParams):
    """Traceable parameters: vmap over ``payoff_matrix`` for a family of games."""

    payoff_matrix: Any = None
    """``float32[2, 2, 2]``, JaxMARL's layout ``[player][row agent's coin][column agent's coin]``, coin 0
    cooperates. In an interacting pair the lower-numbered agent is the row player: agents ``a < b`` are paid
    ``s_a @ payoff_matrix[0] @ s_b`` and ``s_a @ payoff_matrix[1] @ s_b``."""
    freeze_penalty: int = 5
    """Steps an interacting pair stands frozen before both respawn."""
    inner_steps: int = 152
    """The board starts over every ``inner_steps`` steps (JaxMARL's inner episode)."""
    max_steps: int = 152
    """Episode length (``num_inner_steps * num_outer_steps``); truncated after the last."""


@struct.dataclass
class StormState:
    """Batch-last state of ``B`` boards of ``G x G`` cells (cell ``x * G + y``), ``n`` agents, ``C`` coins
    of each kind."""

    grid: Array
    """``int8[G * G, B]``: a cell code per cell."""
    cooperate_coins: Array
    """``int32[C, B]``: each cooperate coin's cell (a taken coin keeps its cell until it respawns)."""
    defect_coins: Array
    """``int32[C, B]``."""
    x: Array
    """``int32[n, B]``."""
    y: Array
    """``int32[n, B]``."""
    facing: Array
    """``int32[n, B]``: 0 +y, 1 +x, 2 -y, 3 -x."""
    inventory: Array
    """``int32[n, 2, B]``: agent, coin kind (cooperate, defect)."""
    freeze: Array
    """``int32[n, n, B]``: per pair, -1 before any interaction; ``freeze_penalty`` after one, counting down
    to 0 (respawn). An agent is frozen while any entry of its row is positive."""
    step: Array
    """``int32[B]``: steps taken in this episode."""


def _randint_words(key: threefry.KeyPair, maxval: Array) -> Array:
    """``jax.random.randint(key, (1,), 0, maxval)[0]`` per key, ``maxval`` (``int32[B]``, >= 1) per key too:
    JAX's 64-bit draw reduced modulo the span, in ``uint32`` as JAX computes it."""
    high_key, low_key = threefry.split(key)
    high, low = threefry.random_bits(high_key, 1)[0], threefry.random_bits(low_key, 1)[0]
    span = maxval.astype(jnp.uint32)
    multiplier = jnp.uint32(2**16) % span
    multiplier = (multiplier * multiplier) % span
    return (((high % span) * multiplier + low % span) % span).astype(jnp.int32)


def _chained_draws(keys: Array, maxvals: Array) -> Array:
    """JaxMARL's conflict draws: for slot ``g`` of each env, ``k1, key = split(key)`` then ``randint(k1, (1,),
    0, maxvals[g])``; ``keys`` is ``[B]`` keys, ``maxvals`` ``int32[K, B]``; returns ``int32[K, B]``."""
    if threefry.fast_path_ok(keys):
        chain, out = threefry.key_pair(keys), []
        for g in range(maxvals.shape[0]):
            first, chain = threefry.split(chain)
            out.append(_randint_words(first, jnp.maximum(maxvals[g], 1)))
        return jnp.stack(out)

    def draw(key: Array, maxval: Array) -> Array:
        out = []
        for g in range(maxval.shape[0]):
            k1, key = jax.random.split(key)
            out.append(jax.random.randint(k1, (1,), 0, jnp.maximum(maxval[g], 1))[0])
        return jnp.stack(out)

    return jnp.moveaxis(jax.vmap(draw)(keys, maxvals.T), 0, -1)


def _split_nth(keys: Array, num: int, index: int) -> Array:
    """``jax.random.split(key, num)[index]`` of every key of ``keys`` (``[B]`` keys, raw or typed)."""
    if not threefry.fast_path_ok(keys):
        return jax.vmap(lambda key: jax.random.split(key, num)[index])(keys)
    k0, k1 = threefry.threefry2x32(threefry.key_pair(keys), jnp.zeros((), jnp.uint32), jnp.uint32(index))
    words = jnp.stack([k0, k1], axis=-1)
    if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(words, impl=jax.random.key_impl(keys))
    return words


def _shuffle_bits_and_facings(keys: Array, order_keys: Array, facing_keys: Array, size: int,
                              num_agents: int) -> tuple[Array, Array]:
    """The sort keys of ``jax.random.permutation(order_key, size)`` and ``jax.random.randint(facing_key,
    (num_agents,), 0, 3, int8)``, per env, batch last (``uint32[size, B]``, ``int32[num_agents, B]``).
    Below 2**10 elements JAX shuffles in one round: a stable sort of ``arange(size)`` by 32 random bits of
    ``split(key)[1]``; ``_Order`` walks that order without sorting. ``int8`` values are drawn as ``int32``
    and cast. Written over the batch with ``core.threefry`` where the keys allow it."""
    if not threefry.fast_path_ok(keys):
        def draw(order_key: Array, facing_key: Array) -> tuple[Array, Array]:
            bits = jax.random.bits(jax.random.split(order_key)[1], (size,), jnp.uint32)
            return bits, jax.random.randint(facing_key, (num_agents,), 0, 3, jnp.int8).astype(jnp.int32)

        bits, facing = jax.vmap(draw)(order_keys, facing_keys)
        return bits.T, facing.T
    _, sort_key = threefry.split(threefry.key_pair(order_keys))
    return (threefry.random_bits(sort_key, size),
            threefry.randint(threefry.key_pair(facing_keys), num_agents, 3))


class _Order:
    """A random order of ``size`` elements given as sort keys (``uint32[size, B]``, ties broken by index),
    walked one element at a time without sorting (XLA's CPU sort of 64 elements costs more than the rest of
    a step). A position in the order is the ``(bits, index)`` of an element."""

    def __init__(self, bits: Array) -> None:
        self.bits = bits
        self.index = jnp.arange(bits.shape[0], dtype=jnp.int32)[:, None]

    def start(self) -> tuple[Array, Array]:
        """A position before every element."""
        num_envs = self.bits.shape[1]
        return jnp.zeros(num_envs, jnp.uint32), jnp.full(num_envs, -1, jnp.int32)

    def next(self, position: tuple[Array, Array], allowed: Array | None = None
             ) -> tuple[tuple[Array, Array], Array]:
        """The first element after ``position`` (among ``allowed``, ``bool[size, B]``): its position, and
        whether there is one."""
        bits, index = position
        later = (self.bits > bits) | ((self.bits == bits) & (self.index > index))
        if allowed is not None:
            later &= allowed
        lowest = jnp.min(jnp.where(later, self.bits, jnp.uint32(0xFFFFFFFF)), axis=0)
        first = jnp.min(jnp.where(later & (self.bits == lowest), self.index, self.bits.shape[0]), axis=0)
        return (lowest, first), jnp.any(later, axis=0)


def _random_winners(keys: Array, same: Array, leads: Array, num_slots: int) -> Array:
    """Which agent wins its group's draw (``bool[n, B]``), as JaxMARL's conflict scans pick them.

    ``same[i, j]`` says agents ``i`` and ``j`` are in one group (reflexive for members). Groups are taken in
    the order of their lowest agent among ``leads``, each consuming one link of the key chain that starts at
    ``keys``; a group of ``m`` agents draws ``randint(0, m)`` and its ``r``-th member (by index) wins."""
    n = same.shape[0]
    before = jnp.asarray(np.tril(np.ones((n, n), bool), -1))[..., None]  # before[i, j]: j < i
    leader = leads & ~jnp.any(same & leads[None] & before, axis=1)
    rank = jnp.cumsum(leader, axis=0) - leader  # leaders before this one
    group_rank = jnp.sum(jnp.where(same & leader[None], rank[None], 0), axis=1)
    size = jnp.sum(same, axis=1)
    position = jnp.sum(same & before, axis=1)
    slots = jnp.arange(num_slots)[:, None, None]
    maxvals = jnp.sum(jnp.where(leader[None] & (rank[None] == slots), size[None], 0), axis=1)
    draws = jax.lax.cond(jnp.any(leader), lambda: _chained_draws(keys, maxvals),
                         lambda: jnp.zeros((num_slots, keys.shape[0]), jnp.int32))
    return position == jnp.take_along_axis(draws, jnp.clip(group_rank, 0, num_slots - 1), axis=0)


def _walk(order: _Order, cells: Array, free: Array, queues: tuple[tuple[Array, Array], ...]) -> list[Array]:
    """JaxMARL's respawn walk without its loop over the board. ``order`` is the walk order of the board's
    elements, ``cells`` (``[size, 1]``) each element's cell and ``free`` (``[size, B]``) whether it is free;
    each queue is ``(needs, cells)``, ``[count, B]`` each. Walking the order, each queue's pointer either
    skips an item that needs nothing (using up one element) or places the item that needs a cell on the next
    free element; an element taken by one queue is not free for the next queues. Returns each queue's cells
    (unchanged where nothing was placed)."""
    out = []
    for needs, current in queues:
        position, going = order.start(), jnp.ones(free.shape[1], bool)
        placed, taken = [], jnp.zeros_like(free)
        for item in range(needs.shape[0]):
            spot, found = order.next(position, free)
            skip, more = order.next(position)
            put = going & needs[item] & found
            cell = jnp.sum(jnp.where(order.index == spot[1], cells, 0), axis=0)
            placed.append(jnp.where(put, cell, current[item]))
            taken |= put[None] & (order.index == spot[1])
            position = jax.tree.map(lambda a, b, need=needs[item]: jnp.where(need, a, b), spot, skip)
            going &= jnp.where(needs[item], found, more)
        out.append(jnp.stack(placed))
        free &= ~taken
    return out


class Storm(BatchNativeEnv):
    """n-player STORM (JaxMARL's ``InTheMatrix``/``storm_np``, with its bugs fixed; see README.md).

    ``game`` picks the payoffs (``prisoners_dilemma``, ``stag_hunt``, ``chicken``, ``matching_pennies``);
    ``payoff_matrix`` overrides them in JaxMARL's layout. ``grid_size``, ``obs_size`` (side of the egocentric
    view) and ``num_coins`` (per kind) shape the board; ``cnn=True`` returns observations as
    ``[obs_size, obs_size, 14]`` instead of flat. ``fixed_coin_location`` is accepted for JaxMARL's signature
    and, as there, has no effect (coins start on random cells)."""

    reference = "jaxmarl.storm_np"
    render_fps = 8
    episodes_end_together = True
    all_actions_legal = True
    social_measures = True

    def __init__(self, num_agents: int = 2, game: str = "prisoners_dilemma", payoff_matrix: Any = None,
                 freeze_penalty: int = 5, num_inner_steps: int = 152, num_outer_steps: int = 1,
                 fixed_coin_location: bool = True, grid_size: int = 8, obs_size: int = 5, num_coins: int = 6,
                 cnn: bool = False) -> None:
        require(game in GAME_NAMES, "game", f"must be one of {list(GAME_NAMES)}, got {game!r}")
        table = np.asarray(game_payoffs(game) if payoff_matrix is None else payoff_matrix, np.float32)
        require(table.shape == (2, 2, 2) and bool(np.isfinite(table).all()), "payoff_matrix",
                "must be finite numbers [player][row agent's coin][column agent's coin], shape (2, 2, 2), "
                f"got {table}")
        for name, value, least in (("num_agents", num_agents, 2), ("freeze_penalty", freeze_penalty, 1),
                                   ("num_inner_steps", num_inner_steps, 1),
                                   ("num_outer_steps", num_outer_steps, 1), ("grid_size", grid_size, 4),
                                   ("obs_size", obs_size, 2), ("num_coins", num_coins, 1)):
            require(isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= least,
                    name, f"must be an integer >= {least}, got {value!r}")
        require(num_agents + 2 * num_coins <= grid_size * grid_size, "num_agents",
                f"{num_agents} agents and 2 x {num_coins} coins do not fit on a {grid_size}^2 board")
        require(num_agents <= 100, "num_agents", f"at most 100 (cell codes are int8), got {num_agents}")
        for name, flag in (("fixed_coin_location", fixed_coin_location), ("cnn", cnn)):
            require(isinstance(flag, bool), name, f"must be True or False, got {flag!r}")
        self.game = game
        self.grid_size = int(grid_size)
        self.obs_size = int(obs_size)
        self.num_coins = int(num_coins)
        self.cnn = cnn
        self.fixed_coin_location = fixed_coin_location
        self.groups = {"agents": tuple(f"agent_{a}" for a in range(int(num_agents)))}
        self._params = StormParams(payoff_matrix=jnp.asarray(table), freeze_penalty=int(freeze_penalty),
                                   inner_steps=int(num_inner_steps),
                                   max_steps=int(num_inner_steps) * int(num_outer_steps))
        # JaxMARL's SPAWNS table lists cell (k % G, k // G) at index k; as flat cells x * G + y:
        k = np.arange(self.grid_size ** 2)
        self._spawn_cells = ((k % self.grid_size) * self.grid_size + k // self.grid_size).astype(np.int32)

    @property
    def default_params(self) -> StormParams:
        """The game's payoffs, freeze penalty and episode lengths."""
        return self._params

    def observation_space(self, group: str) -> Box:
        """The egocentric ``obs_size x obs_size`` view, 14 channels per cell (see ``NUM_CHANNELS``), flat
        (row-major) or, with ``cnn=True``, ``[obs_size, obs_size, 14]``. Inventories count at most one coin
        per step, so ``max_steps`` bounds every entry."""
        side = self.obs_size
        shape = (side, side, NUM_CHANNELS) if self.cnn else (side * side * NUM_CHANNELS,)
        return Box(0.0, float(max(self._params.max_steps, 1)), shape, np.float32)

    def action_space(self, group: str) -> Discrete:
        """0 left, 1 right, 2 forward, 3 stay, 4 zap one ahead, 5 zap two ahead, 6 zap ahead-right, 7 zap
        ahead-left."""
        return Discrete(NUM_ACTIONS)

    # --- starts -----------------------------------------------------------------------------------------

    def _write_agents(self, grid: Array, cell: Array) -> Array:
        """``grid`` with agent ``a`` written on ``cell[a]`` (later agents over earlier ones)."""
        cells = jnp.arange(self.grid_size ** 2)[:, None]
        for agent in range(self.num_agents):
            grid = jnp.where(cells == cell[agent], jnp.int8(FIRST_AGENT + agent), grid)
        return grid

    def _write_coins(self, grid: Array, cooperate: Array, defect: Array) -> Array:
        cells = jnp.arange(self.grid_size ** 2)[:, None, None]
        grid = jnp.where(jnp.any(cells == cooperate[None], axis=1), jnp.int8(COOPERATE_COIN), grid)
        return jnp.where(jnp.any(cells == defect[None], axis=1), jnp.int8(DEFECT_COIN), grid)

    def _start(self, keys: Array) -> StormState:
        """JaxMARL's ``_reset_state``: agents, then the cooperate and the defect coins, on the first cells of
        a random permutation of the board; facings from ``randint(0, 3)`` (never -x, as in JaxMARL)."""
        n, coins, size = self.num_agents, self.num_coins, self.grid_size

        sub = _split_nth(keys, 2, 1)
        bits, facing = _shuffle_bits_and_facings(keys, sub, sub, size * size, n)
        order, first = _Order(bits), []
        position = order.start()
        spawn = jnp.asarray(self._spawn_cells)[:, None]
        for _ in range(n + 2 * coins):  # the first n + 2C elements of the permutation
            position, _ = order.next(position)
            first.append(jnp.sum(jnp.where(order.index == position[1], spawn, 0), axis=0))
        cell = jnp.stack(first)  # [n + 2C, B]
        agents, cooperate, defect = cell[:n], cell[n:n + coins], cell[n + coins:]
        num_envs = keys.shape[0]
        grid = self._write_coins(jnp.zeros((size * size, num_envs), jnp.int8), cooperate, defect)
        grid = self._write_agents(grid, agents)
        return StormState(grid=grid, cooperate_coins=cooperate, defect_coins=defect, x=agents // size,
                          y=agents % size, facing=facing, inventory=jnp.zeros((n, 2, num_envs), jnp.int32),
                          freeze=jnp.full((n, n, num_envs), -1, jnp.int32),
                          step=jnp.zeros((num_envs,), jnp.int32))

    # --- reset and step ---------------------------------------------------------------------------------

    def reset_batch(self, keys: Array, params: StormParams) -> tuple[StormState, TimeStep]:
        """JaxMARL's ``reset(key)`` for every key."""
        state = self._start(keys)
        zeros = jnp.zeros((self.num_agents, keys.shape[0]), jnp.float32)
        return state, self._timestep(state, zeros, zeros, zeros, params)

    def step_batch(self, keys: Array, state: StormState, actions: dict[str, Array],
                   params: StormParams) -> tuple[StormState, TimeStep]:
        """JaxMARL's ``step_env(key, ...)`` for every key: move, pick up, zap, pay, freeze, respawn."""
        size = self.grid_size
        frozen = jnp.max(state.freeze, axis=1) > 0
        act = jnp.where(frozen, STAY, actions["agents"].astype(jnp.int32))

        x, y, facing = self._move(keys, state, act)
        old_cell, cell = state.x * size + state.y, x * size + y
        found = cell_value(state.grid, cell)
        took_cooperate, took_defect = found == COOPERATE_COIN, found == DEFECT_COIN
        inventory = state.inventory + jnp.stack([took_cooperate, took_defect], axis=1).astype(jnp.int32)
        cells = jnp.arange(size * size)[:, None]
        grid = jnp.where(jnp.any(cells[:, None] == old_cell[None], axis=1), jnp.int8(EMPTY), state.grid)
        grid = self._write_agents(grid, cell)
        grid = jnp.where(grid == BEAM, jnp.int8(EMPTY), grid)  # last step's beams fade

        holds = jnp.sum(inventory, axis=1) > 0
        grid, pairs = self._zap(keys, grid, x, y, facing, act, holds, frozen)
        reward = self._payoffs(inventory, pairs, params)

        # A pair's entries jump to the penalty and then count down; both respawn on the step they reach 0.
        countdown = jnp.where(pairs, params.freeze_penalty,
                              jnp.where(state.freeze > 0, state.freeze - 1, state.freeze))
        respawn = jnp.any((countdown == 0) & (state.freeze == 1), axis=1)
        state = StormState(grid=grid, cooperate_coins=state.cooperate_coins,
                           defect_coins=state.defect_coins, x=x, y=y, facing=facing, inventory=inventory,
                           freeze=countdown, step=state.step + 1)
        state = jax.lax.cond(jnp.any(respawn), lambda s: self._respawn(keys, s, respawn), lambda s: s, state)

        # Inner episodes: the board starts over (the last step's reward is dropped, as in JaxMARL).
        inner_end = state.step % params.inner_steps == 0
        restart = inner_end & (state.step < params.max_steps)
        state = jax.lax.cond(jnp.any(restart), lambda s: self._restart(keys, s, restart), lambda s: s, state)
        reward = jnp.where(inner_end[None], 0.0, reward)
        return state, self._timestep(state, reward, took_cooperate.astype(jnp.float32),
                                     took_defect.astype(jnp.float32), params)

    def _move(self, keys: Array, state: StormState, act: Array) -> tuple[Array, Array, Array]:
        """Turns and steps, then collisions. As in JaxMARL, agents that end on one cell are resolved group
        by group: if one of them stood still the others go back, else a random one keeps the cell. Unlike
        JaxMARL we repeat the check, so an agent sent back onto a cell someone else just entered sends that
        one back too, and no two agents ever share a cell."""
        n, size = self.num_agents, self.grid_size
        facing = (state.facing + jnp.where(act == LEFT, 1, jnp.where(act == RIGHT, 3, 0))) % 4
        forward = act == FORWARD
        x = jnp.clip(state.x + jnp.where(forward, jnp.asarray(STEP_X)[state.facing], 0), 0, size - 1)
        y = jnp.clip(state.y + jnp.where(forward, jnp.asarray(STEP_Y)[state.facing], 0), 0, size - 1)
        moved = (x != state.x) | (y != state.y)
        cell = x * size + y
        same = cell[:, None] == cell[None]
        shared = jnp.sum(same, axis=1) > 1
        stayer_here = jnp.any(same & ~moved[None], axis=1)
        wins = _random_winners(keys, same & shared[:, None] & shared[None], moved & shared, n // 2)
        back = shared & moved & ~(~stayer_here & wins)
        for _ in range(n):  # knock-on returns: never random, the returned agent holds its own old cell
            x, y = jnp.where(back, state.x, x), jnp.where(back, state.y, y)
            cell = x * size + y
            moved = (x != state.x) | (y != state.y)
            back = moved & (jnp.sum(cell[:, None] == cell[None], axis=1) > 1)
        return x, y, facing

    def _zap(self, keys: Array, grid: Array, x: Array, y: Array, facing: Array, act: Array, holds: Array,
             frozen: Array) -> tuple[Array, Array]:
        """Beams and interactions. Returns the grid with this step's beams and ``bool[n, n, B]``, the pairs
        that interact (symmetric)."""
        n = self.num_agents
        beams = beam_cells(x, y, facing, self.grid_size)  # [4, n, B]: one, two ahead, right, left
        seen = cell_value(grid, beams)
        target = seen.astype(jnp.int32) - FIRST_AGENT  # the agent on each beam cell, or negative
        idx = jnp.clip(target, 0, n - 1)
        valid = (target >= 0) & (target != jnp.arange(n)[None, :, None])
        valid &= ~jnp.take_along_axis(frozen, idx.reshape(-1, idx.shape[-1]), 0).reshape(idx.shape)
        valid &= jnp.take_along_axis(holds, idx.reshape(-1, idx.shape[-1]), 0).reshape(idx.shape)
        zapping = (act >= ZAP_FORWARD) & holds & ~frozen
        kind = jnp.clip(act - ZAP_FORWARD, 0, 3)
        chosen = jnp.take_along_axis(target, kind[None], 0)[0]  # [n, B]
        hit = zapping & jnp.take_along_axis(valid, kind[None], 0)[0]

        # The empty cells a qualified zapper's beam reaches light up, whichever zap it chose.
        cells = jnp.arange(self.grid_size ** 2)[:, None, None, None]
        lit = jnp.any((beams[None] == cells) & zapping[None, None], axis=(1, 2))
        grid = jnp.where(lit & (grid == EMPTY), jnp.int8(BEAM), grid)

        # One-cell zaps first (a random one per target), then two-cell zaps on targets no one-cell zap won.
        k_forward, k_farther = _split_nth(keys, 3, 1), _split_nth(_split_nth(keys, 3, 2), 2, 1)
        same_target = chosen[:, None] == chosen[None]
        forward = hit & (act == ZAP_FORWARD)
        wins = _random_winners(k_forward, same_target & forward[:, None] & forward[None],
                               forward, n)
        forward_won = forward & wins
        taken = jnp.any((chosen[:, None] == chosen[None]) & forward_won[None], axis=1)
        farther = hit & (act != ZAP_FORWARD) & ~taken
        wins = _random_winners(k_farther, same_target & farther[:, None] & farther[None], farther, n)
        success = forward_won | (farther & wins)
        zapped = success[:, None] & (chosen[:, None] == jnp.arange(n)[None, :, None])  # [zapper, zapped, B]
        return grid, zapped | jnp.swapaxes(zapped, 0, 1)

    def _payoffs(self, inventory: Array, pairs: Array, params: StormParams) -> Array:
        """Each agent's sum over the pairs it interacts in: the lower-numbered agent of a pair is the row
        player (``payoff_matrix[0]``), the other the column player (``payoff_matrix[1]``)."""
        held = inventory.astype(jnp.float32)
        share = held / jnp.maximum(jnp.sum(held, axis=1, keepdims=True), 1.0)  # [n, 2, B]
        payoff = jnp.asarray(params.payoff_matrix, jnp.float32)
        value = jnp.einsum("aib,pij,cjb->pacb", share, payoff, share)  # [player, row agent, column agent, B]
        upper = pairs & jnp.asarray(np.triu(np.ones((self.num_agents,) * 2, bool), 1))[..., None]
        as_row = jnp.sum(jnp.where(upper, value[0], 0.0), axis=1)
        as_column = jnp.sum(jnp.where(upper, value[1], 0.0), axis=0)
        return as_row + as_column

    def _respawn(self, keys: Array, state: StormState, respawn: Array) -> StormState:
        """JaxMARL's soft reset where any agent respawns: those agents, and every taken coin, go to free cells
        taken in the order of a random permutation of the board (agents first, then cooperate, then defect
        coins, each cell to at most one); respawned agents get a random facing and empty hands. A cell is free
        unless a staying agent or a coin still on the board is there (JaxMARL forgets the agents, below)."""
        n, size = self.num_agents, self.grid_size
        num_cells = size * size

        bits, new_facing = _shuffle_bits_and_facings(keys, _split_nth(keys, 3, 1), _split_nth(keys, 3, 2),
                                                     num_cells, n)
        cell = state.x * size + state.y
        cooperate_back = cell_value(state.grid, state.cooperate_coins) != COOPERATE_COIN
        defect_back = cell_value(state.grid, state.defect_coins) != DEFECT_COIN
        cells = jnp.arange(num_cells)[:, None, None]
        occupied = (jnp.any((cells == cell[None]) & ~respawn[None], axis=1)
                    | jnp.any((cells == state.cooperate_coins[None]) & ~cooperate_back[None], axis=1)
                    | jnp.any((cells == state.defect_coins[None]) & ~defect_back[None], axis=1))
        spawn = jnp.asarray(self._spawn_cells)  # element k of JaxMARL's SPAWNS is this cell
        free = ~occupied[spawn]
        queues = ((respawn, cell), (cooperate_back, state.cooperate_coins), (defect_back, state.defect_coins))
        new_cell, cooperate, defect = _walk(_Order(bits), spawn[:, None], free, queues)
        grid = jnp.where(jnp.any(cells == cell[None], axis=1), jnp.int8(EMPTY), state.grid)
        grid = self._write_coins(self._write_agents(grid, new_cell), cooperate, defect)
        fresh = dataclasses.replace(
            state, grid=grid, cooperate_coins=cooperate, defect_coins=defect, x=new_cell // size,
            y=new_cell % size, facing=jnp.where(respawn, new_facing, state.facing),
            inventory=jnp.where(respawn[:, None], 0, state.inventory))
        anyone = jnp.any(respawn, axis=0)
        return where_envs(anyone, fresh, state)

    def _restart(self, keys: Array, state: StormState, where: Array) -> StormState:
        """A new board where ``where`` (an inner episode ends), keeping the step count."""
        fresh = dataclasses.replace(self._start(keys), step=state.step)
        return where_envs(where, fresh, state)

    # --- observations -----------------------------------------------------------------------------------

    def _timestep(self, state: StormState, reward: Array, cooperative: Array, defecting: Array,
                  params: StormParams) -> TimeStep:
        return storm_timestep(self._observe(state), reward, state.step, params.max_steps, NUM_ACTIONS,
                              cooperative, defecting)

    def _observe(self, state: StormState) -> Array:
        """``float32[n, obs_size ** 2 * 14, B]`` (or ``[n, obs_size, obs_size, 14, B]`` with ``cnn``)."""
        n, side = self.num_agents, self.obs_size
        view, inside = view_cells(state.x, state.y, state.facing, self.grid_size, side)  # [n, side**2, B]
        seen = jnp.where(inside, cell_value(state.grid, view).astype(jnp.int32), WALL)
        who = seen - FIRST_AGENT
        is_agent = who >= 0
        who = jnp.clip(who, 0, n - 1)
        flat = who.reshape(-1, who.shape[-1])

        def of_agent(values: Array) -> Array:  # [n, B] per agent -> the value of the agent in each view cell
            return jnp.take_along_axis(values, flat, 0).reshape(who.shape)

        is_self = is_agent & (who == jnp.arange(n)[:, None, None])
        is_other = is_agent & ~is_self
        relative = (of_agent(state.facing) - state.facing[:, None]) % 4
        holds = jnp.sum(state.inventory, axis=1) > 0
        frozen = jnp.max(state.freeze, axis=1) > 0
        partner = jnp.take_along_axis(state.freeze, who, axis=1) > 0  # frozen together with the viewer
        shown = is_self | (is_other & partner)
        channels = [seen == code for code in (WALL, BEAM, COOPERATE_COIN, DEFECT_COIN)]
        channels += [is_self, is_other] + [is_other & (relative == turn) for turn in range(4)]
        channels += [is_agent & of_agent(holds)]
        channels += [jnp.where(shown, of_agent(state.inventory[:, kind]), 0) for kind in range(2)]
        channels += [is_other & of_agent(frozen)]
        image = jnp.stack([c.astype(jnp.float32) for c in channels], axis=2)  # [n, side**2, 14, B]
        if self.cnn:
            return image.reshape(n, side, side, NUM_CHANNELS, -1)
        return image.reshape(n, side * side * NUM_CHANNELS, -1)

    # --- rendering --------------------------------------------------------------------------------------

    def render(self, state: StormState, params: StormParams | None = None) -> Array:
        """The board with a wall border (``x`` to the right, ``y`` up; agents as discs with a nose toward
        their facing, dimmed while frozen; beams yellow), then one inventory strip per agent."""
        code = state.grid.astype(jnp.int32)
        codes = jnp.select([code == COOPERATE_COIN, code == DEFECT_COIN, code == BEAM, code >= FIRST_AGENT],
                           [1, 2, 3, code - FIRST_AGENT + 4], 0)
        frozen = jnp.max(state.freeze, axis=1) > 0
        board = draw_board(codes, jnp.arange(self.num_agents), state.facing, frozen, grid_size=self.grid_size)
        return jnp.concatenate([board, draw_inventories(state.inventory, board.shape[1])], axis=0)


class StormInTheGrid(Storm):
    """``STORM``, registered under JaxMARL's ``storm`` (``InTheGrid``): the same game as ``Storm`` with the
    same defaults (JaxMARL's two n-player classes share them); only the reference id, which names it in
    PettingZoo, differs."""

    reference = "jaxmarl.storm"
