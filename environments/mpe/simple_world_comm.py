"""simple_world_comm: simple_tag with food, forests and a leader who talks (mpe2's ``simple_world_comm_v3``).

Agents, in mpe2's order: ``leadadversary_0`` (group ``leadadversary``), ``adversary_0 ..
adversary_{A-2}`` (group ``adversaries``), then ``agent_0 .. agent_{G-1}`` (group ``agents``). Adversaries
have size 0.075, accel 3 and max speed 1.0; good agents size 0.045, accel 4 and max speed 1.3. Only the
leader speaks (4 words). Landmarks, in order: obstacles ``landmark i`` (size 0.2, colliding), food
``food i`` (0.03) and forests ``forest i`` (0.3); food and forests do not collide.

Actions: ``Discrete(5)`` (no-op, left, right, down, up) or ``Box(0, 1, (5,))`` for the silent agents;
the leader's are ``Discrete(20)`` (``move + 5 * word``) or ``Box(0, 1, (9,))`` (move 5, message 4).

"In a forest" means closer to the forest's centre than the sum of the radii. Agent ``i`` sees agent
``j`` when both are in one same forest, when neither is in any forest, or when ``i`` is the leader;
an unseen agent's relative position and velocity read as zeros. Observation (mpe2's order):

- adversaries and the leader: own velocity (2), own position (2), every landmark (obstacles, food,
  forests) relative to the agent (2 each), each other agent relative to the agent (2 each, index
  order), each good agent's velocity (2 each), own forest flags (1 per forest: +1 inside, -1 outside),
  the leader's communication (4). 34 by default;
- good agents: own velocity, own position, landmarks, other agents as above, own forest flags, then
  each other good agent's velocity. 28 by default.

Reward (collision: closer than the sum of the radii):

- every adversary: ``+5`` per (good agent, adversary) pair in collision, minus ``0.1 *`` its distance
  to the nearest good agent;
- a good agent: ``-5`` per adversary touching it, ``-2 * sum over x, y of bound(|coordinate|)`` (see
  ``simple_tag``), ``+2`` per food it touches, minus ``0.05 *`` its distance to the nearest food.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv, require_ints, split_keys
from .physics import MPEParams, MPEState, pairwise_distance
from .simple_tag import boundary_penalty, drop_diagonal

Array = jax.Array

ADVERSARY_SIZE = 0.075
GOOD_SIZE = 0.045
OBSTACLE_SIZE = 0.2
FOOD_SIZE = 0.03
FOREST_SIZE = 0.3
ADVERSARY_ACCEL = 3.0
GOOD_ACCEL = 4.0
ADVERSARY_MAX_SPEED = 1.0
GOOD_MAX_SPEED = 1.3
COMM_DIM = 4
LEADER_COLOR = (0.65, 0.15, 0.15)
ADVERSARY_COLOR = (0.95, 0.45, 0.45)
GOOD_COLOR = (0.45, 0.95, 0.45)
OBSTACLE_COLOR = (0.25, 0.25, 0.25)
FOOD_COLOR = (0.15, 0.15, 0.65)
FOREST_COLOR = (0.6, 0.9, 0.6)


@struct.dataclass
class SimpleWorldCommParams(MPEParams):
    """Physics constants plus simple_world_comm's reward weights."""

    adversary_collision_reward: float = 5.0
    """Reward to every adversary for each (good agent, adversary) pair in collision."""
    chase_distance_weight: float = 0.1
    """Adversary reward lost per unit of distance to the nearest good agent."""
    agent_collision_penalty: float = 5.0
    """Reward a good agent loses per adversary in collision with it."""
    boundary_weight: float = 2.0
    """Scale of the good agents' penalty for leaving the ``[-0.9, 0.9]^2`` area."""
    food_reward: float = 2.0
    """Reward to a good agent per food it touches."""
    food_distance_weight: float = 0.05
    """Good agent reward lost per unit of distance to the nearest food."""


class SimpleWorldComm(MPEEnv):
    """Predator-prey with food and forests. Groups ``leadadversary``, ``adversaries`` and ``agents``.

    ``adversaries`` is absent when ``num_adversaries == 1`` (the leader is the only adversary).
    """

    reference = "mpe2.simple_world_comm_v3"

    def __init__(
        self,
        num_good: int = 2,
        num_adversaries: int = 4,
        num_obstacles: int = 1,
        num_food: int = 2,
        max_cycles: int = 25,
        num_forests: int = 2,
        continuous_actions: bool = False,
    ) -> None:
        require_ints(
            ("num_good", num_good, 1),
            ("num_adversaries", num_adversaries, 1),
            ("num_obstacles", num_obstacles, 0),
            ("num_food", num_food, 1),
            ("max_cycles", max_cycles, 1),
            ("num_forests", num_forests, 0),
        )
        self.num_good = num_good
        self.num_adversaries = num_adversaries
        self.num_obstacles = num_obstacles
        self.num_food = num_food
        self.num_forests = num_forests

        def adversary(name: str, group: str, color: tuple[float, float, float], silent: bool) -> AgentSpec:
            return AgentSpec(
                name,
                group,
                size=ADVERSARY_SIZE,
                silent=silent,
                accel=ADVERSARY_ACCEL,
                max_speed=ADVERSARY_MAX_SPEED,
                color=color,
            )

        agents = [
            adversary("leadadversary_0", "leadadversary", LEADER_COLOR, silent=False),
            *(
                adversary(f"adversary_{i}", "adversaries", ADVERSARY_COLOR, True)
                for i in range(num_adversaries - 1)
            ),
            *(
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
            ),
        ]
        landmarks = [
            *(
                LandmarkSpec(f"landmark {i}", size=OBSTACLE_SIZE, color=OBSTACLE_COLOR)
                for i in range(num_obstacles)
            ),
            *(
                LandmarkSpec(f"food {i}", size=FOOD_SIZE, collide=False, color=FOOD_COLOR)
                for i in range(num_food)
            ),
            *(
                LandmarkSpec(f"forest {i}", size=FOREST_SIZE, collide=False, color=FOREST_COLOR)
                for i in range(num_forests)
            ),
        ]
        super().__init__(
            agents=agents,
            landmarks=landmarks,
            params=SimpleWorldCommParams(max_steps=max_cycles),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Agents uniform in ``[-1, 1]^2``; obstacles, food and forests uniform in ``[-0.9, 0.9]^2``."""
        agent_keys, landmark_keys = split_keys(keys, 2)
        agents = self.uniform_positions(agent_keys, self.num_agents_total, -1.0, 1.0)
        landmarks = self.uniform_positions(landmark_keys, len(self.landmark_specs), -0.9, 0.9)
        return jnp.concatenate([agents, landmarks]), {}

    def _landmarks(self, state: MPEState) -> tuple[Array, Array]:
        """Food ``[Fd, 2, B]`` and forest ``[F, 2, B]`` positions."""
        landmarks = self.landmark_pos(state)
        food_start = self.num_obstacles
        forest_start = food_start + self.num_food
        return landmarks[food_start:forest_start], landmarks[forest_start:]

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Catch and chase rewards for adversaries; catch, boundary and food terms for good agents."""
        assert isinstance(params, SimpleWorldCommParams)
        num_adversaries = self.num_adversaries
        agent_pos = self.agent_pos(state)
        adversary_pos, good_pos = agent_pos[:num_adversaries], agent_pos[num_adversaries:]
        food_pos, _ = self._landmarks(state)
        size = self.entities.size
        adversary_size, good_size = size[:num_adversaries], size[num_adversaries : self.num_agents_total]
        food_size = size[self.num_agents_total + self.num_obstacles :][: self.num_food]
        good_to_adversary = pairwise_distance(good_pos, adversary_pos)  # [G, A, B]
        caught = good_to_adversary < (good_size[:, None] + adversary_size[None, :])[:, :, None]
        caught = caught.astype(jnp.float32)
        pairs = jnp.sum(caught, axis=(0, 1))  # [B]
        nearest_good = jnp.min(good_to_adversary, axis=0)  # [A, B]
        adversary = (
            params.adversary_collision_reward * pairs[None] - params.chase_distance_weight * nearest_good
        )
        good_to_food = pairwise_distance(good_pos, food_pos)  # [G, Fd, B]
        eating = good_to_food < (good_size[:, None] + food_size[None, :])[:, :, None]
        eating = jnp.sum(eating.astype(jnp.float32), axis=1)
        good = (
            -params.agent_collision_penalty * jnp.sum(caught, axis=1)
            - params.boundary_weight * boundary_penalty(good_pos)
            + params.food_reward * eating
            - params.food_distance_weight * jnp.min(good_to_food, axis=1)
        )
        rewards = {"leadadversary": adversary[:1], "agents": good}
        if num_adversaries > 1:
            rewards["adversaries"] = adversary[1:]
        return rewards

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order, with forests hiding agents (see the module docstring)."""
        num_agents, num_adversaries, num_good = self.num_agents_total, self.num_adversaries, self.num_good
        num_envs = state.step.shape[0]
        agent_pos, vel = self.agent_pos(state), state.vel[:num_agents]
        _, forest_pos = self._landmarks(state)
        size = self.entities.size
        reach = (size[:num_agents, None] + size[num_agents + self.num_obstacles + self.num_food :][None])[
            :, :, None
        ]
        in_forest = pairwise_distance(agent_pos, forest_pos) < reach  # [N, F, B]
        anywhere = jnp.any(in_forest, axis=1)  # [N, B]
        same_forest = jnp.any(in_forest[:, None] & in_forest[None, :], axis=2)  # [N, N, B]
        # The leader (row 0) sees everyone; rows are observers, columns the observed.
        is_leader = (np.arange(num_agents) == 0)[:, None, None]
        visible = same_forest | (~anywhere[:, None] & ~anywhere[None, :]) | is_leader  # [N, N, B]
        rel = jnp.where(visible[:, :, None], agent_pos[None] - agent_pos[:, None], 0.0)  # [N, N, 2, B]
        other_rel = drop_diagonal(rel).reshape(num_agents, -1, num_envs)
        good_vel = vel[num_adversaries:]  # [G, 2, B]
        seen_good_vel = jnp.where(visible[:, num_adversaries:, None], good_vel[None], 0.0)  # [N, G, 2, B]
        forest_flags = jnp.where(in_forest, 1.0, -1.0)
        landmark_rel = (self.landmark_pos(state)[None] - agent_pos[:, None]).reshape(num_agents, -1, num_envs)
        common = jnp.concatenate([vel, agent_pos, landmark_rel, other_rel], axis=1)
        leader_comm = jnp.broadcast_to(state.comm[:1], (num_adversaries, COMM_DIM, num_envs))
        adversary_obs = jnp.concatenate(
            [
                common[:num_adversaries],
                seen_good_vel[:num_adversaries].reshape(num_adversaries, -1, num_envs),
                forest_flags[:num_adversaries],
                leader_comm,
            ],
            axis=1,
        )
        good_seen_by_good = drop_diagonal(seen_good_vel[num_adversaries:]).reshape(num_good, -1, num_envs)
        good_obs = jnp.concatenate(
            [common[num_adversaries:], forest_flags[num_adversaries:], good_seen_by_good], axis=1
        )
        obs = {"leadadversary": adversary_obs[:1], "agents": good_obs}
        if num_adversaries > 1:
            obs["adversaries"] = adversary_obs[1:]
        return obs
