"""Level-Based Foraging (``lbforaging`` 2.0.0's ``ForagingEnv``), batch-native.

Players of levels 1..k walk a grid and pick up foods of levels; a food is picked up when the players
loading it from the four neighbouring cells have levels summing to at least its level. The rules are
written for one env and mapped over the batch at the boundary (``reset_batch``/``step_batch``). One step:

1. **Validity**, on the state before the step: a move is legal when its cell is on the grid and holds no
   food (other players are ignored); loading is legal next to a food; an illegal action is a no-op.
2. **Move**: players whose target cell (their own cell for no-op and load) is claimed by exactly one player
   go there; others stay. So two players can swap, and a player can enter the cell of one whose own move
   failed (the reference's overlap, kept).
3. **Load**: for each food, the loading players next to it sum their levels. At or above the food's level
   each gets ``level * food_level`` (divided by ``group_level_sum * food_spawned`` with
   ``normalize_reward``) and the food goes; below it each loses ``penalty`` (never normalized).
4. The episode ends when no food is left (``terminated``) or at ``max_steps`` (``truncated``).

Foods never move, so the state keeps them as a list in row-major order of their cells (eaten foods keep
their cell with level 0): validity, loading and the compacted observation need a few comparisons per food
rather than a grid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.core.types import EnvParams, TimeStep

from .rendering import render_field

Array = jax.Array

NONE, NORTH, SOUTH, WEST, EAST, LOAD = range(6)
"""lbforaging's action ids."""
NUM_ACTIONS = 6
ACTION_DELTAS = np.array([(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1), (0, 0)], np.int32)
"""``(d_row, d_col)`` of each action."""
OBSERVATION_TYPES = ("vector", "grid")
SPAWN_ATTEMPTS = 1000
"""lbforaging gives up placing a player or the remaining foods after this many rejected draws; ours draws
from the acceptable cells directly, so it gives up only when there are none."""


@struct.dataclass
class LBFParams(EnvParams):
    """Traceable Level-Based Foraging parameters."""

    max_steps: int = 50
    """Steps per episode (lbforaging's ``max_episode_steps``); every player is truncated at this step."""
    penalty: float = 0.0
    """Reward lost by each player of a loading group whose levels fall short of the food's."""
    normalize_reward: bool = True
    """Divide a pick-up's rewards by the group's level sum times the total food level spawned, so that a
    cleared field pays 1 in all."""


@struct.dataclass
class LBFState:
    """One env's state (batch-last in ``reset_batch``/``step_batch``: every array gains a trailing ``B``)."""

    player_pos: Array
    """``int32[n, 2]``: each player's ``(row, col)``."""
    player_level: Array
    """``int32[n]``: each player's level."""
    food_pos: Array
    """``int32[F, 2]``: each food's ``(row, col)``, in row-major order of the cells (``(-1, -1)`` for a food
    that was never placed)."""
    food_level: Array
    """``int32[F]``: each food's level, 0 once eaten (or never placed)."""
    food_spawned: Array
    """``int32[]``: the total level of the foods placed at reset (the reward's normalizer)."""
    time: Array
    """``int32[]``: steps taken in the episode."""


def _levels(value: int | Sequence[int], count: int, name: str) -> np.ndarray:
    """A level argument broadcast to ``count`` entries, as lbforaging does with scalars."""
    values = np.asarray(value)
    if values.ndim == 0:
        values = np.full(count, values)
    if values.shape != (count,) or not np.issubdtype(values.dtype, np.integer) or values.min() < 1:
        raise ValueError(f"{name} must be a positive int or {count} positive ints, got {value!r}")
    return values.astype(np.int32)


def _positive_int(value: Any, name: str) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


class LevelBasedForaging(BatchNativeEnv):
    """Level-Based Foraging as ``lbforaging`` 2.0.0 (see the module docstring for a step and README.md for
    the spaces).

    Agents ``agent_0..agent_{n-1}`` in one group, ``agents``, six actions each in lbforaging's order (none,
    north, south, west, east, load). ``action_mask`` marks the legal ones; an illegal action is a no-op.

    Args:
        num_agents: players (lbforaging's ``players``).
        field_size: the grid's side, or ``(rows, cols)``.
        max_num_food: foods placed at reset (fewer when no cell is left that keeps them apart).
        sight: how many cells a player sees in each direction (the field size for full observation).
        min_player_level, max_player_level: each player's level is drawn uniformly between them (scalars,
            or one per player, shuffled among players at every reset as lbforaging does).
        min_food_level, max_food_level: the same for foods; ``max_food_level=None`` sets it at every reset
            to the sum of the three lowest player levels.
        force_coop: every food gets the maximum level (with the default levels, no player can eat alone).
        max_steps: steps per episode.
        normalize_reward: see ``LBFParams``.
        observation_type: ``"vector"`` (foods then players as ``(row, col, level)``, lbforaging's default)
            or ``"grid"`` (agent, food and access layers around the player).
        observe_agent_levels: players' levels appear in the observation.
        penalty: see ``LBFParams``.
    """

    render_fps = 5
    # A start places players and foods on the whole field, several steps' work, and episodes end when the
    # field is cleared, on different steps across a batch.
    costly_reset = True

    def __init__(self, num_agents: int = 2, field_size: int | Sequence[int] = 8, max_num_food: int = 2,
                 sight: int | None = None, min_player_level: int | Sequence[int] = 1,
                 max_player_level: int | Sequence[int] = 2, min_food_level: int | Sequence[int] = 1,
                 max_food_level: int | Sequence[int] | None = None, force_coop: bool = True,
                 max_steps: int = 50, normalize_reward: bool = True, observation_type: str = "vector",
                 observe_agent_levels: bool = True, penalty: float = 0.0) -> None:
        n = _positive_int(num_agents, "num_agents")
        sizes = (field_size, field_size) if isinstance(field_size, int | np.integer) else tuple(field_size)
        if len(sizes) != 2:
            raise ValueError(f"field_size must be an int or (rows, cols), got {field_size!r}")
        rows, cols = (_positive_int(s, "field_size") for s in sizes)
        if rows < 3 or cols < 3:
            raise ValueError(f"field_size must be at least 3x3 (foods are never placed on the border), "
                             f"got {field_size!r}")
        num_food = _positive_int(max_num_food, "max_num_food")
        sight = max(rows, cols) if sight is None else _positive_int(sight, "sight")
        for name, value in (("force_coop", force_coop), ("normalize_reward", normalize_reward),
                            ("observe_agent_levels", observe_agent_levels)):
            if not isinstance(value, bool | np.bool_):
                raise TypeError(f"{name} must be a bool, got {value!r}")
        if observation_type not in OBSERVATION_TYPES:
            raise ValueError(f"observation_type must be one of {OBSERVATION_TYPES}, got {observation_type!r}")
        if not isinstance(penalty, int | float) or isinstance(penalty, bool) or penalty < 0:
            raise ValueError(f"penalty must be a non-negative number, got {penalty!r}")
        if n > rows * cols:
            raise ValueError(f"{n} players do not fit on a {rows}x{cols} field")
        self.min_player_level = _levels(min_player_level, n, "min_player_level")
        self.max_player_level = _levels(max_player_level, n, "max_player_level")
        self.min_food_level = _levels(min_food_level, num_food, "min_food_level")
        self.max_food_level = (None if max_food_level is None
                               else _levels(max_food_level, num_food, "max_food_level"))
        if np.any(self.min_player_level > self.max_player_level):
            raise ValueError("min_player_level must not exceed max_player_level")
        if self.max_food_level is not None and np.any(self.min_food_level > self.max_food_level):
            raise ValueError("min_food_level must not exceed max_food_level")
        self.num_players, self.num_food = n, num_food
        self.rows, self.cols, self.sight = rows, cols, sight
        self.force_coop = bool(force_coop)
        self.observation_type = observation_type
        self.observe_agent_levels = bool(observe_agent_levels)
        self.reference = "lbforaging"
        self.groups = {"agents": tuple(f"agent_{i}" for i in range(n))}
        self._params = LBFParams(max_steps=_positive_int(max_steps, "max_steps"), penalty=float(penalty),
                                 normalize_reward=bool(normalize_reward))

    @property
    def default_params(self) -> LBFParams:
        """Parameters from the constructor's arguments."""
        return self._params

    @property
    def top_food_level(self) -> int:
        """The highest food level reset can draw (lbforaging's observation bound)."""
        if self.max_food_level is not None:
            return int(self.max_food_level.max())
        return int(np.sort(self.max_player_level)[:3].sum())

    def observation_space(self, group: str) -> Space:
        """Vector: ``float32[3 * max_num_food + 3 * n]`` (``2 * n`` without levels); grid:
        ``float32[3, 2 * sight + 1, 2 * sight + 1]``."""
        top_player = int(self.max_player_level.max())
        if self.observation_type == "grid":
            side = 2 * self.sight + 1
            high = np.stack([np.full((side, side), top_player if self.observe_agent_levels else 1),
                             np.full((side, side), self.top_food_level), np.ones((side, side))])
            return Box(0.0, high.astype(np.float32), (3, side, side), np.float32)
        # lbforaging bounds both coordinates by cols - 1; rows - 1 and the view's 2 * sight keep every
        # reachable value inside on non-square fields too
        top = max(self.rows - 1, self.cols - 1) if self.sight >= max(self.rows, self.cols) else max(
            self.rows - 1, self.cols - 1, 2 * self.sight)
        per_player = 3 if self.observe_agent_levels else 2
        low = [-1, -1, 0] * self.num_food + ([-1, -1, 0] if self.observe_agent_levels else [-1, -1]) * (
            self.num_players)
        high = [top, top, self.top_food_level] * self.num_food + (
            [top, top, top_player] if self.observe_agent_levels else [top, top]) * self.num_players
        return Box(np.asarray(low, np.float32), np.asarray(high, np.float32),
                   (3 * self.num_food + per_player * self.num_players,), np.float32)

    def action_space(self, group: str) -> Discrete:
        """None, north, south, west, east, load."""
        return Discrete(NUM_ACTIONS)

    # ------------------------------------------------------------------------------ batch boundary
    def reset_batch(self, keys: Array, params: EnvParams) -> tuple[LBFState, TimeStep]:
        """Start ``B`` envs, each from its own key (see ``start_one``)."""
        assert isinstance(params, LBFParams)
        state = jax.vmap(self.start_one, out_axes=-1)(keys)
        zeros = jnp.zeros((self.num_players, keys.shape[0]), jnp.float32)
        return state, self._timestep(state, zeros, params)

    def step_batch(self, keys: Array, state: LBFState, actions: dict[str, Array],
                   params: EnvParams) -> tuple[LBFState, TimeStep]:
        """Step ``B`` envs; ``actions["agents"]`` is ``int[n, B]``. The step draws nothing."""
        assert isinstance(params, LBFParams)
        state, reward = jax.vmap(self.transition_one, in_axes=(-1, -1, None), out_axes=-1)(
            state, actions["agents"], params)
        return state, self._timestep(state, reward, params)

    def state_from_arrays(self, player_pos: Any, player_level: Any, food_pos: Any, food_level: Any,
                          time: int = 0) -> tuple[LBFState, TimeStep]:
        """One env's state and TimeStep from given players and foods (foods in any order, absent ones with
        level 0): for hand-made situations and for loading another implementation's state."""
        food_pos = np.asarray(food_pos, np.int32).reshape(-1, 2)
        food_level = np.asarray(food_level, np.int32).reshape(-1)
        if food_pos.shape[0] > self.num_food:
            raise ValueError(f"{food_pos.shape[0]} foods given, the env holds at most {self.num_food}")
        present = food_level > 0
        cell = np.where(present, food_pos[:, 0] * self.cols + food_pos[:, 1], np.iinfo(np.int32).max)
        order = np.argsort(cell, kind="stable")
        padded_pos = np.full((self.num_food, 2), -1, np.int32)
        padded_level = np.zeros(self.num_food, np.int32)
        kept = order[present[order]]
        padded_pos[:len(kept)] = food_pos[kept]
        padded_level[:len(kept)] = food_level[kept]
        n = self.num_players
        state = LBFState(player_pos=jnp.asarray(np.asarray(player_pos, np.int32).reshape(n, 2)),
                         player_level=jnp.asarray(np.asarray(player_level, np.int32).reshape(n)),
                         food_pos=jnp.asarray(padded_pos), food_level=jnp.asarray(padded_level),
                         food_spawned=jnp.asarray(padded_level.sum(), jnp.int32),
                         time=jnp.asarray(time, jnp.int32))
        batched = jax.tree.map(lambda x: x[..., None], state)
        zeros = jnp.zeros((self.num_players, 1), jnp.float32)
        timestep = self._timestep(batched, zeros, self.default_params)
        return state, jax.tree.map(lambda x: x[..., 0], timestep)

    # ------------------------------------------------------------------------------------- reset
    def start_one(self, key: Array) -> LBFState:
        """One env's start, in lbforaging's order: player level ranges shuffled among players; each player
        on a uniformly random free cell with a level in its range; the food level bound; then each food, its
        level range shuffled among foods, on a uniformly random acceptable cell (off the border, no player
        there, no food in the 3x3 square around it or within two cells in its row or column)."""
        n, num_food, rows, cols = self.num_players, self.num_food, self.rows, self.cols
        # one draw of all the uniforms a reset needs: a cell and a level per player and per food (the
        # reset runs on every auto-reset step, and a split per item would cost a threefry call each)
        unit = jax.random.uniform(key, (n + num_food, 2))
        player_perm_key, food_perm_key = jax.random.fold_in(key, 1), jax.random.fold_in(key, 2)
        low, high = jnp.asarray(self.min_player_level), jnp.asarray(self.max_player_level)
        # shuffling ranges that are all alike changes nothing: skip the draw (a sort) then
        if len(set(zip(self.min_player_level.tolist(), self.max_player_level.tolist(), strict=True))) > 1:
            perm = jax.random.permutation(player_perm_key, n)
            low, high = low[perm], high[perm]
        cells: list[Array] = []
        levels = []
        for i in range(n):
            # the pick-th free cell: pick among rows * cols - i, then stepped past the taken cells at or
            # before it (i rounds reach the fixed point); no pass over the field
            cell = jnp.minimum((unit[i, 0] * (rows * cols - i)).astype(jnp.int32), rows * cols - i - 1)
            if cells:
                earlier = jnp.stack(cells)
                pick = cell
                for _ in range(i):
                    cell = pick + jnp.sum(earlier <= cell)
            cells.append(cell)
            levels.append(_uniform_level(low[i], high[i], unit[i, 1]))
        player_cell = jnp.stack(cells)
        player_pos = jnp.stack([player_cell // cols, player_cell % cols], -1).astype(jnp.int32)
        player_level = jnp.stack(levels).astype(jnp.int32)

        if self.max_food_level is None:
            # the three lowest levels, by rank (ties broken by index) rather than a sort
            index = jnp.arange(n)
            below = (player_level[None, :] < player_level[:, None]) | (
                (player_level[None, :] == player_level[:, None]) & (index[None, :] < index[:, None]))
            bound = jnp.where(below.sum(1) < 3, player_level, 0).sum()
            food_high = jnp.full((num_food,), bound, jnp.int32)
        else:
            food_high = jnp.asarray(self.max_food_level)
        food_low = food_high if self.force_coop else jnp.broadcast_to(jnp.asarray(self.min_food_level),
                                                                      (num_food,))
        # shuffling ranges that are all alike changes nothing: skip the draw (a sort) then
        tops = [None] * num_food if self.max_food_level is None else self.max_food_level.tolist()
        bottoms = tops if self.force_coop else self.min_food_level.tolist()
        if len(set(zip(bottoms, tops, strict=True))) > 1:
            perm = jax.random.permutation(food_perm_key, num_food)
            food_low, food_high = food_low[perm], food_high[perm]
        # foods go on the interior only: place them on its own grid, (rows - 2) x (cols - 2)
        inner_rows, inner_cols = rows - 2, cols - 2
        inner_row = jnp.arange(inner_rows)[:, None] + 1
        inner_col = jnp.arange(inner_cols)[None, :] + 1
        blocked = jnp.any((inner_row[..., None] == player_pos[:, 0])
                          & (inner_col[..., None] == player_pos[:, 1]), -1)
        food_cells, food_levels = [], []
        for k in range(num_food):
            inner, placed = _uniform_cell(~blocked, unit[n + k, 0])
            row, col = inner // inner_cols + 1, inner % inner_cols + 1
            d_row, d_col = jnp.abs(inner_row - row), jnp.abs(inner_col - col)
            near = (((d_row <= 1) & (d_col <= 1)) | ((d_row == 0) & (d_col <= 2))
                    | ((d_col == 0) & (d_row <= 2)))
            blocked = blocked | (near & placed)
            food_cells.append(jnp.where(placed, row * cols + col, rows * cols))
            level = _uniform_level(food_low[k], food_high[k], unit[n + k, 1])
            food_levels.append(jnp.where(placed, level, 0))
        food_cell = jnp.stack(food_cells)
        food_level = jnp.stack(food_levels).astype(jnp.int32)
        # row-major order of the cells: a food's rank is how many foods lie before it (cells are distinct)
        rank = (food_cell[None, :] < food_cell[:, None]).sum(1)
        slot = rank[:, None] == jnp.arange(num_food)[None]  # [food, slot]
        sorted_cell = jnp.where(slot, food_cell[:, None], 0).sum(0)
        sorted_level = jnp.where(slot, food_level[:, None], 0).sum(0)
        absent = sorted_level == 0
        food_pos = jnp.where(absent[:, None], -1,
                             jnp.stack([sorted_cell // cols, sorted_cell % cols], -1)).astype(jnp.int32)
        return LBFState(player_pos=player_pos, player_level=player_level, food_pos=food_pos,
                        food_level=sorted_level, food_spawned=food_level.sum(),
                        time=jnp.array(0, jnp.int32))

    # -------------------------------------------------------------------------------------- step
    def legal_actions(self, state: LBFState) -> Array:
        """``bool[n, 6]``: lbforaging's valid actions of one env (moves onto the grid and off foods; load
        next to a food; other players ignored)."""
        pos = state.player_pos
        target = pos[:, None, :] + jnp.asarray(ACTION_DELTAS)[None]  # [n, 6, 2]
        on_grid = ((target[..., 0] >= 0) & (target[..., 0] < self.rows)
                   & (target[..., 1] >= 0) & (target[..., 1] < self.cols))
        present = state.food_level > 0
        on_food = jnp.any(present & jnp.all(target[:, :, None, :] == state.food_pos[None, None], -1), -1)
        move_ok = on_grid & ~on_food
        distance = jnp.abs(pos[:, None, :] - state.food_pos[None]).sum(-1)  # [n, F]
        next_to_food = jnp.any(present & (distance == 1), -1)
        stay = jnp.ones((pos.shape[0], 1), bool)
        return jnp.concatenate([stay, move_ok[:, 1:5], next_to_food[:, None]], 1)

    def transition_one(self, state: LBFState, action: Array, params: LBFParams) -> tuple[LBFState, Array]:
        """One env's step (``action`` is ``int[n]``): the next state and ``float32[n]`` rewards."""
        action = action.reshape(-1).astype(jnp.int32)
        legal = self.legal_actions(state)
        action = jnp.where(jnp.take_along_axis(legal, action[:, None], 1)[:, 0], action, NONE)
        pos = state.player_pos
        target = pos + jnp.asarray(ACTION_DELTAS)[action]
        claims = jnp.all(target[:, None, :] == target[None, :, :], -1).sum(1)
        new_pos = jnp.where((claims == 1)[:, None], target, pos)

        loading = action == LOAD
        present = state.food_level > 0
        distance = jnp.abs(new_pos[:, None, :] - state.food_pos[None]).sum(-1)
        group = loading[:, None] & present[None] & (distance == 1)  # [n, F]
        level = state.player_level
        group_level = (group * level[:, None]).sum(0)  # [F]
        eaten = group.any(0) & (group_level >= state.food_level)
        food = state.food_level.astype(jnp.float32)
        share = level[:, None].astype(jnp.float32) * food[None]
        normalizer = group_level.astype(jnp.float32) * state.food_spawned.astype(jnp.float32)
        share = jnp.where(params.normalize_reward, share / jnp.maximum(normalizer, 1.0)[None], share)
        per_food = jnp.where(eaten[None], share, -jnp.asarray(params.penalty, jnp.float32))
        reward = jnp.where(group, per_food, 0.0).sum(1)
        state = dataclasses.replace(state, player_pos=new_pos,
                                    food_level=jnp.where(eaten, 0, state.food_level), time=state.time + 1)
        return state, reward.astype(jnp.float32)

    # ------------------------------------------------------------------------------ observations
    def _timestep(self, state: LBFState, reward: Array, params: LBFParams) -> TimeStep:
        """The batch's TimeStep from its batch-last state and ``float32[n, B]`` rewards."""
        n = self.num_players
        obs = jax.vmap(self.observe, in_axes=-1, out_axes=-1)(state)
        legal = jax.vmap(self.legal_actions, in_axes=-1, out_axes=-1)(state)
        cleared = jnp.all(state.food_level == 0, axis=0)
        truncated = (state.time >= params.max_steps) & ~cleared
        return TimeStep(
            obs={"agents": obs},
            reward={"agents": reward},
            terminated={"agents": jnp.broadcast_to(cleared, (n, *cleared.shape))},
            truncated={"agents": jnp.broadcast_to(truncated, (n, *truncated.shape))},
            action_mask={"agents": legal},
            info={},
        )

    def observe(self, state: LBFState) -> Array:
        """Every player's observation of one env: ``float32[n, *obs_shape]``."""
        if self.observation_type == "grid":
            return jax.vmap(lambda i: self._grid_view(state, i))(jnp.arange(self.num_players))
        return jax.vmap(lambda i: self._vector_view(state, i))(jnp.arange(self.num_players))

    def _vector_view(self, state: LBFState, me: Array) -> Array:
        """lbforaging's vector: the foods this player sees, in row-major order, then itself, then the others
        it sees in index order, each as ``(row, col, level)`` relative to its view's clipped top-left corner;
        unfilled slots are ``(-1, -1, 0)``."""
        sight = self.sight
        origin = jnp.maximum(state.player_pos[me] - sight, 0)
        offset = jnp.abs(state.food_pos - state.player_pos[me]).max(-1)
        seen_food = (state.food_level > 0) & (offset <= sight)
        food_rows = jnp.concatenate([state.food_pos - origin, state.food_level[:, None]], 1)
        food_part = _compact(seen_food, food_rows.astype(jnp.float32), self.num_food, (-1.0, -1.0, 0.0))

        local = state.player_pos - origin
        seen = jnp.all((local >= 0) & (local <= 2 * sight), -1)
        index = jnp.arange(self.num_players)
        # self first, then the others in index order
        order = jnp.where(index == 0, me, jnp.where(index <= me, index - 1, index))
        player_rows = jnp.concatenate([local, state.player_level[:, None]], 1)[order].astype(jnp.float32)
        fill: tuple[float, ...] = (-1.0, -1.0, 0.0)
        if not self.observe_agent_levels:
            player_rows, fill = player_rows[:, :2], (-1.0, -1.0)
        player_part = _compact(seen[order], player_rows, self.num_players, fill)
        return jnp.concatenate([food_part.reshape(-1), player_part.reshape(-1)])

    def _grid_view(self, state: LBFState, me: Array) -> Array:
        """lbforaging's grid: ``float32[3, 2s+1, 2s+1]`` centred on the player, of player levels (1 without
        ``observe_agent_levels``), food levels, and access (1 on free cells of the grid; 0 off it and at
        players and foods)."""
        side = 2 * self.sight + 1
        rows = state.player_pos[me, 0] - self.sight + jnp.arange(side)[:, None]
        cols = state.player_pos[me, 1] - self.sight + jnp.arange(side)[None, :]
        inside = (rows >= 0) & (rows < self.rows) & (cols >= 0) & (cols < self.cols)
        at_player = ((state.player_pos[:, 0, None, None] == rows)
                     & (state.player_pos[:, 1, None, None] == cols))
        # where players share a cell (the reference's overlap) the highest index is written last
        later = jnp.flip(jnp.cumsum(jnp.flip(at_player, 0), 0), 0) - at_player
        shown = at_player & (later == 0)
        level = state.player_level if self.observe_agent_levels else jnp.ones_like(state.player_level)
        agents = (shown * level[:, None, None]).sum(0)
        at_food = ((state.food_pos[:, 0, None, None] == rows) & (state.food_pos[:, 1, None, None] == cols)
                   & (state.food_level > 0)[:, None, None])
        foods = (at_food * state.food_level[:, None, None]).sum(0)
        access = inside & ~at_player.any(0) & ~at_food.any(0)
        return jnp.stack([agents, foods, access]).astype(jnp.float32)

    def render(self, state: LBFState, params: EnvParams | None = None) -> Array:
        """``uint8[rows * 32, cols * 32, 3]`` of one env: foods as discs whose size grows with their level
        (with one pip per level), players as coloured squares with one pip per level, and each player's view
        when it is partial."""
        return render_field(self.rows, self.cols, self.sight, state.player_pos, state.player_level,
                            state.food_pos, state.food_level)


def _uniform_cell(allowed: Array, unit: Array) -> tuple[Array, Array]:
    """A uniformly random flat index where ``allowed`` (``bool[rows, cols]``) is True, from one uniform draw
    ``unit`` in [0, 1), and whether there was any.

    The ``k``-th allowed cell is found row, then column, with prefix counts written as masked sums
    (``rows^2 + cols^2`` products): XLA on the CPU runs a cumsum as a scan, which made a reset cost several
    steps when every reset placed its players and foods through one over the whole field."""
    rows, cols = allowed.shape
    per_row = allowed.sum(1)
    count = per_row.sum()
    pick = jnp.minimum((unit * count).astype(jnp.int32), count - 1)
    before_row = jnp.where(jnp.arange(rows)[None, :] < jnp.arange(rows)[:, None], per_row[None, :], 0).sum(1)
    row = jnp.sum((before_row + per_row <= pick).astype(jnp.int32))
    in_row = allowed[jnp.minimum(row, rows - 1)]
    rank = pick - jnp.sum(jnp.where(jnp.arange(rows) < row, per_row, 0))
    before_col = jnp.where(jnp.arange(cols)[None, :] < jnp.arange(cols)[:, None], in_row[None, :], 0).sum(1)
    col = jnp.argmax(in_row & (before_col == rank))
    return row * cols + col, count > 0


def _uniform_level(low: Array, high: Array, unit: Array) -> Array:
    """A uniformly random int in ``[low, high]`` from one uniform draw ``unit`` in [0, 1)."""
    return low + jnp.minimum((unit * (high - low + 1)).astype(jnp.int32), high - low)


def _compact(keep: Array, rows: Array, slots: int, fill: tuple[float, ...]) -> Array:
    """``rows[keep]`` moved to the front in order, the rest of ``slots`` filled with ``fill``."""
    rank = jnp.cumsum(keep) - 1
    onehot = keep[:, None] & (rank[:, None] == jnp.arange(slots)[None])  # [items, slots]
    filled = onehot.any(0)
    # a select and a sum over a handful of items: XLA's CPU dot for these tiny shapes was 4x slower
    values = jnp.where(onehot[:, :, None], rows[:, None, :], 0).sum(0)
    return jnp.where(filled[:, None], values, jnp.asarray(fill, rows.dtype)[None])
