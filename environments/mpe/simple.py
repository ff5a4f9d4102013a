"""simple: one agent moves to one landmark (mpe2's ``simple_v3``), a debugging scenario.

One silent agent (``agent_0``, size 0.05) and one landmark (``landmark 0``, size 0.05); nothing collides
and the world has no communication channel (``dim_c = 0``).

Observation ``[4]`` (mpe2's order): own velocity (2), the landmark's position relative to the agent (2).
Actions: ``Discrete(5)`` (no-op, left, right, down, up) or ``Box(0, 1, (5,))``.
Reward: minus the *squared* distance from the agent to the landmark.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv
from .physics import MPEParams, MPEState

Array = jax.Array

AGENT_COLOR = (0.25, 0.25, 0.25)
LANDMARK_COLOR = (0.75, 0.25, 0.25)


class Simple(MPEEnv):
    """Single-agent navigation. One group, ``agents``, holding ``agent_0``."""

    reference = "mpe2.simple_v3"

    def __init__(self, max_cycles: int = 25, continuous_actions: bool = False) -> None:
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
        super().__init__(
            agents=[AgentSpec("agent_0", "agents", collide=False, silent=True, color=AGENT_COLOR)],
            landmarks=[LandmarkSpec("landmark 0", collide=False, color=LANDMARK_COLOR)],
            params=MPEParams(max_steps=max_cycles),
            dim_c=0,
            continuous_actions=continuous_actions,
        )

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """The agent and the landmark uniform in ``[-1, 1]^2``."""
        return self.uniform_positions(keys, self.entities.num_entities, -1.0, 1.0), {}

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """``-|agent - landmark|^2`` (squared, unlike most scenarios)."""
        delta = state.pos[0:1] - state.pos[1:2]  # [1, 2, B]
        return {"agents": -jnp.sum(delta * delta, axis=1)}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Own velocity, then the landmark relative to the agent."""
        return {"agents": jnp.concatenate([state.vel[0:1], state.pos[1:2] - state.pos[0:1]], axis=1)}
