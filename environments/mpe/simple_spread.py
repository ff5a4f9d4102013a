"""simple_spread: N agents cover N landmarks without colliding (mpe2's ``simple_spread_v3``).

Observation of agent ``i`` (mpe2's order): own velocity (2), own position (2), each landmark's
position relative to the agent (2 per landmark), each other agent's relative position (2 per other
agent, in index order), each other agent's communication (2 per other agent; always zero, agents are
silent). Reward: ``(1 - local_ratio) * global + local_ratio * local``, with
``global = -sum over landmarks of the distance to the nearest agent`` and
``local = -collision_penalty * (number of other agents in contact)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv
from .physics import (
    MPEParams,
    MPEState,
    others_index,
    pairwise_distance,
)

Array = jax.Array

AGENT_SIZE = 0.15
LANDMARK_SIZE = 0.05
COMM_DIM = 2
AGENT_COLOR = (0.35, 0.35, 0.85)
LANDMARK_COLOR = (0.25, 0.25, 0.25)


@struct.dataclass
class SimpleSpreadParams(MPEParams):
    """Physics constants plus simple_spread's reward weights."""

    local_ratio: float = 0.5
    """Weight of the local (collision) reward; the global (coverage) reward gets ``1 - local_ratio``."""
    collision_penalty: float = 1.0
    """Local reward lost per other agent in contact."""


class SimpleSpread(MPEEnv):
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
        self._others = others_index(num_agents)
        super().__init__(
            agents=[
                AgentSpec(f"agent_{i}", "agents", size=AGENT_SIZE, silent=True, color=AGENT_COLOR)
                for i in range(num_agents)
            ],
            landmarks=[
                LandmarkSpec(f"landmark {i}", size=LANDMARK_SIZE, collide=False, color=LANDMARK_COLOR)
                for i in range(num_landmarks)
            ],
            params=SimpleSpreadParams(max_steps=max_cycles, local_ratio=float(local_ratio)),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    @property
    def n_agents(self) -> int:
        """Number of agents (also ``num_agents``)."""
        return self.num_agents_total

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Agents and landmarks uniform in ``[-1, 1]^2``."""
        return self.uniform_positions(keys, self.entities.num_entities, -1.0, 1.0), {}

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Coverage (shared) and collision (local) rewards mixed by ``local_ratio``."""
        assert isinstance(params, SimpleSpreadParams)
        num_agents = self.n_agents
        agent_pos = self.agent_pos(state)
        to_landmarks = pairwise_distance(self.landmark_pos(state), agent_pos)  # [L, N, B]
        global_reward = -jnp.sum(jnp.min(to_landmarks, axis=1), axis=0)  # [B]
        between = pairwise_distance(agent_pos, agent_pos)  # [N, N, B]
        size = self.entities.size[:num_agents]
        not_self = ~np.eye(num_agents, dtype=bool)[:, :, None]
        touching = (between < (size[:, None] + size[None, :])[:, :, None]) & not_self
        local_reward = -params.collision_penalty * jnp.sum(touching, axis=1).astype(jnp.float32)  # [N, B]
        mixed = (1.0 - params.local_ratio) * global_reward[None] + params.local_ratio * local_reward
        return {"agents": mixed}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order (see the module docstring)."""
        num_agents, num_envs = self.n_agents, state.step.shape[0]
        agent_pos = self.agent_pos(state)
        landmark_rel = self.landmark_pos(state)[None] - agent_pos[:, None]  # [N, L, 2, B]
        others = self._others
        other_rel = agent_pos[others] - agent_pos[:, None]  # [N, N-1, 2, B]
        other_comm = state.comm[others]  # [N, N-1, C, B]
        obs = jnp.concatenate(
            [
                state.vel[:num_agents],
                agent_pos,
                landmark_rel.reshape(num_agents, -1, num_envs),
                other_rel.reshape(num_agents, -1, num_envs),
                other_comm.reshape(num_agents, -1, num_envs),
            ],
            axis=1,
        )
        return {"agents": obs}
