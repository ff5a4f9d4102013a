"""simple_speaker_listener: a speaker names the goal and a listener goes there.

mpe2's ``simple_speaker_listener_v4``.

Two agents and three landmarks. The speaker (``speaker_0``) cannot move; it sees the colour of the goal
landmark and says one of ``dim_c = 3`` words. The listener (``listener_0``) is silent; it sees the
world and the speaker's word and must reach the goal, which it cannot see.

Observations (mpe2's order):

- speaker ``[3]``: the goal landmark's colour (RGB);
- listener ``[11]``: own velocity (2), each landmark's position relative to the listener (2 per
  landmark), the speaker's communication (3).

Actions: the speaker ``Discrete(3)`` (the word) or ``Box(0, 1, (3,))`` (the raw message); the listener
``Discrete(5)`` (no-op, left, right, down, up) or ``Box(0, 1, (5,))``.

Reward, shared by both agents: minus the squared distance from the listener to the goal landmark.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv
from .physics import MPEParams, MPEState

Array = jax.Array

COMM_DIM = 3
NUM_LANDMARKS = 3
AGENT_SIZE = 0.075
LANDMARK_SIZE = 0.04
AGENT_COLOR = (0.25, 0.25, 0.25)
LANDMARK_COLORS = ((0.65, 0.15, 0.15), (0.15, 0.65, 0.15), (0.15, 0.15, 0.65))
GOAL_HIGHLIGHT = 0.45
"""mpe2 paints the listener in the goal's colour lightened by this much."""


class SimpleSpeakerListener(MPEEnv):
    """Cooperative communication. Groups ``speaker`` (``speaker_0``) and ``listener`` (``listener_0``).

    ``state.extra["goal"]`` (int32 ``[B]``) is the index of the goal landmark.
    """

    reference = "mpe2.simple_speaker_listener_v4"

    def __init__(self, max_cycles: int = 25, continuous_actions: bool = False) -> None:
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
        self._landmark_colors = np.array(LANDMARK_COLORS, np.float32)
        super().__init__(
            agents=[
                AgentSpec(
                    "speaker_0", "speaker", AGENT_SIZE, movable=False, collide=False, color=AGENT_COLOR
                ),
                AgentSpec(
                    "listener_0", "listener", AGENT_SIZE, collide=False, silent=True, color=AGENT_COLOR
                ),
            ],
            landmarks=[
                LandmarkSpec(f"landmark {i}", size=LANDMARK_SIZE, collide=False, color=color)
                for i, color in enumerate(LANDMARK_COLORS)
            ],
            params=MPEParams(max_steps=max_cycles),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """A uniform goal landmark; every entity uniform in ``[-1, 1]^2`` (the immobile speaker too)."""

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

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Both agents get ``-|listener - goal|^2``."""
        goal_pos = jnp.sum(self._goal_one_hot(state)[:, None] * self.landmark_pos(state), axis=0)  # [2, B]
        delta = state.pos[1] - goal_pos
        reward = -jnp.sum(delta * delta, axis=0)[None]  # [1, B]
        return {"speaker": reward, "listener": reward}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order (see the module docstring)."""
        num_envs = state.step.shape[0]
        goal_color = jnp.sum(self._goal_one_hot(state)[:, None] * self._landmark_colors[:, :, None], axis=0)
        landmark_rel = self.landmark_pos(state) - state.pos[1:2]  # [L, 2, B]
        listener = jnp.concatenate([state.vel[1], landmark_rel.reshape(-1, num_envs), state.comm[0]], axis=0)
        return {"speaker": goal_color[None], "listener": listener[None]}

    def entity_colors(self, state: MPEState) -> Array:
        """mpe2's colours: the listener wears the goal's colour, lightened."""
        goal = jax.nn.one_hot(state.extra["goal"], NUM_LANDMARKS, dtype=jnp.float32)
        listener = goal @ self._landmark_colors + GOAL_HIGHLIGHT
        return jnp.asarray(self.colors).at[1].set(listener)
