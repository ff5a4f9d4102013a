"""simple_reference: two agents each guide the other to a landmark (mpe2's ``simple_reference_v3``).

Two agents and three coloured landmarks. Agent ``i`` knows a goal landmark ``goal[i]`` that the *other*
agent must reach, which only agent ``i`` can see; both agents move and say one of ``dim_c = 10`` words.

Observation of agent ``i`` ``[21]`` (mpe2's order): own velocity (2), each landmark's position relative
to the agent (2 per landmark), the colour of landmark ``goal[i]`` (3), the other agent's
communication (10).

Actions: ``Discrete(50)``, decoded as movement ``a % 5`` (no-op, left, right, down, up) and word
``a // 5``; or ``Box(0, 1, (15,))``: movement (5) then the raw message (10).

Reward: ``local[i] = -|pos[other] - landmark[goal[i]]|`` (Euclidean); ``global = mean(local)``;
agent ``i`` gets ``(1 - local_ratio) * global + local_ratio * local[i]``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv
from .physics import MPEParams, MPEState

Array = jax.Array

NUM_AGENTS = 2
NUM_LANDMARKS = 3
COMM_DIM = 10
AGENT_COLOR = (0.25, 0.25, 0.25)
LANDMARK_COLORS = ((0.75, 0.25, 0.25), (0.25, 0.75, 0.25), (0.25, 0.25, 0.75))


@struct.dataclass
class SimpleReferenceParams(MPEParams):
    """Physics constants plus the weight of the local reward."""

    local_ratio: float = 0.5
    """Weight of the agent's own (local) reward; the mean over agents (global) gets ``1 - local_ratio``."""


class SimpleReference(MPEEnv):
    """Cooperative referring. One group, ``agents``: ``agent_0`` and ``agent_1``.

    ``state.extra["goal"]`` (int32 ``[2, B]``): ``goal[i]`` is the landmark agent ``i`` wants the other
    agent to reach (mpe2's ``agents[i].goal_b``).
    """

    reference = "mpe2.simple_reference_v3"

    def __init__(
        self, local_ratio: float = 0.5, max_cycles: int = 25, continuous_actions: bool = False
    ) -> None:
        if not 0.0 <= float(local_ratio) <= 1.0:
            raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio!r}")
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
        self._landmark_colors = np.array(LANDMARK_COLORS, np.float32)
        super().__init__(
            agents=[
                AgentSpec(f"agent_{i}", "agents", collide=False, color=AGENT_COLOR) for i in range(NUM_AGENTS)
            ],
            landmarks=[
                LandmarkSpec(f"landmark {i}", collide=False, color=color)
                for i, color in enumerate(LANDMARK_COLORS)
            ],
            params=SimpleReferenceParams(max_steps=max_cycles, local_ratio=float(local_ratio)),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Each agent's goal uniform over the landmarks; every entity uniform in ``[-1, 1]^2``."""

        def draw(key: Array) -> tuple[Array, Array]:
            goal_key, pos_key = jax.random.split(key)
            goal = jax.random.randint(goal_key, (NUM_AGENTS,), 0, NUM_LANDMARKS, jnp.int32)
            pos = jax.random.uniform(pos_key, (self.entities.num_entities, 2), jnp.float32, -1.0, 1.0)
            return pos, goal

        pos, goal = jax.vmap(draw)(keys)
        return jnp.moveaxis(pos, 0, -1), {"goal": jnp.moveaxis(goal, 0, -1)}

    def _goal_one_hot(self, state: MPEState) -> Array:
        """``[2, L, B]``: selecting by a weighted sum is exact and avoids a gather."""
        return jax.nn.one_hot(state.extra["goal"], NUM_LANDMARKS, axis=1, dtype=jnp.float32)

    @staticmethod
    def _other(x: Array) -> Array:
        """Rows swapped: for each agent, the other agent's row."""
        return jnp.concatenate([x[1:2], x[0:1]])

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Distance of the other agent to one's goal, mixed with the mean over agents by ``local_ratio``."""
        assert isinstance(params, SimpleReferenceParams)
        goal_pos = jnp.sum(self._goal_one_hot(state)[:, :, None] * self.landmark_pos(state)[None], axis=1)
        delta = self._other(self.agent_pos(state)) - goal_pos  # [2, 2, B]
        local_reward = -jnp.sqrt(jnp.sum(delta * delta, axis=1))  # [2, B]
        global_reward = jnp.mean(local_reward, axis=0, keepdims=True)
        return {"agents": (1.0 - params.local_ratio) * global_reward + params.local_ratio * local_reward}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order (see the module docstring)."""
        num_envs = state.step.shape[0]
        agent_pos = self.agent_pos(state)
        landmark_rel = self.landmark_pos(state)[None] - agent_pos[:, None]  # [2, L, 2, B]
        colors = self._landmark_colors[None, :, :, None]
        goal_color = jnp.sum(self._goal_one_hot(state)[:, :, None] * colors, axis=1)  # [2, 3, B]
        obs = jnp.concatenate(
            [
                state.vel[:NUM_AGENTS],
                landmark_rel.reshape(NUM_AGENTS, -1, num_envs),
                goal_color,
                self._other(state.comm),
            ],
            axis=1,
        )
        return {"agents": obs}

    def entity_colors(self, state: MPEState) -> Array:
        """mpe2's colours: each agent wears the colour of the goal the other agent holds for it."""
        goal = jax.nn.one_hot(state.extra["goal"], NUM_LANDMARKS, dtype=jnp.float32)  # [2, L]
        agents = self._other(goal @ self._landmark_colors)
        return jnp.concatenate([agents, jnp.asarray(self.colors[NUM_AGENTS:])])
