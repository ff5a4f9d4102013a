"""``MPEEnv``: the shared machinery of every particle-world scenario, batch-minor.

A scenario declares its entities (``AgentSpec`` and ``LandmarkSpec``, agents first, in mpe2's order)
and implements three hooks on batch-minor arrays (env batch last):

- ``reset_world(keys, params) -> (pos [E, 2, B], extra)``: initial positions and any scenario state
  (goal indices and the like, each array ending in ``B``);
- ``observe(state, params) -> {group: [n, obs_dim, B]}``;
- ``rewards(state, params) -> {group: [n, B]}``, computed after the physics step, as mpe2 does.

Scenarios with logic between the physics and the rewards (mpe2's ``post_step``, e.g. collect_treasure's
pickups and respawns) override ``post_step(keys, state, params)``; ``keys`` are the step's per-env keys.

Everything else follows mpe2's ``SimpleEnv``: action decoding (movement ``a % 5`` and communication
``a // 5`` for discrete actions; ``[move(5), comm(dim_c)]`` for continuous ones, clipped to
``[0, 1]``), per-agent ``accel`` (``params.accel`` when unset), the physics in ``physics.py``,
communication state (one-hot for discrete, the raw values for continuous, zeros when silent) and
truncation at ``params.max_steps``.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.accelerated import barrier_off_cpu
from jaxmarl_suite.core.env import BatchNativeEnv
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.core.types import GroupDict, TimeStep

from .physics import (
    EntityTable,
    MPEParams,
    MPEState,
    continuous_move,
    discrete_move,
    pairwise_distance,
    world_step,
)
from .rendering import draw_comm_strip, render_world

Array = jax.Array

NUM_MOVES = 5


def split_keys(keys: Array, num: int) -> list[Array]:
    """``num`` independent ``[B]`` key batches, env ``i``'s drawn from ``keys[i]`` only."""
    split = jax.vmap(lambda key: jax.random.split(key, num))(keys)
    return [split[:, i] for i in range(num)]


def _apart_on_gpu(pos: Array, vel: Array) -> tuple[Array, Array]:
    """``(pos, vel)`` unchanged, behind an optimisation barrier where the program is compiled for anything
    but the CPU (measured for a GPU).

    XLA's GPU compiler fuses the physics with the transpose that batch-first observations need, and a
    fusion that transposes cannot write the loop-carried positions and velocities in place, so a rollout
    copied both every step. The barrier keeps the physics its own elementwise fusion (MPE spread's
    auto-reset step at 4,096 envs, compiled for an H200: 21 kernels, 19 with it; its IPPO rollout step at
    1,024 envs: 34, 33). The CPU program does not get it and is the same as without.
    """
    return barrier_off_cpu((pos, vel))


def require_ints(*checks: tuple[str, Any, int]) -> None:
    """Raise ValueError unless each ``(name, value, low)`` has an int ``value >= low`` (bools refused)."""
    for name, value, low in checks:
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


@dataclass(frozen=True)
class AgentSpec:
    """Static properties of one agent (mpe2's ``Agent`` defaults)."""

    name: str
    group: str
    size: float = 0.05
    movable: bool = True
    collide: bool = True
    silent: bool = False
    accel: float | None = None
    """Force per unit move; None uses ``params.accel`` (mpe2's default sensitivity 5.0)."""
    max_speed: float | None = None
    mass: float = 1.0
    color: tuple[float, float, float] = (0.25, 0.25, 0.25)


@dataclass(frozen=True)
class LandmarkSpec:
    """Static properties of one landmark (mpe2's ``Landmark`` defaults)."""

    name: str
    size: float = 0.05
    movable: bool = False
    collide: bool = True
    max_speed: float | None = None
    mass: float = 1.0
    color: tuple[float, float, float] = (0.25, 0.25, 0.25)


class MPEEnv(BatchNativeEnv):
    """Base of every MPE scenario. Subclasses call ``super().__init__`` and implement the three hooks."""

    reference: str | None = None
    render_fps: int = 10
    """mpe2's ``metadata["render_fps"]``; one step is ``dt = 0.1`` s, so 10 fps plays in real time."""
    episodes_end_together: bool = True
    """Every episode lasts ``max_steps`` (scenarios that can end early say otherwise)."""
    all_actions_legal: bool = True
    """MPE has no illegal actions: its action masks are all True."""

    def __init__(
        self,
        agents: Sequence[AgentSpec],
        landmarks: Sequence[LandmarkSpec],
        params: MPEParams,
        dim_c: int = 2,
        continuous_actions: bool = False,
    ) -> None:
        if not agents:
            raise ValueError("a particle world needs at least one agent")
        self.agent_specs = tuple(agents)
        self.landmark_specs = tuple(landmarks)
        self.dim_c = int(dim_c)
        self.continuous_actions = bool(continuous_actions)
        self._params = params
        groups: dict[str, list[str]] = {}
        for previous, spec in zip((None, *self.agent_specs), self.agent_specs, strict=False):
            # Groups are slices of the agent axis, so each group's agents must be adjacent.
            if spec.group in groups and previous is not None and previous.group != spec.group:
                raise ValueError(f"agents of group {spec.group!r} must be contiguous")
            groups.setdefault(spec.group, []).append(spec.name)
        self.groups = {group: tuple(names) for group, names in groups.items()}
        self._group_slices: dict[str, slice] = {}
        start = 0
        for group, names in self.groups.items():
            self._group_slices[group] = slice(start, start + len(names))
            members = self.agent_specs[start : start + len(names)]
            if len({(m.movable, m.silent) for m in members}) != 1:
                raise ValueError(f"agents of group {group!r} must agree on movable and silent")
            start += len(names)
        entities: list[AgentSpec | LandmarkSpec] = [*self.agent_specs, *self.landmark_specs]
        self.entities = EntityTable(
            size=np.array([e.size for e in entities], np.float32),
            movable=np.array([e.movable for e in entities], bool),
            collide=np.array([e.collide for e in entities], bool),
            mass=np.array([e.mass for e in entities], np.float32),
            max_speed=np.array([np.inf if e.max_speed is None else e.max_speed for e in entities], "float32"),
        )
        self.colors = np.array([e.color for e in entities], np.float32)
        self._obs_dims = self._infer_obs_dims()

    # ----------------------------------------------------------------------------------------------
    # Scenario hooks

    @abc.abstractmethod
    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Initial ``pos [E, 2, B]`` and scenario ``extra`` state; env ``i`` draws from ``keys[i]``."""

    @abc.abstractmethod
    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Observations ``{group: [n, obs_dim, B]}`` of the current state."""

    @abc.abstractmethod
    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Rewards ``{group: [n, B]}`` after the physics step."""

    # ----------------------------------------------------------------------------------------------
    # Helpers for scenarios

    @property
    def num_agents_total(self) -> int:
        """Number of agents (entities ``0 .. N-1``)."""
        return len(self.agent_specs)

    def agent_pos(self, state: MPEState) -> Array:
        """``[N, 2, B]`` agent positions."""
        return state.pos[: self.num_agents_total]

    def landmark_pos(self, state: MPEState) -> Array:
        """``[L, 2, B]`` landmark positions."""
        return state.pos[self.num_agents_total :]

    def agents_touching(self, state: MPEState, rows: slice, cols: slice) -> Array:
        """``[I, J, B]``: agents ``rows[i]`` and ``cols[j]`` overlap (closer than their summed sizes)."""
        agent_pos = self.agent_pos(state)
        size = self.entities.size[: self.num_agents_total]
        reach = size[rows][:, None] + size[cols][None, :]
        return pairwise_distance(agent_pos[rows], agent_pos[cols]) < reach[:, :, None]

    def group_rows(self, group: str) -> slice:
        """Rows of ``group``'s agents among all agents."""
        return self._group_slices[group]

    @staticmethod
    def uniform_positions(keys: Array, count: int, low: float, high: float) -> Array:
        """``[count, 2, B]`` positions uniform in ``[low, high]^2``, env ``i`` from ``keys[i]``."""
        draw = jax.vmap(lambda k: jax.random.uniform(k, (count, 2), jnp.float32, low, high))(keys)
        return jnp.moveaxis(draw, 0, -1)

    # ----------------------------------------------------------------------------------------------
    # API

    @property
    def default_params(self) -> MPEParams:
        """Defaults from the constructor arguments and mpe2's world constants."""
        return self._params

    def _check_group(self, group: str) -> None:
        if group not in self.groups:
            raise KeyError(f"unknown group {group!r}; this env has {list(self.groups)}")

    def observation_space(self, group: str) -> Space:
        """``Box(-inf, inf, (obs_dim,))`` for the group."""
        self._check_group(group)
        return Box(-np.inf, np.inf, (self._obs_dims[group],))

    def _spec(self, group: str) -> AgentSpec:
        return self.agent_specs[self._group_slices[group].start]

    def action_space(self, group: str) -> Space:
        """mpe2's action space: movement (5) and/or communication (``dim_c``), discrete or continuous."""
        self._check_group(group)
        spec = self._spec(group)
        if self.continuous_actions:
            size = (NUM_MOVES if spec.movable else 0) + (0 if spec.silent else self.dim_c)
            return Box(0.0, 1.0, (size,))
        size = NUM_MOVES if spec.movable else 1
        if not spec.silent:
            size *= self.dim_c
        return Discrete(size)

    def _infer_obs_dims(self) -> dict[str, int]:
        def probe() -> GroupDict:
            keys = jax.random.split(jax.random.PRNGKey(0), 1)
            state = self._initial_state(keys, self._params)
            return self.observe(state, self._params)

        shapes = jax.eval_shape(probe)
        return {group: int(shapes[group].shape[1]) for group in self.groups}

    def _initial_state(self, keys: Array, params: MPEParams) -> MPEState:
        num_envs = keys.shape[0]
        pos, extra = self.reset_world(keys, params)
        return MPEState(
            pos=pos,
            vel=jnp.zeros_like(pos),
            comm=jnp.zeros((self.num_agents_total, self.dim_c, num_envs), jnp.float32),
            step=jnp.zeros((num_envs,), jnp.int32),
            extra=extra,
        )

    def reset_batch(self, keys: Array, params: MPEParams) -> tuple[MPEState, TimeStep]:
        """Reset ``B`` worlds at rest with the scenario's initial positions."""
        state = self._initial_state(keys, params)
        rewards = {g: jnp.zeros((len(n), keys.shape[0]), jnp.float32) for g, n in self.groups.items()}
        return state, self._timestep(state, rewards, params)

    def _decode(self, actions: GroupDict) -> tuple[Array, Array]:
        """Actions by group -> unit moves ``[N, 2, B]`` and communication ``[N, dim_c, B]``."""
        moves, comms = [], []
        for group, names in self.groups.items():
            spec, action = self._spec(group), actions[group]
            num_envs = action.shape[-1]
            zeros_move = jnp.zeros((len(names), 2, num_envs), jnp.float32)
            zeros_comm = jnp.zeros((len(names), self.dim_c, num_envs), jnp.float32)
            if self.continuous_actions:
                action = jnp.clip(action, 0.0, 1.0)
                move_part = action[:, :NUM_MOVES] if spec.movable else None
                comm_part = action[:, NUM_MOVES:] if spec.movable else action
                moves.append(continuous_move(move_part) if move_part is not None else zeros_move)
                comms.append(zeros_comm if spec.silent else comm_part)
            else:
                move_index = action % NUM_MOVES if spec.movable else None
                comm_index = action // NUM_MOVES if spec.movable else action
                moves.append(discrete_move(move_index) if move_index is not None else zeros_move)
                one_hot = jax.nn.one_hot(comm_index, self.dim_c, axis=1, dtype=jnp.float32)
                comms.append(zeros_comm if spec.silent else one_hot)
        return jnp.concatenate(moves), jnp.concatenate(comms)

    def _accel(self, params: MPEParams) -> Array | float:
        values = [spec.accel for spec in self.agent_specs]
        if all(v is None for v in values):
            return params.accel
        filled = [params.accel if v is None else v for v in values]
        return jnp.asarray(filled, jnp.float32)[:, None, None]

    def step_batch(
        self, keys: Array, state: MPEState, actions: GroupDict, params: MPEParams
    ) -> tuple[MPEState, TimeStep]:
        """One mpe2 step: physics, communication update, rewards, truncation at ``params.max_steps``."""
        move, comm = self._decode(actions)
        pos, vel = _apart_on_gpu(*world_step(state, move, self.entities, params, self._accel(params)))
        state = dataclasses.replace(state, pos=pos, vel=vel, comm=comm, step=state.step + 1)
        state = self.post_step(keys, state, params)
        return state, self._timestep(state, self.rewards(state, params), params)

    def post_step(self, keys: Array, state: MPEState, params: MPEParams) -> MPEState:
        """Scenario logic after physics and before rewards (mpe2's ``post_step``); identity by default.

        ``keys`` are the step's per-env keys, for scenarios that draw mid-episode (respawns).
        """
        del keys, params
        return state

    def _timestep(self, state: MPEState, rewards: GroupDict, params: MPEParams) -> TimeStep:
        num_envs = state.step.shape[0]
        truncated = state.step >= params.max_steps
        obs = self.observe(state, params)
        action_mask = {}
        for group, names in self.groups.items():
            space = self.action_space(group)
            if isinstance(space, Discrete):
                action_mask[group] = jnp.ones((len(names), space.n, num_envs), bool)
        return TimeStep(
            obs=obs,
            reward={g: rewards[g].astype(jnp.float32) for g in self.groups},
            terminated={g: jnp.zeros((len(n), num_envs), bool) for g, n in self.groups.items()},
            truncated={g: jnp.broadcast_to(truncated, (len(n), num_envs)) for g, n in self.groups.items()},
            action_mask=action_mask,
            info={},
        )

    def entity_colors(self, state: MPEState) -> Any:
        """Colours used by ``render`` (static by default; scenarios with goal colours may override)."""
        del state
        return self.colors

    def render(self, state: MPEState, params: MPEParams | None = None) -> Array:
        """``uint8[256, 256, 3]`` frame of one env in mpe2's look; speaking agents' messages as cells."""
        colors = self.entity_colors(state)
        frame = render_world(state.pos, self.entities.size, colors)
        speakers = np.array([i for i, spec in enumerate(self.agent_specs) if not spec.silent], np.int32)
        return draw_comm_strip(frame, state.comm, speakers, self.colors)
