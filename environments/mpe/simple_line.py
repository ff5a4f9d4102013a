"""simple_line: N agents spread evenly along the segment between two landmarks (mpe2's ``simple_line_v1``).

Agents ``agent_0 .. agent_{N-1}`` (size 0.03, colliding, silent) and landmarks ``landmark_0``,
``landmark_1`` (size 0.02, not colliding). Actions are movement only: ``Discrete(5)`` or ``Box(0, 1, (5,))``.

Observation (mpe2's order): own velocity (2), own position (2), each landmark relative to the agent (4).

At reset, landmark 0 is placed in ``[-0.25, 0.25]^2`` and landmark 1 at distance ``line_length`` (1.25)
from it in a uniform direction, turned by 5 degrees at a time until it lies inside ``(-1, 1)^2``. The
targets are ``N`` points evenly spaced from landmark 0 to landmark 1, fixed for the episode
(``state.extra["targets"]``). Reward, shared by every agent: agents are matched to targets by an optimal
assignment of distances (mpe2 uses scipy's Hungarian solver) and get ``-mean(clip(matched distances, 0,
2))``. With ``terminate_on_success`` the episode terminates once every matched distance is below 0.05.
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

AGENT_SIZE = 0.03
LANDMARK_SIZE = 0.02
ANCHOR_BOUND = 0.25
TURN = np.radians(5.0)
"""mpe2 turns the direction by this much until landmark 1 lies inside the arena."""
NUM_TURNS = 72
"""Turns that cover the full circle; mpe2's loop stops at the first direction that fits."""
AGENT_COLOR = (0.35, 0.35, 0.85)
LANDMARK_COLOR = (0.25, 0.25, 0.25)


@struct.dataclass
class SimpleLineParams(ShapeParams):
    """Physics constants, the shape constants and the line's length."""

    line_length: float = 1.25
    """Distance between the two landmarks (mpe2's ``TOTAL_SEP``); used at reset."""


class SimpleLine(ShapeScenario):
    """Line formation. One group, ``agents``, named ``agent_0 .. agent_{N-1}``.

    ``state.extra["targets"]`` (float32 ``[N, 2, B]``) holds the targets drawn at reset.
    """

    reference = "mpe2.simple_line_v1"

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
            landmarks=[
                LandmarkSpec(f"landmark_{i}", size=LANDMARK_SIZE, collide=False, color=LANDMARK_COLOR)
                for i in range(2)
            ],
            params=SimpleLineParams(max_steps=max_cycles, terminate_on_success=bool(terminate_on_success)),
            dim_c=0,
            continuous_actions=continuous_actions,
        )

    @property
    def n_agents(self) -> int:
        """Number of agents (mpe2's ``N``)."""
        return self.num_agents_total

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Agents uniform in ``[-1, 1]^2``; the landmarks and targets as in the module docstring."""
        assert isinstance(params, SimpleLineParams)
        num_agents = self.num_agents_total
        spacing = params.line_length / (num_agents - 1) if num_agents > 1 else 0.0

        def draw(key: Array) -> tuple[Array, Array]:
            agent_key, anchor_key, angle_key = jax.random.split(key, 3)
            agents = jax.random.uniform(agent_key, (num_agents, 2), jnp.float32, -1.0, 1.0)
            anchor = jax.random.uniform(anchor_key, (2,), jnp.float32, -ANCHOR_BOUND, ANCHOR_BOUND)
            angle = jax.random.uniform(angle_key, (), jnp.float32, 0.0, 2 * np.pi)
            turned = angle + TURN * np.arange(NUM_TURNS)
            directions = jnp.stack([jnp.cos(turned), jnp.sin(turned)], axis=1)  # [turns, 2]
            ends = anchor + params.line_length * directions
            fits = jnp.all(jnp.abs(ends) < 1.0, axis=1)
            # The first turn that fits, selected by a one-hot sum (exact) rather than a gather.
            first = jax.nn.one_hot(jnp.argmax(fits), NUM_TURNS, dtype=jnp.float32)
            direction, end = first @ directions, first @ ends
            targets = anchor + spacing * np.arange(num_agents, dtype=np.float32)[:, None] * direction
            return jnp.concatenate([agents, anchor[None], end[None]]), targets

        pos, targets = jax.vmap(draw)(keys)
        return jnp.moveaxis(pos, 0, -1), {"targets": jnp.moveaxis(targets, 0, -1)}

    def targets(self, state: MPEState, params: MPEParams) -> Array:
        """The targets drawn at reset."""
        return state.extra["targets"]
