"""simple_crypto: Alice sends Bob a secret over a channel Eve overhears (mpe2's ``simple_crypto_v3``).

Three immobile agents that only talk (``dim_c = 4``) and two landmarks whose colours are the one-hots
``e_0`` and ``e_1`` of length 4. Each episode draws a goal landmark (the message) and a key landmark
(the private key shared by Alice and Bob). Positions are drawn but nothing moves, and no observation
or reward depends on them.

Observations (mpe2's order), with ``goal`` and ``key`` the one-hot colours of the drawn landmarks:

- ``eve_0`` ``[4]``: Alice's communication;
- ``bob_0`` ``[8]``: ``key`` (4), Alice's communication (4);
- ``alice_0`` ``[8]``: ``goal`` (4), ``key`` (4).

Actions (every agent): ``Discrete(4)`` (the one-hot word) or ``Box(0, 1, (4,))`` (the raw message).

Rewards, with ``err(c) = |c - goal|^2`` counted only when the message ``c`` is not all zeros (an agent
that said nothing is not scored): Eve gets ``-err(c_eve)``; Bob and Alice both get
``err(c_eve) - err(c_bob)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv
from .physics import MPEParams, MPEState

Array = jax.Array

COMM_DIM = 4
NUM_LANDMARKS = 2
AGENT_COLOR = (0.25, 0.25, 0.25)
ADVERSARY_COLOR = (0.75, 0.25, 0.25)
LANDMARK_COLORS = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
"""The first three of mpe2's 4-long one-hot landmark colours (the rest are zero)."""
EVE, BOB, ALICE = 0, 1, 2


class SimpleCrypto(MPEEnv):
    """Private communication. Groups ``adversaries`` (``eve_0``) and ``agents`` (``bob_0``, ``alice_0``).

    Bob and Alice are one team, so they share a group (equal spaces) although they play different roles.
    ``state.extra["goal"]`` and ``state.extra["key"]`` (int32 ``[B]``) are the indices of the goal
    landmark and of the key landmark.
    """

    reference = "mpe2.simple_crypto_v3"

    def __init__(self, max_cycles: int = 25, continuous_actions: bool = False) -> None:
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
        self._landmark_colors = np.array(LANDMARK_COLORS, np.float32)
        super().__init__(
            agents=[
                AgentSpec(name, group, movable=False, collide=False, color=color)
                for name, group, color in [
                    ("eve_0", "adversaries", ADVERSARY_COLOR),
                    ("bob_0", "agents", AGENT_COLOR),
                    ("alice_0", "agents", AGENT_COLOR),
                ]
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
        """Goal and key landmarks uniform and independent; every entity uniform in ``[-1, 1]^2``."""

        def draw(key: Array) -> tuple[Array, Array, Array]:
            goal_key, key_key, pos_key = jax.random.split(key, 3)
            goal = jax.random.randint(goal_key, (), 0, NUM_LANDMARKS, jnp.int32)
            private_key = jax.random.randint(key_key, (), 0, NUM_LANDMARKS, jnp.int32)
            pos = jax.random.uniform(pos_key, (self.entities.num_entities, 2), jnp.float32, -1.0, 1.0)
            return pos, goal, private_key

        pos, goal, private_key = jax.vmap(draw)(keys)
        return jnp.moveaxis(pos, 0, -1), {"goal": goal, "key": private_key}

    @staticmethod
    def _one_hot(index: Array) -> Array:
        """``[dim_c, B]``: the colour of landmark ``index`` (mpe2's landmark colours are one-hots)."""
        return jax.nn.one_hot(index, COMM_DIM, axis=0, dtype=jnp.float32)

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Eve is scored on guessing the goal; Bob and Alice on Bob guessing it and Eve failing."""
        goal = self._one_hot(state.extra["goal"])

        def error(message: Array) -> Array:
            # mpe2 skips an all-zero message: an agent that said nothing is not scored.
            spoke = jnp.any(message != 0.0, axis=0)
            return jnp.where(spoke, jnp.sum(jnp.square(message - goal), axis=0), 0.0)

        eve_error, bob_error = error(state.comm[EVE]), error(state.comm[BOB])
        good = eve_error - bob_error
        return {"adversaries": -eve_error[None], "agents": jnp.stack([good, good])}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order (see the module docstring)."""
        goal, private_key = self._one_hot(state.extra["goal"]), self._one_hot(state.extra["key"])
        alice_says = state.comm[ALICE]
        bob = jnp.concatenate([private_key, alice_says])
        alice = jnp.concatenate([goal, private_key])
        return {"adversaries": alice_says[None], "agents": jnp.stack([bob, alice])}

    def entity_colors(self, state: MPEState) -> Array:
        """mpe2's colours: Bob wears the goal's colour."""
        goal = jax.nn.one_hot(state.extra["goal"], NUM_LANDMARKS, dtype=jnp.float32)
        return jnp.asarray(self.colors).at[BOB].set(goal @ self._landmark_colors)
