"""Multi-Robot Warehouse (RWARE): robots fetch requested shelves to the goals, as ``rware`` 2.0.0 does.

The state is batch-last: every array ends in the env batch. The rules are written for one env and mapped
over the batch at the boundary (``reset_batch``/``step_batch``). One step:

1. **Plan.** FORWARD targets the cell ahead (clamped to the grid). A robot carrying a shelf may not enter a
   cell holding a shelf unless a robot carrying a shelf stands there: its move is cancelled (a no-op).
2. **Resolve collisions** on the graph "robot cell -> target cell" (one edge per robot). In each weakly
   connected component: a head-on swap of two robots blocks the whole component; a rotation of three or
   more robots all move; a component that ends in a free cell moves the longest chain into it, ties broken
   the way ``networkx.dag_longest_path`` breaks them (the predecessor networkx lists first; see
   ``_hash_order``). Everyone else whose move failed stays.
3. **Act**, in robot order: move (with the carried shelf), turn, pick up the shelf under the robot, or put
   the carried shelf down on a non-highway cell (two-stage reward: +0.5 if the robot delivered since).
4. **Deliver**, goals in order: a requested shelf on a goal is replaced in the request queue, at the same
   index, by a shelf drawn uniformly from those not in the queue; rewards go to the robot on the goal
   (individual), to everyone (global) or +0.5 to the robot (two-stage, arming its drop bonus).
5. Counters: the inactivity counter restarts after a delivery; the step counter advances.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv
from jaxmarl_suite.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxmarl_suite.core.types import EnvParams, TimeStep

from .rendering import render_warehouse

Array = jax.Array

NOOP, FORWARD, TURN_LEFT, TURN_RIGHT, TOGGLE_LOAD = range(5)
"""Actions, in ``rware``'s order."""
NUM_ACTIONS = 5
UP, DOWN, LEFT, RIGHT = range(4)
"""Facings, in ``rware``'s order (not clockwise)."""
DIRECTION_VECTORS = np.array([(0, -1), (0, 1), (-1, 0), (1, 0)], np.int32)
"""``(dx, dy)`` of a step in each facing."""
TURNED_RIGHT = np.array([RIGHT, LEFT, UP, DOWN], np.int32)
"""The facing after a clockwise turn, per facing."""
TURNED_LEFT = np.array([LEFT, RIGHT, DOWN, UP], np.int32)
"""The facing after a counter-clockwise turn, per facing."""
REWARD_TYPES = ("individual", "global", "two_stage")
OBSERVATION_TYPES = ("flattened", "dict", "image", "image_dict")
IMAGE_LAYERS = ("shelves", "requests", "agents", "agent_direction", "agent_load", "goals", "accessible")
DEFAULT_IMAGE_LAYERS = ("shelves", "requests", "agents", "goals", "accessible")
HASH_ROUNDS = 14
"""Probe rounds of CPython's set after which the perturbation is all shifted out (5 bits a round)."""
LINEAR_PROBES = 9
"""CPython's ``LINEAR_PROBES`` (setobject.c)."""


def layout_from_params(shelf_columns: int, column_height: int, shelf_rows: int
                       ) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """``rware``'s computed layout: ``(highway bool[H, W], goals [(x, y), ...])``."""
    height, width = (column_height + 1) * shelf_rows + 2, 3 * shelf_columns + 1
    y, x = np.mgrid[0:height, 0:width]
    queue = (y > height - (column_height + 3)) & ((x == width // 2 - 1) | (x == width // 2))
    highway = (x % 3 == 0) | (y % (column_height + 1) == 0) | (y == height - 1) | queue
    return highway, [(width // 2 - 1, height - 1), (width // 2, height - 1)]


def layout_from_string(layout: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """A layout string (``x`` shelf, ``.`` highway, ``g`` goal; spaces ignored): ``(highway, goals)``,
    goals in reading order."""
    lines = layout.strip().replace(" ", "").split("\n")
    if any(len(line) != len(lines[0]) for line in lines):
        raise ValueError("layout must be rectangular")
    highway = np.zeros((len(lines), len(lines[0])), bool)
    goals = []
    for y, line in enumerate(lines):
        for x, char in enumerate(line.lower()):
            if char not in "gx.":
                raise ValueError(f"layout may hold only 'x', '.' and 'g', got {char!r}")
            highway[y, x] = char != "x"
            if char == "g":
                goals.append((x, y))
    if not goals:
        raise ValueError("layout needs at least one goal 'g'")
    return highway, goals


def cell_hash_bits(height: int, width: int) -> np.ndarray:
    """``int32[H * W, HASH_ROUNDS]``: per cell ``(x, y)`` (index ``y * W + x``), the low 7 bits of
    ``hash((x, y))`` shifted right by ``5 * r`` for probe round ``r`` (CPython's set probing of tuples)."""
    bits = np.zeros((height * width, HASH_ROUNDS), np.int32)
    for y in range(height):
        for x in range(width):
            unsigned = hash((x, y)) & (2**64 - 1)
            bits[y * width + x] = [(unsigned >> (5 * r)) & 127 for r in range(HASH_ROUNDS)]
    return bits


@struct.dataclass
class RobotWarehouseParams(EnvParams):
    """Traceable RWARE parameters."""

    max_steps: int = 500
    """Steps per episode; every robot is truncated at this step."""
    max_inactivity_steps: int = 0
    """Steps without a delivery after which the episode terminates (0: never)."""


@struct.dataclass
class RobotWarehouseState:
    """Batch-last state of ``B`` warehouses with ``n`` robots and ``S`` shelves (shapes end in ``B``)."""

    agent_pos: Array
    """``int32[n, 2, B]``: each robot's ``(x, y)``."""
    agent_dir: Array
    """``int32[n, B]``: each robot's facing (0 up, 1 down, 2 left, 3 right)."""
    carried: Array
    """``int32[n, B]``: the shelf each robot carries (-1: none)."""
    has_delivered: Array
    """``bool[n, B]``: the robot delivered since it last put a shelf down (two-stage reward)."""
    message: Array
    """``int32[n, msg_bits, B]``: each robot's last message bits."""
    shelf_pos: Array
    """``int32[S, 2, B]``: each shelf's ``(x, y)`` (a carried shelf is at its robot)."""
    request_queue: Array
    """``int32[Q, B]``: the requested shelves, in queue order."""
    step: Array
    """``int32[B]``: steps taken in the episode."""
    inactive_steps: Array
    """``int32[B]``: steps since the last delivery."""


class RobotWarehouse(BatchNativeEnv):
    """The multi-robot warehouse of ``rware`` 2.0.0 (see the module docstring and README.md).

    Args:
        shelf_columns: columns of shelf blocks (odd).
        column_height: shelves per block column.
        shelf_rows: rows of shelf blocks.
        num_agents: robots.
        msg_bits: message bits each robot sends per step (actions become ``MultiDiscrete``).
        sensor_range: the observed square is ``2 * sensor_range + 1`` cells wide.
        request_queue_size: shelves requested at once.
        max_inactivity_steps: steps without a delivery that end the episode (None: never).
        max_steps: steps per episode.
        reward_type: ``"individual"``, ``"global"`` or ``"two_stage"``.
        layout: a layout string (``x`` shelf, ``.`` highway, ``g`` goal); overrides the three sizes.
        observation_type: ``"flattened"``, ``"dict"`` (the reference's dict, flattened), ``"image"`` or
            ``"image_dict"`` (the reference's dict, flattened: features, then the image).
        image_observation_layers: image layers, from ``IMAGE_LAYERS``.
        image_observation_directional: rotate image views so the robot faces up.
        normalised_coordinates: divide the observed own position by the grid's last index.
    """

    all_actions_legal = True
    episodes_end_together = True
    render_fps = 10

    def __init__(self, shelf_columns: int = 3, column_height: int = 8, shelf_rows: int = 1,
                 num_agents: int = 2, msg_bits: int = 0, sensor_range: int = 1, request_queue_size: int = 2,
                 max_inactivity_steps: int | None = None, max_steps: int = 500,
                 reward_type: str = "individual", layout: str | None = None,
                 observation_type: str = "flattened",
                 image_observation_layers: Sequence[str] = DEFAULT_IMAGE_LAYERS,
                 image_observation_directional: bool = True, normalised_coordinates: bool = False) -> None:
        def positive(name: str, value: Any, minimum: int = 1) -> int:
            if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < minimum:
                raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
            return int(value)

        for name, flag in (("image_observation_directional", image_observation_directional),
                           ("normalised_coordinates", normalised_coordinates)):
            if not isinstance(flag, bool | np.bool_):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        if layout is not None and not isinstance(layout, str):
            raise TypeError(f"layout must be a string or None, got {type(layout).__name__}")
        if layout:
            highway, goals = layout_from_string(layout)
        else:
            shelf_columns = positive("shelf_columns", shelf_columns)
            if shelf_columns % 2 == 0:
                raise ValueError(f"shelf_columns must be odd, got {shelf_columns}")
            highway, goals = layout_from_params(shelf_columns, positive("column_height", column_height),
                                                positive("shelf_rows", shelf_rows))
        self.num_robots = positive("num_agents", num_agents)
        self.msg_bits = positive("msg_bits", msg_bits, 0)
        self.sensor_range = positive("sensor_range", sensor_range, 0)
        self.request_queue_size = positive("request_queue_size", request_queue_size, 0)
        max_steps = positive("max_steps", max_steps)
        if max_inactivity_steps is not None:
            max_inactivity_steps = positive("max_inactivity_steps", max_inactivity_steps)
        reward_type = str(getattr(reward_type, "name", reward_type)).lower()
        if reward_type not in REWARD_TYPES:
            raise ValueError(f"reward_type must be one of {REWARD_TYPES}, got {reward_type!r}")
        observation_type = str(getattr(observation_type, "name", observation_type)).lower()
        if observation_type not in OBSERVATION_TYPES:
            raise ValueError(f"observation_type must be one of {OBSERVATION_TYPES}, got {observation_type!r}")
        if isinstance(image_observation_layers, str):
            raise TypeError("image_observation_layers must be a sequence of layer names, not one string")
        layers = tuple(str(getattr(layer, "name", layer)).lower() for layer in image_observation_layers)
        if not layers or any(layer not in IMAGE_LAYERS for layer in layers):
            raise ValueError(f"image_observation_layers must be a non-empty sequence of {IMAGE_LAYERS}, "
                             f"got {image_observation_layers!r}")

        self.highway = highway
        self.height, self.width = highway.shape
        self.goals = np.asarray(goals, np.int32).reshape(-1, 2)
        ys, xs = np.nonzero(~highway)  # row-major: rware's shelf ids
        self.shelf_cells = np.stack([xs, ys], axis=1).astype(np.int32)
        self.num_shelves = len(self.shelf_cells)
        if self.num_robots > self.height * self.width:
            raise ValueError(f"{self.num_robots} robots do not fit on {self.height} x {self.width} cells")
        if self.request_queue_size > self.num_shelves:
            raise ValueError(f"request_queue_size {self.request_queue_size} exceeds the "
                             f"{self.num_shelves} shelves")
        self.reward_type = reward_type
        self.observation_type = observation_type
        self.image_observation_layers = layers
        self.image_observation_directional = bool(image_observation_directional)
        self.normalised_coordinates = bool(normalised_coordinates)
        self.reference = "rware"
        self.groups = {"agents": tuple(f"agent_{i}" for i in range(self.num_robots))}
        self._params = RobotWarehouseParams(max_steps=max_steps,
                                            max_inactivity_steps=max_inactivity_steps or 0)
        self.hash_bits = cell_hash_bits(self.height, self.width)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.normalised_x = (np.arange(self.width) / (self.width - 1)).astype(np.float32)
            self.normalised_y = (np.arange(self.height) / (self.height - 1)).astype(np.float32)

    @property
    def default_params(self) -> RobotWarehouseParams:
        """Parameters from the constructor's arguments."""
        return self._params

    @property
    def window(self) -> int:
        """Side of the observed square, ``2 * sensor_range + 1``."""
        return 2 * self.sensor_range + 1

    @property
    def observation_size(self) -> int:
        """Length of the flattened (and dict) observation: ``8 + window**2 * (7 + msg_bits)``."""
        return 8 + self.window**2 * (7 + self.msg_bits)

    def observation_space(self, group: str) -> Space:
        """``float32[8 + window**2 * (7 + msg_bits)]`` (flattened, dict), ``float32[layers, window,
        window]`` (image) or ``float32[6 + layers * window**2]`` (image_dict)."""
        if self.observation_type in ("flattened", "dict"):
            return Box(-np.inf, np.inf, (self.observation_size,), np.float32)
        side = self.window
        high = np.stack([np.full((side, side), 4.0 if layer == "agent_direction" else 1.0, np.float32)
                         for layer in self.image_observation_layers])
        if self.observation_type == "image":
            return Box(0.0, high, high.shape, np.float32)
        return Box(-np.inf, np.inf, (6 + high.size,), np.float32)

    def action_space(self, group: str) -> Space:
        """``Discrete(5)`` (no-op, forward, left, right, toggle load), or ``MultiDiscrete([5, 2, ...])``
        with the message bits."""
        if self.msg_bits == 0:
            return Discrete(NUM_ACTIONS)
        return MultiDiscrete([NUM_ACTIONS] + [2] * self.msg_bits)

    # ------------------------------------------------------------------------------ batch boundary
    def reset_batch(self, keys: Array, params: EnvParams) -> tuple[RobotWarehouseState, TimeStep]:
        """Start ``B`` warehouses, each from its own key (see ``start_one``)."""
        assert isinstance(params, RobotWarehouseParams)
        state = jax.vmap(self.start_one, out_axes=-1)(keys)
        zeros = jnp.zeros((self.num_robots, keys.shape[0]), jnp.float32)
        return state, self._timestep(state, zeros, jnp.zeros((keys.shape[0],), jnp.int32), params)

    def step_batch(self, keys: Array, state: RobotWarehouseState, actions: dict[str, Array],
                   params: EnvParams) -> tuple[RobotWarehouseState, TimeStep]:
        """Step ``B`` warehouses; ``actions["agents"]`` is ``int[n, B]`` (or ``int[n, 1 + msg_bits, B]``)."""
        draws = jnp.full((len(self.goals), keys.shape[0]), -1, jnp.int32)
        return self.step_batch_with_draws(keys, state, actions, draws, params)

    def step_batch_with_draws(self, keys: Array, state: RobotWarehouseState, actions: dict[str, Array],
                              draws: Array, params: EnvParams) -> tuple[RobotWarehouseState, TimeStep]:
        """``step_batch`` whose ``k``-th delivery in env ``b`` takes ``draws[k, b]`` (``int32[num_goals,
        B]``, -1: its own draw) as the replacement request: how a parity test replays the reference's numpy
        draws."""
        assert isinstance(params, RobotWarehouseParams)
        plan = jax.vmap(self._plan_one, in_axes=(-1, -1), out_axes=-1)(state, actions["agents"])
        order = plan["graph_order"] if self.num_robots < 4 else self._batch_hash_order(plan)
        state, reward, deliveries = jax.vmap(self._finish_one, in_axes=(0, -1, -1, -1, -1), out_axes=-1)(
            keys, state, plan, order, draws)
        return state, self._timestep(state, reward, deliveries, params)

    def _batch_hash_order(self, plan: dict[str, Array]) -> Array:
        """``int32[n, B]``: networkx's predecessor ranks for a batch. A tie that networkx breaks by a Python
        set's layout is rare, so the emulation runs only on the envs that have one: gathered into a
        sixteenth of the batch when they fit, the whole batch otherwise, nothing when there are none."""
        needs = plan["needs_hash_order"]
        num_envs = needs.shape[0]
        capacity = max(1, num_envs // 16)
        count = jnp.sum(needs)
        hash_order = jax.vmap(self._hash_order, in_axes=-1, out_axes=-1)

        def few(plan: dict[str, Array]) -> Array:
            index = jnp.nonzero(needs, size=capacity, fill_value=0)[0]
            subset = hash_order(jax.tree.map(lambda x: x[..., index], plan))
            target = jnp.where(jnp.arange(capacity) < count, index, num_envs)
            return plan["graph_order"].at[:, target].set(subset, mode="drop")

        def some(plan: dict[str, Array]) -> Array:
            return jax.lax.cond(count <= capacity, few, hash_order, plan)

        return jax.lax.cond(count > 0, some, lambda p: p["graph_order"], plan)

    # ------------------------------------------------------------------------------------- reset
    def start_one(self, key: Array) -> RobotWarehouseState:
        """One warehouse's start: robots on distinct uniform cells (shelf cells and goals included), i.i.d.
        uniform facings, a uniform request queue without repeats; shelves on every non-highway cell."""
        cells_key, dir_key, queue_key = jax.random.split(key, 3)
        n, width = self.num_robots, self.width
        cells = jax.random.choice(cells_key, self.height * width, (n,), replace=False)
        return RobotWarehouseState(
            agent_pos=jnp.stack([cells % width, cells // width], axis=1).astype(jnp.int32),
            agent_dir=jax.random.randint(dir_key, (n,), 0, 4, jnp.int32),
            carried=jnp.full((n,), -1, jnp.int32),
            has_delivered=jnp.zeros((n,), bool),
            message=jnp.zeros((n, self.msg_bits), jnp.int32),
            shelf_pos=jnp.asarray(self.shelf_cells),
            request_queue=jax.random.choice(queue_key, self.num_shelves, (self.request_queue_size,),
                                            replace=False).astype(jnp.int32),
            step=jnp.array(0, jnp.int32),
            inactive_steps=jnp.array(0, jnp.int32),
        )

    # -------------------------------------------------------------------------------------- step
    def agent_grid(self, agent_pos: Array) -> Array:
        """``int32[H, W]``: robot index + 1 on each robot's cell, 0 elsewhere (one env)."""
        ids = jnp.arange(1, agent_pos.shape[0] + 1, dtype=jnp.int32)
        return jnp.zeros((self.height, self.width), jnp.int32).at[agent_pos[:, 1], agent_pos[:, 0]].set(ids)

    def shelf_grid(self, shelf_pos: Array) -> Array:
        """``int32[H, W]``: shelf index + 1 on each shelf's cell, 0 elsewhere (one env)."""
        ids = jnp.arange(1, shelf_pos.shape[0] + 1, dtype=jnp.int32)
        return jnp.zeros((self.height, self.width), jnp.int32).at[shelf_pos[:, 1], shelf_pos[:, 0]].set(ids)

    def _split_action(self, action: Array, message: Array) -> tuple[Array, Array]:
        action = jnp.asarray(action).astype(jnp.int32)
        if self.msg_bits == 0:
            return action.reshape(self.num_robots), message
        return action[:, 0], action[:, 1:]

    def _plan_one(self, state: RobotWarehouseState, action: Array) -> dict[str, Array]:
        """One env's move graph: who moves where, the components, the longest-chain depths, and the order
        networkx lists predecessors in when it is the original graph's (``graph_order``)."""
        n = self.num_robots
        robots = jnp.arange(n)
        act, message = self._split_action(action, state.message)
        agents = self.agent_grid(state.agent_pos)
        shelves = self.shelf_grid(state.shelf_pos)
        pos = state.agent_pos
        step = jnp.asarray(DIRECTION_VECTORS)[state.agent_dir]
        ahead = jnp.clip(pos + step, 0, jnp.array([self.width - 1, self.height - 1]))
        target = jnp.where((act == FORWARD)[:, None], ahead, pos)
        moves = jnp.any(target != pos, axis=1)
        loaded = state.carried >= 0
        occupant = agents[target[:, 1], target[:, 0]] - 1  # -1: free cell
        occupant_loaded = (occupant >= 0) & loaded[jnp.maximum(occupant, 0)]
        cancel = loaded & moves & (shelves[target[:, 1], target[:, 0]] > 0) & ~occupant_loaded
        act = jnp.where(cancel, NOOP, act)
        moving = moves & ~cancel
        target = jnp.where(moving[:, None], target, pos)
        # nodes: robot i's cell is node i; a free target cell is node n + (first robot targeting it)
        same_target = jnp.all(target[:, None] == target[None], axis=-1)
        free = moving & (occupant < 0)
        first_free = jnp.argmax(same_target & free[None, :], axis=1)
        succ = jnp.where(moving, jnp.where(occupant >= 0, occupant, n + first_free), robots)
        succ_ext = jnp.concatenate([succ, jnp.arange(n, 2 * n)])  # free nodes are sinks
        free_node = jnp.any(free[:, None] & (first_free[:, None] == robots[None]), axis=0)  # node n+k exists
        terminal = succ_ext
        for _ in range(int(np.ceil(np.log2(2 * n))) + 1):
            terminal = terminal[terminal]
        terminal = terminal[:n]
        in_tree = terminal >= n
        # cycle length of robots on a cycle (self-loops: 1); 0 for others
        cycle_length = jnp.zeros((n,), jnp.int32)
        walker = robots
        for k in range(1, n + 1):
            walker = succ_ext[walker]
            cycle_length = jnp.where((walker == robots) & (cycle_length == 0), k, cycle_length)
        # longest chain of robots ending at each node (tree components only)
        into = (succ[:, None] == jnp.arange(2 * n)[None]) & moving[:, None]  # [robot, node]
        depth = jnp.zeros((n,), jnp.int32)
        for _ in range(n):
            depth = jnp.where(in_tree, jnp.max(jnp.where(into[:, :n], depth[:, None] + 1, 0), axis=0), 0)
        node_depth = jnp.max(jnp.where(into, depth[:, None] + 1, 0), axis=0)  # [2n]
        tied = jnp.sum(into & (depth[:, None] + 1 == node_depth[None]), axis=0) >= 2  # [2n]
        # networkx's node order: first appearance in (start_0, target_0, start_1, target_1, ...)
        entered_by = jnp.where(into[:, :n] & (robots[:, None] != robots[None]), 2 * robots[:, None] + 1,
                               2 * n)
        robot_order = jnp.minimum(2 * robots, entered_by.min(0))
        node_order = jnp.concatenate([robot_order, jnp.where(free_node, 2 * robots + 1, 4 * n)])
        # a component's subgraph iterates a Python set when it has under half of the graph's nodes
        graph_size = n + jnp.sum(free_node)
        sink_members = jnp.sum(terminal[:, None] == jnp.arange(n, 2 * n)[None], axis=0) + 1  # per sink
        hash_sink = free_node & (2 * sink_members < graph_size)
        node_sink = jnp.concatenate([terminal, jnp.arange(n, 2 * n)])
        # a tie needs three nodes, so under four robots no tied component is under half of the graph
        needs = jnp.any(tied & (node_sink >= n) & hash_sink[jnp.clip(node_sink - n, 0, n - 1)]) & (n >= 4)
        cells = jnp.concatenate([pos[:, 1] * self.width + pos[:, 0],
                                 target[:, 1] * self.width + target[:, 0]])
        return {"act": act, "message": message, "target": target, "moving": moving, "succ": succ,
                "terminal": terminal, "in_tree": in_tree, "cycle_length": cycle_length, "depth": depth,
                "free_node": free_node, "hash_sink": hash_sink, "node_order": node_order, "cells": cells,
                "graph_order": robot_order, "needs_hash_order": needs, "shelves": shelves}

    def _hash_order(self, plan: dict[str, Array]) -> Array:
        """``int32[n]``: each robot's rank in networkx's predecessor lists. In a component with under half of
        the graph's nodes, networkx iterates the Python set of the component's nodes (rebuilt from the set
        its breadth-first search filled), so ranks are slots of CPython's set table, emulated here from
        ``hash((x, y))``; elsewhere they are the original graph's node order."""
        n = self.num_robots
        slots = jax.vmap(lambda sink: self._component_slots(plan, sink))(jnp.arange(n, 2 * n))  # [n, 2n]
        sink = jnp.clip(plan["terminal"] - n, 0, n - 1)
        use_hash = plan["in_tree"] & plan["hash_sink"][sink]
        return jnp.where(use_hash, slots[sink, jnp.arange(n)], plan["graph_order"])

    def _component_slots(self, plan: dict[str, Array], sink: Array) -> Array:
        """``int32[2n]``: each node's slot in the set networkx iterates for the tree component ending at
        node ``sink`` (garbage for nodes outside it)."""
        n = self.num_robots
        size = n + 1
        nodes = jnp.arange(2 * n)
        member = jnp.concatenate([plan["terminal"] == sink, jnp.arange(n, 2 * n) == sink])
        source = jnp.argmin(jnp.where(member, plan["node_order"], 8 * n))
        succ = plan["succ"]
        succ_of = jnp.concatenate([jnp.where(succ != jnp.arange(n), succ, -1), jnp.full((n,), -1)])
        # breadth-first search as networkx's _plain_bfs: successor first, then predecessors in robot order
        queue = jnp.full((size,), -1, jnp.int32).at[0].set(source)
        seen = jnp.zeros((2 * n,), bool).at[source].set(True)

        def visit(index: Array, carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
            queue, seen, count = carry
            node = queue[index]
            preds = jnp.where(plan["moving"] & (succ == node) & (jnp.arange(n) != node), jnp.arange(n), -1)
            candidates = jnp.concatenate([succ_of[jnp.maximum(node, 0)][None], preds])
            fresh = (index < count) & (candidates >= 0) & ~seen[jnp.maximum(candidates, 0)]
            at = count + jnp.cumsum(fresh) - 1
            queue = queue.at[jnp.where(fresh, at, size)].set(candidates, mode="drop")
            seen = seen.at[jnp.where(fresh, candidates, 2 * n)].set(True, mode="drop")
            return queue, seen, count + jnp.sum(fresh)

        queue, seen, count = jax.lax.fori_loop(0, size, visit, (queue, seen, jnp.array(1, jnp.int32)))
        bits = jnp.asarray(self.hash_bits)[plan["cells"][jnp.maximum(queue, 0)]]  # [size, rounds]
        first = _set_table(bits, count)  # the BFS's set: entries are queue indices
        iteration = jnp.argsort(jnp.where(first >= 0, jnp.arange(first.shape[0]), 10**6))[:size]
        order = first[iteration]  # queue indices in the first set's iteration order
        second = _set_table(bits[jnp.maximum(order, 0)], count)  # the subgraph's set, refilled in that order
        slot_of_rank = jnp.zeros((size,), jnp.int32).at[jnp.where(second >= 0, second, size)].set(
            jnp.arange(second.shape[0], dtype=jnp.int32), mode="drop")
        slot_of_queue = jnp.zeros((size,), jnp.int32).at[jnp.where(order >= 0, order, size)].set(
            slot_of_rank, mode="drop")
        return jnp.zeros((2 * n,), jnp.int32).at[jnp.where(queue >= 0, queue, 2 * n)].set(
            slot_of_queue, mode="drop")[nodes]

    def _commit(self, plan: dict[str, Array], order: Array) -> Array:
        """``bool[n]``: which robots' moves succeed, given networkx's predecessor ranks ``order``."""
        n = self.num_robots
        succ, depth, moving = plan["succ"], plan["depth"], plan["moving"]
        into = (succ[:, None] == jnp.arange(2 * n)[None]) & moving[:, None]
        # best predecessor: deepest chain, then the one networkx lists first
        score = jnp.where(into, depth[:, None] * 1024 - order[:, None], -(10**6))
        chosen = moving & (jnp.argmax(score, axis=0)[succ] == jnp.arange(n))
        on_path = chosen
        for _ in range(n):
            on_path = chosen & ((succ >= n) | on_path[jnp.minimum(succ, n - 1)])
        rotation = plan["cycle_length"] >= 3
        return moving & ((plan["in_tree"] & on_path) | (~plan["in_tree"] & rotation))

    def _finish_one(self, key: Array, state: RobotWarehouseState, plan: dict[str, Array], order: Array,
                    draws: Array) -> tuple[RobotWarehouseState, Array, Array]:
        """One env's step after the move graph: act, deliver, count. The ``k``-th delivery of the step
        takes ``draws[k]`` as its replacement request where that is not -1 (a parity test replays the
        reference's draws so), else draws its own. Returns the state, ``float32[n]`` rewards and the
        number of deliveries."""
        n = self.num_robots
        robots = jnp.arange(n)
        act = plan["act"]
        moved = self._commit(plan, order)
        pos = jnp.where(moved[:, None], plan["target"], state.agent_pos)
        turn = jnp.where(act == TURN_LEFT, jnp.asarray(TURNED_LEFT)[state.agent_dir],
                         jnp.asarray(TURNED_RIGHT)[state.agent_dir])
        facing = jnp.where((act == TURN_LEFT) | (act == TURN_RIGHT), turn, state.agent_dir)
        toggles = act == TOGGLE_LOAD
        loaded = state.carried >= 0
        under = plan["shelves"][pos[:, 1], pos[:, 0]] - 1  # pre-step grid; toggling robots did not move
        picks = toggles & ~loaded & (under >= 0)
        drops = toggles & loaded & ~jnp.asarray(self.highway)[pos[:, 1], pos[:, 0]]
        carried = jnp.where(picks, under, jnp.where(drops, -1, state.carried))
        reward = jnp.zeros((n,), jnp.float32)
        if self.reward_type == "two_stage":
            reward = reward + jnp.where(drops & state.has_delivered, 0.5, 0.0)
        has_delivered = state.has_delivered & ~drops
        # carried shelves follow their robots
        carrier = jnp.full((self.num_shelves,), -1, jnp.int32).at[jnp.where(carried >= 0, carried,
                                                                            self.num_shelves)].set(
            robots, mode="drop")
        shelf_pos = jnp.where((carrier >= 0)[:, None], pos[jnp.maximum(carrier, 0)], state.shelf_pos)
        shelves = self.shelf_grid(shelf_pos)
        agents = self.agent_grid(pos)
        queue = state.request_queue
        deliveries = jnp.array(0, jnp.int32)
        goal_keys = jax.random.split(key, len(self.goals))
        for goal, goal_key in zip(self.goals, goal_keys, strict=True):
            shelf = shelves[goal[1], goal[0]] - 1
            slot_hit = queue == shelf
            delivered = (shelf >= 0) & jnp.any(slot_hit)
            requested = jnp.zeros((self.num_shelves,), bool).at[queue].set(True)
            noise = jax.random.uniform(goal_key, (self.num_shelves,))
            replacement = jnp.argmax(jnp.where(requested, -1.0, noise)).astype(jnp.int32)
            # every shelf requested (rware raises here): the delivered shelf stays requested
            replacement = jnp.where(jnp.all(requested), shelf, replacement)
            forced = draws[jnp.minimum(deliveries, draws.shape[0] - 1)]
            replacement = jnp.where(forced >= 0, forced, replacement)
            queue = jnp.where(delivered & slot_hit, replacement, queue)
            deliveries = deliveries + delivered
            # rware indexes with (robot id - 1): an empty goal cell would credit the last robot
            robot = (agents[goal[1], goal[0]] - 1) % n
            if self.reward_type == "global":
                reward = reward + jnp.where(delivered, 1.0, 0.0)
            else:
                bonus = 1.0 if self.reward_type == "individual" else 0.5
                reward = reward + jnp.where(delivered & (robots == robot), bonus, 0.0)
                if self.reward_type == "two_stage":
                    has_delivered = has_delivered | (delivered & (robots == robot))
        new_state = RobotWarehouseState(
            agent_pos=pos, agent_dir=facing, carried=carried, has_delivered=has_delivered,
            message=plan["message"].astype(jnp.int32), shelf_pos=shelf_pos, request_queue=queue,
            step=state.step + 1,
            inactive_steps=jnp.where(deliveries > 0, 0, state.inactive_steps + 1),
        )
        return new_state, reward, deliveries

    def transition_one(self, key: Array, state: RobotWarehouseState, actions: dict[str, Array]
                       ) -> tuple[RobotWarehouseState, Array, Array]:
        """One env's step (``actions["agents"]`` is ``int[n]`` or ``int[n, 1 + msg_bits]``): the state,
        ``float32[n]`` rewards and the number of deliveries."""
        return self.transition_with_draws(key, state, actions, jnp.full((len(self.goals),), -1, jnp.int32))

    def transition_with_draws(self, key: Array, state: RobotWarehouseState, actions: dict[str, Array],
                              draws: Array) -> tuple[RobotWarehouseState, Array, Array]:
        """``transition_one`` whose ``k``-th delivery takes ``draws[k]`` (``int32[num_goals]``, -1: its own
        draw) as the replacement request: how a parity test replays the reference's numpy draws."""
        plan = self._plan_one(state, actions["agents"])
        order = plan["graph_order"] if self.num_robots < 4 else jax.lax.cond(
            plan["needs_hash_order"], self._hash_order, lambda p: p["graph_order"], plan)
        return self._finish_one(key, state, plan, order, draws)

    # ------------------------------------------------------------------------------- observations
    def _timestep(self, state: RobotWarehouseState, reward: Array, deliveries: Array,
                  params: RobotWarehouseParams) -> TimeStep:
        n, num_envs = self.num_robots, state.step.shape[0]
        obs = jax.vmap(self.observe, in_axes=-1, out_axes=-1)(state)
        inactive = (params.max_inactivity_steps > 0) & (state.inactive_steps >= params.max_inactivity_steps)
        truncated = (state.step >= params.max_steps) & ~inactive
        action_mask = ({"agents": jnp.ones((n, NUM_ACTIONS, num_envs), bool)} if self.msg_bits == 0 else {})
        return TimeStep(
            obs={"agents": obs},
            reward={"agents": reward.astype(jnp.float32)},
            terminated={"agents": jnp.broadcast_to(inactive, (n, num_envs))},
            truncated={"agents": jnp.broadcast_to(truncated, (n, num_envs))},
            action_mask=action_mask,
            info={"deliveries": deliveries.astype(jnp.int32)},
        )

    def observe(self, state: RobotWarehouseState) -> Array:
        """Every robot's observation of one env, ``float32[n, *obs_shape]``."""
        if self.observation_type in ("flattened", "dict"):
            return self._vector_observation(state)
        image = self._image_observation(state)
        if self.observation_type == "image":
            return image
        features = jnp.concatenate([jax.nn.one_hot(state.agent_dir, 4, dtype=jnp.float32),
                                    self._on_highway(state)[:, None],
                                    (state.carried >= 0).astype(jnp.float32)[:, None]], axis=1)
        return jnp.concatenate([features, image.reshape(self.num_robots, -1)], axis=1)

    def _on_highway(self, state: RobotWarehouseState) -> Array:
        highway = jnp.asarray(self.highway, jnp.float32)
        return highway[state.agent_pos[:, 1], state.agent_pos[:, 0]]

    def _requested(self, state: RobotWarehouseState) -> Array:
        return jnp.zeros((self.num_shelves,), bool).at[state.request_queue].set(True)

    def _vector_observation(self, state: RobotWarehouseState) -> Array:
        """``float32[n, 8 + window**2 * (7 + msg_bits)]``: own ``[x, y, carrying, facing one-hot (up, down,
        left, right), on highway]``, then per window cell (row-major) ``[has robot, its facing one-hot,
        its message, has shelf, shelf requested]``; an empty or off-map cell reads facing "up"."""
        n, r, bits = self.num_robots, self.sensor_range, self.msg_bits
        pos = state.agent_pos
        x, y = pos[:, 0], pos[:, 1]
        if self.normalised_coordinates and self.observation_type == "dict":  # the dict casts to int32
            own_x = (x == self.width - 1).astype(jnp.float32)
            own_y = (y == self.height - 1).astype(jnp.float32)
        elif self.normalised_coordinates:
            own_x, own_y = jnp.asarray(self.normalised_x)[x], jnp.asarray(self.normalised_y)[y]
        else:
            own_x, own_y = x.astype(jnp.float32), y.astype(jnp.float32)
        facing = jax.nn.one_hot(state.agent_dir, 4, dtype=jnp.float32)
        own = jnp.concatenate([own_x[:, None], own_y[:, None], (state.carried >= 0)[:, None], facing,
                               self._on_highway(state)[:, None]], axis=1)
        # per-cell features on the grid padded by r: empty cells read [0, 1, 0, 0, 0, 0..., 0, 0]
        features = 7 + bits
        empty = np.zeros((features,), np.float32)
        empty[1] = 1.0
        grid = jnp.broadcast_to(jnp.asarray(empty), (self.height + 2 * r, self.width + 2 * r, features))
        robot_cells = jnp.concatenate([jnp.ones((n, 1), jnp.float32), facing,
                                       state.message.astype(jnp.float32).reshape(n, bits),
                                       jnp.zeros((n, 2), jnp.float32)], axis=1)
        grid = grid.at[y + r, x + r, : 5 + bits].set(robot_cells[:, : 5 + bits])
        shelf_cells = jnp.stack([jnp.ones((self.num_shelves,), jnp.float32),
                                 self._requested(state).astype(jnp.float32)], axis=1)
        grid = grid.at[state.shelf_pos[:, 1] + r, state.shelf_pos[:, 0] + r, 5 + bits:].set(shelf_cells)
        side = self.window
        windows = jax.vmap(lambda at: jax.lax.dynamic_slice(grid, (at[1], at[0], 0), (side, side, features)))(
            pos)
        return jnp.concatenate([own, windows.reshape(n, -1)], axis=1)

    def global_layers(self, state: RobotWarehouseState) -> Array:
        """``float32[layers, H, W]``: the image layers of one env, before padding and cropping."""
        height, width = self.height, self.width
        pos = state.agent_pos
        zeros = jnp.zeros((height, width), jnp.float32)
        layers = []
        for layer in self.image_observation_layers:
            if layer == "shelves":
                layers.append(zeros.at[state.shelf_pos[:, 1], state.shelf_pos[:, 0]].set(1.0))
            elif layer == "requests":
                queued = state.shelf_pos[state.request_queue]
                layers.append(zeros.at[queued[:, 1], queued[:, 0]].set(1.0))
            elif layer == "agents":
                layers.append(zeros.at[pos[:, 1], pos[:, 0]].set(1.0))
            elif layer == "agent_direction":  # rware writes at [x, y]: transposed (off-grid writes dropped)
                layers.append(zeros.at[pos[:, 0], pos[:, 1]].set((state.agent_dir + 1).astype(jnp.float32),
                                                                 mode="drop"))
            elif layer == "agent_load":
                load = (state.carried >= 0).astype(jnp.float32)
                layers.append(zeros.at[pos[:, 0], pos[:, 1]].max(load, mode="drop"))
            elif layer == "goals":
                goals = np.zeros((height, width), np.float32)
                goals[self.goals[:, 1], self.goals[:, 0]] = 1.0
                layers.append(jnp.asarray(goals))
            else:  # accessible
                layers.append(jnp.ones((height, width), jnp.float32).at[pos[:, 1], pos[:, 0]].set(0.0))
        return jnp.stack(layers)

    def _image_observation(self, state: RobotWarehouseState) -> Array:
        """``float32[n, layers, window, window]``: each robot's square of the zero-padded layers, rotated
        (with ``image_observation_directional``) so that it faces up."""
        r, side = self.sensor_range, self.window
        padded = jnp.pad(self.global_layers(state), ((0, 0), (r, r), (r, r)))
        num_layers = padded.shape[0]

        def view(at: Array, facing: Array) -> Array:
            square = jax.lax.dynamic_slice(padded, (0, at[1], at[0]), (num_layers, side, side))
            if not self.image_observation_directional:
                return square
            turns = [square, jnp.rot90(square, 2, axes=(1, 2)), jnp.rot90(square, 3, axes=(1, 2)),
                     jnp.rot90(square, 1, axes=(1, 2))]  # up, down, left, right
            return jnp.stack(turns)[facing]

        return jax.vmap(view)(state.agent_pos, state.agent_dir)

    # ------------------------------------------------------------------------------------- render
    def render(self, state: RobotWarehouseState, params: EnvParams | None = None) -> Array:
        """``uint8[H * 16, W * 16, 3]`` of one env: highways, goals, shelves (requested ones highlighted),
        robots with a notch on the side they face, a carried shelf as a frame around its robot."""
        return render_warehouse(self.highway, self.goals, state.agent_pos, state.agent_dir, state.carried,
                                state.shelf_pos, self._requested(state))

    def replace(self, state: RobotWarehouseState, **changes: Any) -> RobotWarehouseState:
        """``state`` with some fields replaced (a convenience for tests and injection)."""
        return dataclasses.replace(state, **changes)


def _set_table(bits: Array, count: Array) -> Array:
    """CPython's set table after adding ``count`` elements (``bits[:count]``, each with its hash bits per
    probe round, ``int32[M, HASH_ROUNDS]``) in order: ``int32[128]`` of element indices by slot (-1 empty).
    The table grows at the fills CPython grows it (5 -> 32 slots, 19 -> 128), re-adding in slot order."""
    segments = []  # (first, end, mask, mask after growing at the end or None)
    mask, first = 7, 0
    for index in range(bits.shape[0]):
        fill = index + 1
        if fill * 5 >= mask * 3:
            new_size = 8
            while new_size <= fill * 4:
                new_size <<= 1
            segments.append((first, fill, mask, new_size - 1))
            mask, first = new_size - 1, fill
    segments.append((first, bits.shape[0], mask, None))
    table = jnp.full((128,), -1, jnp.int32)
    for first, end, mask, grown_mask in segments:
        def add(index: Array, table: Array, mask: int = mask) -> Array:
            slot = _probe(table, mask, bits[index])
            return jnp.where(index < count, table.at[slot].set(index), table)

        table = jax.lax.fori_loop(first, end, add, table)
        if grown_mask is not None:
            grown = jax.lax.fori_loop(0, mask + 1, functools.partial(_re_add, table, bits, grown_mask),
                                      jnp.full((128,), -1, jnp.int32))
            table = jnp.where(count >= end, grown, table)
    return table


def _re_add(old: Array, bits: Array, mask: int, old_slot: Array, grown: Array) -> Array:
    """Growing a set table: the element in ``old``'s slot ``old_slot`` (if any) added to ``grown``."""
    element = old[old_slot]
    slot = _probe(grown, mask, bits[jnp.maximum(element, 0)])
    return jnp.where(element >= 0, grown.at[slot].set(element), grown)


def _probe(table: Array, mask: int, bits: Array) -> Array:
    """The slot CPython's set gives a new element (hash bits ``bits``) in ``table`` of ``mask + 1`` slots:
    up to ``LINEAR_PROBES`` following slots when they fit, then the perturbed jump."""
    offsets = jnp.arange(LINEAR_PROBES + 1)

    def searching(carry: tuple[Array, Array, Array, Array]) -> Array:
        return ~carry[2]

    def probe(carry: tuple[Array, Array, Array, Array]) -> tuple[Array, Array, Array, Array]:
        start, rounds, _, slot = carry
        allowed = (offsets == 0) | (start + LINEAR_PROBES <= mask)
        empty = allowed & (table[jnp.minimum(start + offsets, 127)] < 0)
        found = jnp.any(empty)
        rounds_next = jnp.minimum(rounds + 1, HASH_ROUNDS - 1)
        jump = (start * 5 + 1 + bits[rounds_next]) & mask
        return (jnp.where(found, start, jump), jnp.where(found, rounds, rounds_next), found,
                jnp.where(found, start + jnp.argmax(empty), slot))

    init = (bits[0] & mask, jnp.array(0, jnp.int32), jnp.array(False), jnp.array(0, jnp.int32))
    return jax.lax.while_loop(searching, probe, init)[3]
