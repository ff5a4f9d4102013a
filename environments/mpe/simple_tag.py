"""simple_tag: slow adversaries chase fast good agents among obstacles (mpe2's ``simple_tag_v3``).

Agents, in mpe2's order: ``adversary_0 .. adversary_{A-1}`` (group ``adversaries``; size 0.075, accel 3,
max speed 1.0) then ``agent_0 .. agent_{G-1}`` (group ``agents``; size 0.05, accel 4, max speed 1.3).
Landmarks: ``landmark 0 .. landmark {L-1}``, colliding obstacles of size 0.2. Everyone is silent, so
actions are movement only: ``Discrete(5)`` or ``Box(0, 1, (5,))``.

Observation (mpe2's order): own velocity (2), own position (2), each obstacle relative to the agent
(2 per obstacle), each other agent relative to the agent in index order (2 per other agent), then the
velocity of each *good* other agent (2 each: all ``G`` for an adversary, ``G - 1`` for a good agent).
Default sizes: 16 for adversaries, 14 for good agents.

Reward, with a "collision" when the centres are closer than the sum of the radii:

- every adversary gets ``adversary_collision_reward`` (10) for each (good agent, adversary) pair in
  collision, so the adversaries share one team reward;
- a good agent loses ``agent_collision_penalty`` (10) per adversary touching it, and
  ``boundary_weight * sum over x, y of bound(|coordinate|)``, where ``bound`` is 0 below 0.9, rises
  linearly to 1 at 1.0, then follows ``min(exp(2x - 2), 10)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv, require_ints, split_keys
from .physics import MPEParams, MPEState

Array = jax.Array

ADVERSARY_SIZE = 0.075
GOOD_SIZE = 0.05
OBSTACLE_SIZE = 0.2
ADVERSARY_ACCEL = 3.0
GOOD_ACCEL = 4.0
ADVERSARY_MAX_SPEED = 1.0
GOOD_MAX_SPEED = 1.3
COMM_DIM = 2
ADVERSARY_COLOR = (0.85, 0.35, 0.35)
GOOD_COLOR = (0.35, 0.85, 0.35)
OBSTACLE_COLOR = (0.25, 0.25, 0.25)


@struct.dataclass
class SimpleTagParams(MPEParams):
    """Physics constants plus simple_tag's reward weights."""

    adversary_collision_reward: float = 10.0
    """Reward to every adversary for each (good agent, adversary) pair in collision."""
    agent_collision_penalty: float = 10.0
    """Reward a good agent loses per adversary in collision with it."""
    boundary_weight: float = 1.0
    """Scale of the good agents' penalty for leaving the ``[-0.9, 0.9]^2`` area."""


def drop_diagonal(x: Array) -> Array:
    """``[N, N, ...]`` -> ``[N, N-1, ...]``: row ``i`` without entry ``i``, by reshapes and slices.

    Flattened, the diagonal sits every ``N + 1`` entries from 0; dropping entry 0 leaves the others at
    the end of rows of length ``N + 1``. This avoids the XLA gather of an index table.
    """
    n, rest = x.shape[0], x.shape[2:]
    tail = x.reshape(n * n, *rest)[1:]
    return tail.reshape(n - 1, n + 1, *rest)[:, :n].reshape(n, n - 1, *rest)


def boundary_penalty(pos: Array) -> Array:
    """mpe2's ``sum over x, y of bound(|coordinate|)`` for ``[n, 2, B]`` positions: ``[n, B]``."""
    x = jnp.abs(pos)
    outside = jnp.minimum(jnp.exp(2.0 * x - 2.0), 10.0)
    bound = jnp.where(x < 0.9, 0.0, jnp.where(x < 1.0, (x - 0.9) * 10.0, outside))
    return jnp.sum(bound, axis=1)


class SimpleTag(MPEEnv):
    """Predator-prey. Groups ``adversaries`` (``adversary_i``) and ``agents`` (``agent_i``)."""

    reference = "mpe2.simple_tag_v3"

    def __init__(
        self,
        num_good: int = 1,
        num_adversaries: int = 3,
        num_obstacles: int = 2,
        max_cycles: int = 25,
        continuous_actions: bool = False,
    ) -> None:
        require_ints(
            ("num_good", num_good, 1),
            ("num_adversaries", num_adversaries, 1),
            ("num_obstacles", num_obstacles, 0),
            ("max_cycles", max_cycles, 1),
        )
        self.num_good = num_good
        self.num_adversaries = num_adversaries
        self.num_obstacles = num_obstacles
        adversaries = [
            AgentSpec(
                f"adversary_{i}",
                "adversaries",
                size=ADVERSARY_SIZE,
                silent=True,
                accel=ADVERSARY_ACCEL,
                max_speed=ADVERSARY_MAX_SPEED,
                color=ADVERSARY_COLOR,
            )
            for i in range(num_adversaries)
        ]
        good = [
            AgentSpec(
                f"agent_{i}",
                "agents",
                size=GOOD_SIZE,
                silent=True,
                accel=GOOD_ACCEL,
                max_speed=GOOD_MAX_SPEED,
                color=GOOD_COLOR,
            )
            for i in range(num_good)
        ]
        super().__init__(
            agents=[*adversaries, *good],
            landmarks=[
                LandmarkSpec(f"landmark {i}", size=OBSTACLE_SIZE, color=OBSTACLE_COLOR)
                for i in range(num_obstacles)
            ],
            params=SimpleTagParams(max_steps=max_cycles),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Agents uniform in ``[-1, 1]^2``, obstacles uniform in ``[-0.9, 0.9]^2``."""
        agent_keys, landmark_keys = split_keys(keys, 2)
        agents = self.uniform_positions(agent_keys, self.num_agents_total, -1.0, 1.0)
        obstacles = self.uniform_positions(landmark_keys, self.num_obstacles, -0.9, 0.9)
        return jnp.concatenate([agents, obstacles]), {}

    def _caught(self, state: MPEState) -> Array:
        """``[G, A, B]``: good agent ``g`` and adversary ``a`` are in collision."""
        adversaries = slice(0, self.num_adversaries)
        return self.agents_touching(state, slice(self.num_adversaries, self.num_agents_total), adversaries)

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Shared catch reward for adversaries; catch and boundary penalties for good agents."""
        assert isinstance(params, SimpleTagParams)
        caught = self._caught(state).astype(jnp.float32)
        pairs = jnp.sum(caught, axis=(0, 1))  # [B]
        adversary = params.adversary_collision_reward * pairs
        good_pos = self.agent_pos(state)[self.num_adversaries :]
        good = -params.agent_collision_penalty * jnp.sum(caught, axis=1)
        good = good - params.boundary_weight * boundary_penalty(good_pos)
        return {
            "adversaries": jnp.broadcast_to(adversary, (self.num_adversaries, *adversary.shape)),
            "agents": good,
        }

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order (see the module docstring)."""
        num_agents, num_adversaries, num_good = self.num_agents_total, self.num_adversaries, self.num_good
        num_envs = state.step.shape[0]
        agent_pos, vel = self.agent_pos(state), state.vel[:num_agents]
        landmark_rel = (self.landmark_pos(state)[None] - agent_pos[:, None]).reshape(num_agents, -1, num_envs)
        other_rel = drop_diagonal(agent_pos[None] - agent_pos[:, None]).reshape(num_agents, -1, num_envs)
        good_vel = vel[num_adversaries:]  # [G, 2, B]
        common = jnp.concatenate([vel, agent_pos, landmark_rel, other_rel], axis=1)
        seen_by_adversary = good_vel.reshape(1, 2 * num_good, num_envs)
        adversary_seen_vel = jnp.broadcast_to(seen_by_adversary, (num_adversaries, 2 * num_good, num_envs))
        good_seen_vel = drop_diagonal(jnp.broadcast_to(good_vel[None], (num_good, *good_vel.shape)))
        return {
            "adversaries": jnp.concatenate([common[:num_adversaries], adversary_seen_vel], axis=1),
            "agents": jnp.concatenate(
                [common[num_adversaries:], good_seen_vel.reshape(num_good, -1, num_envs)], axis=1
            ),
        }
