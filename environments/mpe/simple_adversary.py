"""simple_adversary: good agents hide the goal from an adversary (mpe2's ``simple_adversary_v3``).

Agents, in mpe2's order: ``adversary_0`` (group ``adversaries``) then ``agent_0 .. agent_{N-1}`` (group
``agents``), all of size 0.15, silent and not colliding. Landmarks: ``landmark 0 .. landmark {N-1}``
(size 0.08, not colliding). One landmark, drawn uniformly at reset, is the goal; the good agents know
which, the adversary does not. Actions: ``Discrete(5)`` (no-op, left, right, down, up) or
``Box(0, 1, (5,))``. Nobody observes a velocity.

Observations (mpe2's order):

- adversary ``[4N]``: each landmark relative to the agent (2N), each good agent relative to it (2N);
- good agent ``[4N + 2]``: the goal relative to the agent (2), each landmark relative to it (2N), each
  other agent relative to it in index order, the adversary first (2N).

Reward: the adversary gets ``-|adversary - goal|``; every good agent gets the shared
``-min over good agents of |good - goal| + sum over adversaries of |adversary - goal|``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv
from .physics import MPEParams, MPEState, pairwise_distance
from .simple_tag import drop_diagonal

Array = jax.Array

COMM_DIM = 2
NUM_ADVERSARIES = 1
AGENT_SIZE = 0.15
LANDMARK_SIZE = 0.08
ADVERSARY_COLOR = (0.85, 0.35, 0.35)
GOOD_COLOR = (0.35, 0.35, 0.85)
LANDMARK_COLOR = (0.15, 0.15, 0.15)
GOAL_COLOR = (0.15, 0.65, 0.15)


class SimpleAdversary(MPEEnv):
    """Physical deception. Groups ``adversaries`` (``adversary_0``) and ``agents`` (``agent_i``).

    ``state.extra["goal"]`` (int32 ``[B]``) is the index of the goal landmark, shared by every agent.
    """

    reference = "mpe2.simple_adversary_v3"

    def __init__(self, num_good: int = 2, max_cycles: int = 25, continuous_actions: bool = False) -> None:
        if not isinstance(num_good, int) or num_good < 1:
            raise ValueError(f"num_good must be an int >= 1, got {num_good!r}")
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
        self.num_good = num_good
        self.num_landmarks = num_good
        agents = [
            AgentSpec(
                "adversary_0", "adversaries", AGENT_SIZE, collide=False, silent=True, color=ADVERSARY_COLOR
            )
        ]
        agents += [
            AgentSpec(f"agent_{i}", "agents", AGENT_SIZE, collide=False, silent=True, color=GOOD_COLOR)
            for i in range(num_good)
        ]
        super().__init__(
            agents=agents,
            landmarks=[
                LandmarkSpec(f"landmark {i}", LANDMARK_SIZE, collide=False, color=LANDMARK_COLOR)
                for i in range(num_good)
            ],
            params=MPEParams(max_steps=max_cycles),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """A uniform goal landmark; agents and landmarks uniform in ``[-1, 1]^2``."""

        def draw(key: Array) -> tuple[Array, Array]:
            goal_key, pos_key = jax.random.split(key)
            goal = jax.random.randint(goal_key, (), 0, self.num_landmarks, jnp.int32)
            pos = jax.random.uniform(pos_key, (self.entities.num_entities, 2), jnp.float32, -1.0, 1.0)
            return pos, goal

        pos, goal = jax.vmap(draw)(keys)
        return jnp.moveaxis(pos, 0, -1), {"goal": goal}

    def _goal_pos(self, state: MPEState) -> Array:
        """``[1, 2, B]`` goal position: a one-hot weighted sum is exact and avoids a gather."""
        one_hot = jax.nn.one_hot(state.extra["goal"], self.num_landmarks, axis=0, dtype=jnp.float32)
        return jnp.sum(one_hot[:, None] * self.landmark_pos(state), axis=0)[None]

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Adversary: minus its distance to the goal. Good agents: the shared deception reward."""
        to_goal = pairwise_distance(self.agent_pos(state), self._goal_pos(state))[:, 0]  # [N + 1, B]
        adversary_distance = to_goal[self.group_rows("adversaries")]
        good_distance = to_goal[self.group_rows("agents")]
        shared = jnp.sum(adversary_distance, axis=0) - jnp.min(good_distance, axis=0)  # [B]
        good_reward = jnp.broadcast_to(shared, good_distance.shape)
        return {"adversaries": -adversary_distance, "agents": good_reward}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order (see the module docstring)."""
        num_agents, num_envs = self.num_agents_total, state.step.shape[0]
        agent_pos = self.agent_pos(state)
        landmark_rel = self.landmark_pos(state)[None] - agent_pos[:, None]  # [N + 1, L, 2, B]
        landmark_rel = landmark_rel.reshape(num_agents, -1, num_envs)
        other_rel = drop_diagonal(agent_pos[None] - agent_pos[:, None])  # [N + 1, N, 2, B]
        other_rel = other_rel.reshape(num_agents, -1, num_envs)
        adversaries, good = self.group_rows("adversaries"), self.group_rows("agents")
        goal_rel = self._goal_pos(state) - agent_pos[good]  # [N, 2, B]
        return {
            "adversaries": jnp.concatenate([landmark_rel[adversaries], other_rel[adversaries]], axis=1),
            "agents": jnp.concatenate([goal_rel, landmark_rel[good], other_rel[good]], axis=1),
        }

    def entity_colors(self, state: MPEState) -> Array:
        """mpe2's colours: the goal landmark is green."""
        is_goal = (state.extra["goal"] == np.arange(self.num_landmarks))[:, None]  # [L, 1]
        landmarks = jnp.where(is_goal, np.array(GOAL_COLOR, np.float32), np.array(LANDMARK_COLOR, np.float32))
        return jnp.concatenate([jnp.asarray(self.colors[: self.num_agents_total]), landmarks])
