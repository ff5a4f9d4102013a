"""simple_push: an adversary pushes a good agent away from its goal (mpe2's ``simple_push_v3``).

Agents, in mpe2's order: ``adversary_0`` (group ``adversaries``) and ``agent_0`` (group ``agents``),
both of size 0.05, colliding and silent. Landmarks: ``landmark 0`` and ``landmark 1`` (size 0.05, not
colliding). One landmark, drawn uniformly at reset, is the goal of both agents; only the good agent is
told which. Actions: ``Discrete(5)`` (no-op, left, right, down, up) or ``Box(0, 1, (5,))``.

Observations (mpe2's order):

- adversary ``[8]``: own velocity (2), each landmark relative to the agent (4), the good agent relative
  to it (2);
- good agent ``[19]``: own velocity (2), the goal relative to the agent (2), its own colour (3: grey 0.25
  with 0.75 in the goal's channel, so it encodes the goal), each landmark relative to it (4), the
  landmarks' colours (6, constant: green and blue), the adversary relative to it (2).

Reward: the good agent gets ``-|agent - goal|``; the adversary gets
``min over good agents of |good - goal| - |adversary - goal|``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv
from .physics import MPEParams, MPEState, pairwise_distance

Array = jax.Array

COMM_DIM = 2
NUM_LANDMARKS = 2
NUM_ADVERSARIES = 1
ADVERSARY_COLOR = (0.75, 0.25, 0.25)
AGENT_COLOR = (0.25, 0.25, 0.25)
GOAL_HIGHLIGHT = 0.5
"""mpe2 paints the good agent grey plus this much in the goal landmark's colour channel."""
LANDMARK_COLORS = ((0.1, 0.9, 0.1), (0.1, 0.1, 0.9))


class SimplePush(MPEEnv):
    """Keep-away. Groups ``adversaries`` (``adversary_0``) and ``agents`` (``agent_0``).

    ``state.extra["goal"]`` (int32 ``[B]``) is the index of the goal landmark, shared by both agents.
    """

    reference = "mpe2.simple_push_v3"

    def __init__(self, max_cycles: int = 25, continuous_actions: bool = False) -> None:
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
        self._landmark_colors = np.array(LANDMARK_COLORS, np.float32)
        # Goal index -> the good agent's colour (mpe2: channel goal + 1 of the grey gets the highlight).
        self._agent_colors = np.full((NUM_LANDMARKS, 3), AGENT_COLOR, np.float32)
        self._agent_colors[np.arange(NUM_LANDMARKS), np.arange(NUM_LANDMARKS) + 1] += GOAL_HIGHLIGHT
        super().__init__(
            agents=[
                AgentSpec("adversary_0", "adversaries", silent=True, color=ADVERSARY_COLOR),
                AgentSpec("agent_0", "agents", silent=True, color=AGENT_COLOR),
            ],
            landmarks=[
                LandmarkSpec(f"landmark {i}", collide=False, color=color)
                for i, color in enumerate(LANDMARK_COLORS)
            ],
            params=MPEParams(max_steps=max_cycles),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """A uniform goal landmark; agents and landmarks uniform in ``[-1, 1]^2``."""

        def draw(key: Array) -> tuple[Array, Array]:
            goal_key, pos_key = jax.random.split(key)
            goal = jax.random.randint(goal_key, (), 0, NUM_LANDMARKS, jnp.int32)
            pos = jax.random.uniform(pos_key, (self.entities.num_entities, 2), jnp.float32, -1.0, 1.0)
            return pos, goal

        pos, goal = jax.vmap(draw)(keys)
        return jnp.moveaxis(pos, 0, -1), {"goal": goal}

    def _goal_one_hot(self, state: MPEState) -> Array:
        """``[L, B]`` one-hot of the goal: selecting by a weighted sum is exact and avoids a gather."""
        return jax.nn.one_hot(state.extra["goal"], NUM_LANDMARKS, axis=0, dtype=jnp.float32)

    def _goal_pos(self, state: MPEState) -> Array:
        """``[1, 2, B]`` position of the goal landmark."""
        return jnp.sum(self._goal_one_hot(state)[:, None] * self.landmark_pos(state), axis=0)[None]

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """The good agent: minus its distance to the goal. The adversary: that minus its own."""
        to_goal = pairwise_distance(self.agent_pos(state), self._goal_pos(state))[:, 0]  # [N, B]
        adversary_rows, good_rows = self.group_rows("adversaries"), self.group_rows("agents")
        good_distance = to_goal[good_rows]
        nearest_good = jnp.min(good_distance, axis=0, keepdims=True)  # [1, B]
        return {"adversaries": nearest_good - to_goal[adversary_rows], "agents": -good_distance}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order (see the module docstring)."""
        num_envs = state.step.shape[0]
        agent_pos = self.agent_pos(state)
        landmark_rel = self.landmark_pos(state)[None] - agent_pos[:, None]  # [N, L, 2, B]
        landmark_rel = landmark_rel.reshape(self.num_agents_total, -1, num_envs)  # [N, 2L, B]
        adversary, good = agent_pos[:NUM_ADVERSARIES], agent_pos[NUM_ADVERSARIES:]
        goal_one_hot = self._goal_one_hot(state)
        own_color = jnp.sum(goal_one_hot[:, None] * self._agent_colors[:, :, None], axis=0)  # [3, B]
        landmark_colors = jnp.broadcast_to(
            self._landmark_colors.reshape(-1, 1), (self._landmark_colors.size, num_envs)
        )
        adversary_obs = jnp.concatenate(
            [state.vel[:NUM_ADVERSARIES], landmark_rel[:NUM_ADVERSARIES], good - adversary], axis=1
        )
        good_obs = jnp.concatenate(
            [
                state.vel[NUM_ADVERSARIES : self.num_agents_total],
                self._goal_pos(state) - good,
                own_color[None],
                landmark_rel[NUM_ADVERSARIES:],
                landmark_colors[None],
                adversary - good,
            ],
            axis=1,
        )
        return {"adversaries": adversary_obs, "agents": good_obs}

    def entity_colors(self, state: MPEState) -> Array:
        """mpe2's colours: the good agent carries the goal's colour channel."""
        goal = jax.nn.one_hot(state.extra["goal"], NUM_LANDMARKS, dtype=jnp.float32)
        return jnp.asarray(self.colors).at[NUM_ADVERSARIES].set(goal @ self._agent_colors)
