"""simple_spread: N agents cover N landmarks without colliding (mpe2's ``simple_spread_v3``).

Observation of agent ``i`` (mpe2's order): own velocity (2), own position (2), each landmark's
position relative to the agent (2 per landmark), each other agent's relative position (2 per other
agent, in index order), each other agent's communication (2 per other agent; always zero, agents are
silent). Reward: ``(1 - local_ratio) * global + local_ratio * local``, with
``global = -sum over landmarks of the distance to the nearest agent`` and
``local = -collision_penalty * (number of other agents in contact)``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import BatchNativeEnv
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.core.types import GroupDict, TimeStep

from .physics import (
    EntityTable,
    MPEParams,
    MPEState,
    continuous_move,
    discrete_move,
    others_index,
    pairwise_distance,
    world_step,
)
from .rendering import render_world

Array = jax.Array

AGENT_SIZE = 0.15
LANDMARK_SIZE = 0.05
COMM_DIM = 2
NUM_MOVES = 5
AGENT_COLOR = (0.35, 0.35, 0.85)
LANDMARK_COLOR = (0.25, 0.25, 0.25)


@struct.dataclass
class SimpleSpreadParams(MPEParams):
    """Physics constants plus simple_spread's reward weights."""

    local_ratio: float = 0.5
    """Weight of the local (collision) reward; the global (coverage) reward gets ``1 - local_ratio``."""
    collision_penalty: float = 1.0
    """Local reward lost per other agent in contact."""


class SimpleSpread(BatchNativeEnv):
    """Cooperative navigation. One group, ``agents``, named ``agent_0 .. agent_{N-1}``."""

    reference = "mpe2.simple_spread_v3"

    def __init__(
        self,
        num_agents: int = 3,
        num_landmarks: int | None = None,
        local_ratio: float = 0.5,
        max_cycles: int = 25,
        continuous_actions: bool = False,
    ) -> None:
        num_landmarks = num_agents if num_landmarks is None else num_landmarks
        if not isinstance(num_agents, int) or num_agents < 2:
            raise ValueError(f"num_agents must be an int >= 2, got {num_agents!r}")
        if not isinstance(num_landmarks, int) or num_landmarks < 1:
            raise ValueError(f"num_landmarks must be an int >= 1, got {num_landmarks!r}")
        if not 0.0 <= float(local_ratio) <= 1.0:
            raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio!r}")
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
        self.num_landmarks = num_landmarks
        self.continuous_actions = bool(continuous_actions)
        self.groups = {"agents": tuple(f"agent_{i}" for i in range(num_agents))}
        self._params = SimpleSpreadParams(max_steps=max_cycles, local_ratio=float(local_ratio))
        num_entities = num_agents + num_landmarks
        is_agent = np.arange(num_entities) < num_agents
        self.entities = EntityTable(
            size=np.where(is_agent, AGENT_SIZE, LANDMARK_SIZE).astype(np.float32),
            movable=is_agent,
            collide=is_agent,
            mass=np.ones(num_entities, np.float32),
            max_speed=np.full(num_entities, np.inf, np.float32),
        )
        self.colors = np.array([AGENT_COLOR] * num_agents + [LANDMARK_COLOR] * num_landmarks, np.float32)
        self._others = others_index(num_agents)
        self.obs_dim = 4 + 2 * num_landmarks + 2 * (num_agents - 1) + COMM_DIM * (num_agents - 1)

    @property
    def default_params(self) -> SimpleSpreadParams:
        """Defaults from the constructor arguments and mpe2's world constants."""
        return self._params

    @property
    def n_agents(self) -> int:
        """Number of agents (also ``num_agents``)."""
        return len(self.groups["agents"])

    def observation_space(self, group: str) -> Space:
        """``Box(-inf, inf, (obs_dim,))``; 18 for the default 3 agents."""
        self._check_group(group)
        return Box(-np.inf, np.inf, (self.obs_dim,))

    def action_space(self, group: str) -> Space:
        """``Discrete(5)`` (no-op, left, right, down, up) or ``Box(0, 1, (5,))`` with continuous actions."""
        self._check_group(group)
        if self.continuous_actions:
            return Box(0.0, 1.0, (NUM_MOVES,))
        return Discrete(NUM_MOVES)

    def _check_group(self, group: str) -> None:
        if group not in self.groups:
            raise KeyError(f"unknown group {group!r}; this env has {list(self.groups)}")

    def reset_batch(self, keys: Array, params: SimpleSpreadParams) -> tuple[MPEState, TimeStep]:
        """Agents and landmarks uniform in ``[-1, 1]^2``, at rest."""
        num_envs = keys.shape[0]
        num_entities = self.entities.num_entities
        pos = jax.vmap(lambda k: jax.random.uniform(k, (num_entities, 2), jnp.float32, -1.0, 1.0))(keys)
        state = MPEState(
            pos=jnp.moveaxis(pos, 0, -1),
            vel=jnp.zeros((num_entities, 2, num_envs), jnp.float32),
            comm=jnp.zeros((self.n_agents, COMM_DIM, num_envs), jnp.float32),
            step=jnp.zeros((num_envs,), jnp.int32),
        )
        zeros = jnp.zeros((self.n_agents, num_envs), jnp.float32)
        return state, self._timestep(state, zeros, params)

    def step_batch(
        self, keys: Array, state: MPEState, actions: GroupDict, params: SimpleSpreadParams
    ) -> tuple[MPEState, TimeStep]:
        """One mpe2 step; the step counter truncates every agent at ``params.max_steps``."""
        action = actions["agents"]
        move = continuous_move(action) if self.continuous_actions else discrete_move(action)
        pos, vel = world_step(state, move, self.entities, params, params.accel)
        state = dataclasses.replace(state, pos=pos, vel=vel, step=state.step + 1)
        return state, self._timestep(state, self._reward(state, params), params)

    def _reward(self, state: MPEState, params: SimpleSpreadParams) -> Array:
        num_agents = self.n_agents
        agent_pos = state.pos[:num_agents]
        to_landmarks = pairwise_distance(state.pos[num_agents:], agent_pos)  # [L, N, B]
        global_reward = -jnp.sum(jnp.min(to_landmarks, axis=1), axis=0)  # [B]
        between = pairwise_distance(agent_pos, agent_pos)  # [N, N, B]
        size = self.entities.size[:num_agents]
        touching = (between < (size[:, None] + size[None, :])[:, :, None]) & ~np.eye(num_agents, dtype=bool)[
            :, :, None
        ]
        local_reward = -params.collision_penalty * jnp.sum(touching, axis=1).astype(jnp.float32)  # [N, B]
        return (1.0 - params.local_ratio) * global_reward[None] + params.local_ratio * local_reward

    def _observe(self, state: MPEState) -> Array:
        num_agents, num_envs = self.n_agents, state.step.shape[0]
        agent_pos = state.pos[:num_agents]
        landmark_rel = state.pos[None, num_agents:] - agent_pos[:, None]  # [N, L, 2, B]
        others = self._others
        other_rel = agent_pos[others] - agent_pos[:, None]  # [N, N-1, 2, B]
        other_comm = state.comm[others]  # [N, N-1, C, B]
        return jnp.concatenate(
            [
                state.vel[:num_agents],
                agent_pos,
                landmark_rel.reshape(num_agents, -1, num_envs),
                other_rel.reshape(num_agents, -1, num_envs),
                other_comm.reshape(num_agents, -1, num_envs),
            ],
            axis=1,
        )

    def _timestep(self, state: MPEState, reward: Array, params: SimpleSpreadParams) -> TimeStep:
        num_agents, num_envs = self.n_agents, state.step.shape[0]
        truncated = jnp.broadcast_to(state.step >= params.max_steps, (num_agents, num_envs))
        action_mask = {}
        if not self.continuous_actions:
            action_mask["agents"] = jnp.ones((num_agents, NUM_MOVES, num_envs), bool)
        return TimeStep(
            obs={"agents": self._observe(state)},
            reward={"agents": reward},
            terminated={"agents": jnp.zeros((num_agents, num_envs), bool)},
            truncated={"agents": truncated},
            action_mask=action_mask,
            info={},
        )

    def render(self, state: MPEState, params: SimpleSpreadParams | None = None) -> Array:
        """``uint8[256, 256, 3]`` frame in mpe2's look: grey landmarks, blue agents, camera fit to all."""
        return render_world(state.pos, self.entities.size, self.colors)
