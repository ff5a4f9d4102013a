"""simple_facmac: FACMAC's continuous predator-prey, with scripted prey (JaxMARL's ``MPE_simple_facmac_*``).

The reference is JaxMARL's ``SimpleFacmacMPE`` (itself a port of the ``continuous_pred_prey_*a``
scenarios of the FACMAC paper's code); there is no mpe2 version. We follow JaxMARL transition for
transition except for the velocity block of the observation (JaxMARL issue #139, below).

Agents, in JaxMARL's order: ``adversary_0 .. adversary_{A-1}`` (group ``adversaries``: size 0.075,
accel 3, max speed 1.0) then ``agent_0 .. agent_{G-1}`` (group ``agents``, the prey: size 0.05, max speed
1.3). Landmarks ``landmark 0 .. landmark {L-1}`` are colliding obstacles of size 0.2. Everyone collides
and is silent.

Actions: ``Box(0, 1, (5,))`` (move ``(a[2]-a[1], a[4]-a[3])`` times accel), or ``Discrete(5)`` with
``continuous_actions=False``. The prey group takes actions too (JaxMARL lists the prey as agents) but
ignores them: a scripted policy moves the prey (``_prey_moves``).

Observation (``v`` = the view radius, 1.5; a negative radius disables the masks): own velocity (2),
own position (2), each landmark relative to the agent (2 per landmark), each other agent relative to
the agent in index order (2 per other agent), then the velocity of every *prey* other than the agent
(2 each: ``G`` for an adversary, ``G - 1`` for a prey). As in JaxMARL, a mask hides a whole block at
once: the landmark block is zeroed when the norm of the *whole block* exceeds ``v``, and the other-agent
positions and prey velocities when the norm of the whole other-agent position block does.

Reward (JaxMARL's): every adversary gets 10 per (prey, adversary) pair in contact. Prey ``i`` gets
``-10`` per adversary touching prey ``min(A + i, G - 1)`` (JaxMARL indexes its ``[G, A]`` contact table
with the agent index, which JAX clamps: with several prey, every prey is charged the *last* prey's
contacts) minus simple_tag's boundary penalty of its own position.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_suite.core.types import GroupDict, TimeStep

from .base import AgentSpec, LandmarkSpec, MPEEnv, require_ints, split_keys
from .physics import MPEParams, MPEState, pairwise_distance, world_step
from .simple_tag import (
    ADVERSARY_COLOR,
    GOOD_COLOR,
    OBSTACLE_COLOR,
    boundary_penalty,
    drop_diagonal,
)

Array = jax.Array

ADVERSARY_SIZE = 0.075
PREY_SIZE = 0.05
OBSTACLE_SIZE = 0.2
ADVERSARY_ACCEL = 3.0
ADVERSARY_MAX_SPEED = 1.0
PREY_MAX_SPEED = 1.3
COMM_DIM = 2
NUM_CANDIDATES = 100
"""Candidate moves the prey policy scores each step."""
NUM_WAYPOINTS = 5
"""Points checked along each candidate move by the ``"sum"`` score."""
BLOCKED = -9999999.0
"""JaxMARL's score for a rejected candidate; a best score below zero means "stay put"."""

ScoreFunction = Literal["sum", "min"]


@struct.dataclass
class SimpleFacmacParams(MPEParams):
    """Physics constants plus the rewards and the view radius."""

    adversary_collision_reward: float = 10.0
    """Reward to every adversary for each (prey, adversary) pair in contact."""
    agent_collision_penalty: float = 10.0
    """Reward a prey loses per adversary in contact (see the module docstring for which prey)."""
    boundary_weight: float = 1.0
    """Scale of the prey's penalty for leaving the ``[-0.9, 0.9]^2`` area."""
    view_radius: float = 1.5
    """Observation mask radius (whole blocks, as in JaxMARL); negative disables the masks."""


JAXMARL_IDS = {
    (1, 3, 2, "sum"): "MPE_simple_facmac_v1",
    (1, 3, 2, "min"): "MPE_simple_facmac_3a_v1",
    (2, 6, 4, "min"): "MPE_simple_facmac_6a_v1",
    (3, 9, 6, "min"): "MPE_simple_facmac_9a_v1",
}
"""JaxMARL's FACMAC ids by ``(num_good_agents, num_adversaries, num_landmarks, score_function)``."""


class SimpleFacmac(MPEEnv):
    """FACMAC predator-prey. Groups ``adversaries`` (learners) and ``agents`` (scripted prey)."""

    def __init__(
        self,
        num_good_agents: int = 1,
        num_adversaries: int = 3,
        num_landmarks: int = 2,
        view_radius: float = 1.5,
        score_function: ScoreFunction = "sum",
        max_cycles: int = 25,
        continuous_actions: bool = True,
    ) -> None:
        require_ints(
            ("num_good_agents", num_good_agents, 1),
            ("num_adversaries", num_adversaries, 1),
            ("num_landmarks", num_landmarks, 0),
            ("max_cycles", max_cycles, 1),
        )
        if score_function not in ("sum", "min"):
            raise ValueError(f"score_function must be 'sum' or 'min', got {score_function!r}")
        self.num_good_agents = num_good_agents
        self.num_adversaries = num_adversaries
        self.num_landmarks = num_landmarks
        self.score_function = score_function
        # One class serves four JaxMARL ids: the reference is the one this configuration reproduces, and
        # none for a configuration JaxMARL does not ship.
        jaxmarl_id = JAXMARL_IDS.get((num_good_agents, num_adversaries, num_landmarks, score_function))
        default_world = view_radius == 1.5 and max_cycles == 25
        self.reference = f"jaxmarl.{jaxmarl_id}" if jaxmarl_id and default_world else None
        num_entities = num_adversaries + num_good_agents + num_landmarks
        # JaxMARL plans prey i's move from entity A - 1 + 2i (an indexing slip: prey 0 plans from the
        # last adversary's position and radius) and JAX clamps static indices past the end.
        self._planners = tuple(
            min(num_adversaries - 1 + 2 * i, num_entities - 1) for i in range(num_good_agents)
        )
        # JaxMARL charges each prey the contacts of row A + i of its [G, A] table, clamped to G - 1.
        self._charged_prey = tuple(
            min(num_adversaries + i, num_good_agents - 1) for i in range(num_good_agents)
        )
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
        # The scripted move is applied as the force itself (JaxMARL never scales it by the prey's
        # nominal accel of 4), so accel 1 reproduces it exactly.
        prey = [
            AgentSpec(
                f"agent_{i}",
                "agents",
                size=PREY_SIZE,
                silent=True,
                accel=1.0,
                max_speed=PREY_MAX_SPEED,
                color=GOOD_COLOR,
            )
            for i in range(num_good_agents)
        ]
        super().__init__(
            agents=[*adversaries, *prey],
            landmarks=[
                LandmarkSpec(f"landmark {i}", size=OBSTACLE_SIZE, color=OBSTACLE_COLOR)
                for i in range(num_landmarks)
            ],
            params=SimpleFacmacParams(max_steps=max_cycles, view_radius=float(view_radius)),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    # ----------------------------------------------------------------------------------------------
    # Scenario hooks

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Agents and landmarks uniform in ``[-1, 1]^2``, drawn as JaxMARL draws them from the same key."""
        agent_keys, landmark_keys = split_keys(keys, 2)
        agents = self.uniform_positions(agent_keys, self.num_agents_total, -1.0, 1.0)
        landmarks = self.uniform_positions(landmark_keys, self.num_landmarks, -1.0, 1.0)
        return jnp.concatenate([agents, landmarks]), {}

    def _contacts(self, state: MPEState) -> Array:
        """``[G, A, B]``: prey ``g`` and adversary ``a`` are in contact."""
        adversaries = slice(0, self.num_adversaries)
        return self.agents_touching(state, slice(self.num_adversaries, self.num_agents_total), adversaries)

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Shared catch reward for adversaries; JaxMARL's catch and boundary penalties for the prey."""
        assert isinstance(params, SimpleFacmacParams)
        contacts = self._contacts(state).astype(jnp.float32)
        per_prey = jnp.sum(contacts, axis=1)  # [G, B]
        adversary = params.adversary_collision_reward * jnp.sum(per_prey, axis=0)
        charged = jnp.concatenate([per_prey[row : row + 1] for row in self._charged_prey])
        prey_pos = self.agent_pos(state)[self.num_adversaries :]
        prey = -params.agent_collision_penalty * charged - params.boundary_weight * boundary_penalty(prey_pos)
        return {
            "adversaries": jnp.broadcast_to(adversary, (self.num_adversaries, *adversary.shape)),
            "agents": prey,
        }

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """The layout in the module docstring; own velocity is never masked."""
        assert isinstance(params, SimpleFacmacParams)
        num_agents, num_adversaries = self.num_agents_total, self.num_adversaries
        num_good = self.num_good_agents
        num_envs = state.step.shape[0]
        agent_pos, vel = self.agent_pos(state), state.vel[:num_agents]
        landmark_rel = (self.landmark_pos(state)[None] - agent_pos[:, None]).reshape(num_agents, -1, num_envs)
        other_rel = drop_diagonal(agent_pos[None] - agent_pos[:, None]).reshape(num_agents, -1, num_envs)
        landmark_hidden = self._hidden(landmark_rel, params)
        other_hidden = self._hidden(other_rel, params)
        landmark_rel = jnp.where(landmark_hidden, 0.0, landmark_rel)
        other_rel = jnp.where(other_hidden, 0.0, other_rel)
        prey_vel = vel[num_adversaries:]  # [G, 2, B]
        adversary_seen = jnp.broadcast_to(
            prey_vel.reshape(1, 2 * num_good, num_envs), (num_adversaries, 2 * num_good, num_envs)
        )
        prey_seen = drop_diagonal(jnp.broadcast_to(prey_vel[None], (num_good, *prey_vel.shape)))
        prey_seen = prey_seen.reshape(num_good, 2 * (num_good - 1), num_envs)
        common = jnp.concatenate([vel, agent_pos, landmark_rel, other_rel], axis=1)
        return {
            "adversaries": jnp.concatenate(
                [common[:num_adversaries], jnp.where(other_hidden[:num_adversaries], 0.0, adversary_seen)],
                axis=1,
            ),
            "agents": jnp.concatenate(
                [common[num_adversaries:], jnp.where(other_hidden[num_adversaries:], 0.0, prey_seen)], axis=1
            ),
        }

    @staticmethod
    def _hidden(block: Array, params: SimpleFacmacParams) -> Array:
        """``[n, 1, B]``: the whole ``[n, d, B]`` block is out of view (JaxMARL's all-or-nothing mask)."""
        norm = jnp.sqrt(jnp.sum(block * block, axis=1, keepdims=True))
        return (norm > params.view_radius) & (params.view_radius >= 0)

    # ----------------------------------------------------------------------------------------------
    # Scripted prey

    def _candidates(self, keys: Array) -> tuple[Array, Array]:
        """``(length, angle)``, each ``[K, B]``: JaxMARL's candidate moves from each env's step key.

        Every prey of an env scores the same candidates (JaxMARL draws them all from the step key).
        The angle is ``pi * sqrt(U(0, 2))``, not uniform, as JaxMARL draws it.
        """

        def draw(key: Array) -> tuple[Array, Array]:
            key, sub = jax.random.split(key)
            length = jnp.sqrt(jax.random.uniform(sub, (NUM_CANDIDATES,), minval=0.0, maxval=1.0))
            key, sub = jax.random.split(key)
            angle = jnp.pi * jnp.sqrt(jax.random.uniform(sub, (NUM_CANDIDATES,), minval=0.0, maxval=2.0))
            return length, angle

        length, angle = jax.vmap(draw)(keys)
        return jnp.moveaxis(length, 0, -1), jnp.moveaxis(angle, 0, -1)

    def _scores(self, length: Array, angle: Array, pos: Array, planner: int) -> Array:
        """``[K, B]`` scores of the candidates for a prey planning from entity ``planner``.

        JaxMARL keeps a candidate only if it *does* touch something (the FACMAC original rejects those
        that do); we reproduce JaxMARL. ``"sum"``: every waypoint must touch some entity; the score is the
        sum of distances from the end point to the adversaries. ``"min"``: the end point must touch an
        adversary; the score is the distance to adversary 0 (JaxMARL's ``argmin`` of a scalar).
        """
        size = self.entities.size
        origin = pos[planner]  # [2, B]
        if self.score_function == "min":
            end = jnp.stack([length * jnp.cos(angle), length * jnp.sin(angle)], axis=1) + origin  # [K, 2, B]
            dist = pairwise_distance(end, pos[: self.num_adversaries])  # [K, A, B]
            reach = size[: self.num_adversaries] + size[planner]
            kept = jnp.any(dist < reach[None, :, None], axis=1)
            return jnp.where(kept, 0.0, BLOCKED) + dist[:, 0]
        kept = jnp.ones(length.shape, bool)
        reach = (size + size[planner])[None, :, None]
        dist = jnp.zeros((*length.shape[:1], pos.shape[0], length.shape[1]), pos.dtype)
        for i in range(NUM_WAYPOINTS):
            waypoint = (length / float(NUM_WAYPOINTS)) * (i + 1)
            point = jnp.stack([waypoint * jnp.cos(angle), waypoint * jnp.sin(angle)], axis=1) + origin
            dist = pairwise_distance(point, pos)  # [K, E, B]
            kept = kept & jnp.any(dist < reach, axis=1)
        return jnp.where(kept, 0.0, BLOCKED) + jnp.sum(dist[:, : self.num_adversaries], axis=1)

    def _prey_moves(self, keys: Array, state: MPEState) -> Array:
        """``[G, 2, B]`` moves of the scripted prey: the best candidate, or nothing if none is kept."""
        length, angle = self._candidates(keys)
        x, y = length * jnp.cos(angle), length * jnp.sin(angle)
        index = jnp.arange(NUM_CANDIDATES)[:, None]
        moves = []
        for planner in self._planners:
            scores = self._scores(length, angle, state.pos, planner)
            chosen = index == jnp.argmax(scores, axis=0)  # [K, B]; one-hot sums avoid a gather
            move = jnp.stack([jnp.sum(jnp.where(chosen, x, 0.0), 0), jnp.sum(jnp.where(chosen, y, 0.0), 0)])
            moves.append(jnp.where(jnp.max(scores, axis=0) < 0.0, 0.0, move))
        return jnp.stack(moves)

    def step_batch(
        self, keys: Array, state: MPEState, actions: GroupDict, params: MPEParams
    ) -> tuple[MPEState, TimeStep]:
        """JaxMARL's step: adversaries move by their actions, the prey by the script (actions ignored)."""
        move, comm = self._decode(actions)
        # The prey plan from the state before the physics step, as JaxMARL does.
        move = jnp.concatenate([move[: self.num_adversaries], self._prey_moves(keys, state)])
        pos, vel = world_step(state, move, self.entities, params, self._accel(params))
        state = dataclasses.replace(state, pos=pos, vel=vel, comm=comm, step=state.step + 1)
        return state, self._timestep(state, self.rewards(state, params), params)
