"""Particle-world physics shared by every MPE scenario, written batch-minor.

Every dynamic array ends in the env batch axis ``B``: positions are ``[E, 2, B]`` for ``E`` entities
(agents first, then landmarks, as in mpe2's ``world.entities``). Static entity properties (size,
mass, whether it moves or collides) are numpy arrays on the scenario object, so they fold into the
compiled program as constants.

The update order follows mpe2's ``World.step`` exactly: action forces, pairwise soft contact forces,
then ``pos += vel * dt`` with the *old* velocity, then damping, then ``vel += force / mass * dt``,
then the speed cap.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.types import EnvParams

Array = jax.Array


@struct.dataclass
class MPEParams(EnvParams):
    """Physics constants of the particle world (mpe2's ``World`` defaults)."""

    max_steps: int = 25
    """Episode length in steps (mpe2's ``max_cycles``)."""
    dt: float = 0.1
    """Integration time step."""
    damping: float = 0.25
    """Fraction of velocity lost per step."""
    contact_force: float = 100.0
    """Stiffness of the soft contact between colliding entities."""
    contact_margin: float = 1e-3
    """Softness of the contact (the softplus temperature)."""
    accel: float = 5.0
    """Action sensitivity: force per unit of movement action (mpe2's default ``sensitivity``)."""


@struct.dataclass
class MPEState:
    """Batch-minor state of a particle world."""

    pos: Array
    """``[E, 2, B]`` positions, agents then landmarks."""
    vel: Array
    """``[E, 2, B]`` velocities."""
    comm: Array
    """``[N, dim_c, B]`` communication state of the agents (zeros for silent agents)."""
    step: Array
    """``[B]`` int32 steps taken in the current episode."""


@dataclass(frozen=True)
class EntityTable:
    """Static per-entity properties, agents first. Arrays are numpy so they compile to constants."""

    size: np.ndarray
    movable: np.ndarray
    collide: np.ndarray
    mass: np.ndarray
    max_speed: np.ndarray
    """``inf`` where an entity has no speed cap."""

    @property
    def num_entities(self) -> int:
        """Number of entities, agents and landmarks together."""
        return len(self.size)


def discrete_move(actions: Array) -> Array:
    """mpe2's discrete movement: 0 no-op, 1 left, 2 right, 3 down, 4 up. ``[N, B]`` -> ``[N, 2, B]``.

    Values outside 0..4 act as no-op; the checked wrapper rejects them at the boundary.
    """
    x = (actions == 2).astype(jnp.float32) - (actions == 1).astype(jnp.float32)
    y = (actions == 4).astype(jnp.float32) - (actions == 3).astype(jnp.float32)
    return jnp.stack([x, y], axis=1)


def continuous_move(actions: Array) -> Array:
    """mpe2's continuous movement from a ``[N, 5, B]`` action in ``[0, 1]`` (clipped, as mpe2 does)."""
    actions = jnp.clip(actions, 0.0, 1.0)
    return jnp.stack([actions[:, 2] - actions[:, 1], actions[:, 4] - actions[:, 3]], axis=1)


def contact_forces(pos: Array, table: EntityTable, params: MPEParams) -> Array:
    """Sum of pairwise soft contact forces on each entity, ``[E, 2, B]`` (zero for non-colliders)."""
    colliders = np.flatnonzero(table.collide)
    forces = jnp.zeros_like(pos)
    if len(colliders) < 2:
        return forces
    p = pos[colliders]  # [C, 2, B]
    delta = p[:, None] - p[None, :]  # [C, C, 2, B]
    dist = jnp.sqrt(jnp.sum(delta * delta, axis=2))  # [C, C, B]
    not_self = ~np.eye(len(colliders), dtype=bool)[:, :, None]
    safe_dist = jnp.where(not_self, dist, 1.0)
    size = table.size[colliders]
    dist_min = (size[:, None] + size[None, :])[:, :, None]
    k = params.contact_margin
    penetration = jnp.logaddexp(0.0, -(safe_dist - dist_min) / k) * k
    magnitude = jnp.where(not_self, params.contact_force * penetration / safe_dist, 0.0)
    on_collider = jnp.sum(delta * magnitude[:, :, None], axis=1)  # [C, 2, B]
    on_collider = on_collider * table.movable[colliders][:, None, None]
    return forces.at[colliders].set(on_collider)


def integrate(
    pos: Array, vel: Array, force: Array, table: EntityTable, params: MPEParams
) -> tuple[Array, Array]:
    """One mpe2 integration step for all entities; immovable entities keep their position and velocity."""
    movable = table.movable[:, None, None]
    new_pos = pos + vel * params.dt
    new_vel = vel * (1.0 - params.damping) + force / table.mass[:, None, None] * params.dt
    capped = np.isfinite(table.max_speed)
    if capped.any():
        speed = jnp.sqrt(jnp.sum(new_vel * new_vel, axis=1, keepdims=True))
        cap = np.where(capped, table.max_speed, np.inf)[:, None, None]
        new_vel = jnp.where(speed > cap, new_vel / jnp.maximum(speed, 1e-30) * cap, new_vel)
    return jnp.where(movable, new_pos, pos), jnp.where(movable, new_vel, vel)


def world_step(
    state: MPEState, move: Array, table: EntityTable, params: MPEParams, accel: Array | float
) -> tuple[Array, Array]:
    """Advance positions and velocities one step given agents' unit moves ``[N, 2, B]``.

    ``accel`` scales the moves into forces (a scalar, or ``[N, 1, 1]`` per agent).
    """
    num_agents = move.shape[0]
    force = jnp.zeros_like(state.pos).at[:num_agents].set(move * accel)
    force = force + contact_forces(state.pos, table, params)
    return integrate(state.pos, state.vel, force, table, params)


def pairwise_distance(a: Array, b: Array) -> Array:
    """Distances between ``a`` ``[I, 2, B]`` and ``b`` ``[J, 2, B]``: ``[I, J, B]``."""
    delta = a[:, None] - b[None, :]
    return jnp.sqrt(jnp.sum(delta * delta, axis=2))


def others_index(num_agents: int) -> np.ndarray:
    """``[N, N-1]``: for agent ``i`` the other agents in order, as mpe2 lists them in observations."""
    return np.array([[j for j in range(num_agents) if j != i] for i in range(num_agents)], dtype=np.int32)
