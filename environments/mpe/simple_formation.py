"""simple_formation: N agents form a circle of radius 0.5 around a landmark (mpe2's ``simple_formation_v1``).

Agents ``agent_0 .. agent_{N-1}`` (size 0.05, colliding, silent) and one landmark ``landmark_0`` (size
0.03, not colliding). Actions are movement only: ``Discrete(5)`` or ``Box(0, 1, (5,))``.

Observation (mpe2's order): own velocity (2), own position (2), the landmark relative to the agent (2).

Reward, shared by every agent, recomputed each step as mpe2 does: the targets are ``N`` points evenly
spaced on the circle of radius ``target_radius`` (0.5) around the landmark, starting at the smallest
angle in ``[0, 2 pi)`` of any agent as seen from the landmark; agents are matched to targets by an
optimal assignment of distances (mpe2 uses scipy's Hungarian solver), and the reward is
``-mean(clip(matched distances, 0, 2))``. With ``terminate_on_success`` the episode terminates once every
matched distance is below 0.05.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .assignment import ShapeParams, ShapeScenario
from .base import AgentSpec, LandmarkSpec
from .physics import MPEParams, MPEState

Array = jax.Array

AGENT_SIZE = 0.05
LANDMARK_SIZE = 0.03
AGENT_COLOR = (0.35, 0.35, 0.85)
LANDMARK_COLOR = (0.25, 0.25, 0.25)


@struct.dataclass
class SimpleFormationParams(ShapeParams):
    """Physics constants, the shape constants and the circle's radius."""

    target_radius: float = 0.5
    """Radius of the circle of targets around the landmark."""


class SimpleFormation(ShapeScenario):
    """Circle formation. One group, ``agents``, named ``agent_0 .. agent_{N-1}``."""

    reference = "mpe2.simple_formation_v1"

    def __init__(
        self,
        num_agents: int = 4,
        max_cycles: int = 25,
        continuous_actions: bool = False,
        terminate_on_success: bool = False,
    ) -> None:
        if not isinstance(num_agents, int) or num_agents < 1:
            raise ValueError(f"num_agents must be an int >= 1, got {num_agents!r}")
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
        super().__init__(
            agents=[
                AgentSpec(f"agent_{i}", "agents", size=AGENT_SIZE, silent=True, color=AGENT_COLOR)
                for i in range(num_agents)
            ],
            landmarks=[LandmarkSpec("landmark_0", size=LANDMARK_SIZE, collide=False, color=LANDMARK_COLOR)],
            params=SimpleFormationParams(
                max_steps=max_cycles, terminate_on_success=bool(terminate_on_success)
            ),
            dim_c=0,
            continuous_actions=continuous_actions,
        )

    @property
    def n_agents(self) -> int:
        """Number of agents (mpe2's ``N``)."""
        return self.num_agents_total

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Agents uniform in ``[-1, 1]^2``, the landmark uniform in ``[-0.5, 0.5]^2``."""
        split = jax.vmap(jax.random.split)(keys)
        agents = self.uniform_positions(split[:, 0], self.num_agents_total, -1.0, 1.0)
        landmark = self.uniform_positions(split[:, 1], 1, -0.5, 0.5)
        return jnp.concatenate([agents, landmark]), {}

    def targets(self, state: MPEState, params: MPEParams) -> Array:
        """The circle's ``N`` points, anchored at the smallest agent angle around the landmark."""
        assert isinstance(params, SimpleFormationParams)
        num_agents = self.num_agents_total
        center = self.landmark_pos(state)[0]  # [2, B]
        relative = self.agent_pos(state) - center[None]
        angle = jnp.arctan2(relative[:, 1], relative[:, 0])  # [N, B]
        angle = jnp.where(angle < 0, angle + 2 * np.pi, angle)
        theta = jnp.min(angle, axis=0)[None] + (2 * np.pi / num_agents) * np.arange(num_agents)[:, None]
        circle = jnp.stack([jnp.cos(theta), jnp.sin(theta)], axis=1)  # [N, 2, B]
        return center[None] + params.target_radius * circle
