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
    extra: dict[str, Array] = struct.field(default_factory=dict)
    """Scenario state (goals, keys, ...), each array ending in the batch axis."""


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


def _take(x: Array, index: np.ndarray) -> Array:
    """``x[index]`` along axis 0, as a slice when ``index`` is a contiguous range (XLA gathers are slower)."""
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return x[int(index[0]) : int(index[0]) + len(index)]
    return x[index]


def _put(x: Array, index: np.ndarray, values: Array) -> Array:
    """``x`` with rows ``index`` replaced by ``values``, by concatenation when ``index`` is contiguous."""
    if len(index) == 0:
        return x
    start, stop = int(index[0]), int(index[0]) + len(index)
    if np.array_equal(index, np.arange(start, stop)):
        return jnp.concatenate([x[:start], values, x[stop:]], axis=0)
    return x.at[index].set(values)


def contact_forces(pos: Array, table: EntityTable, params: MPEParams) -> tuple[np.ndarray, Array]:
    """Soft contact forces on the movable colliders: ``(indices, [C, 2, B])``.

    The mask is applied to the 4-D force tensor rather than to the ``[C, C, B]`` magnitudes: on XLA:CPU
    the latter form blocks fusion and measured 2x slower for the whole simple_spread step.
    """
    colliders = np.flatnonzero(table.collide)
    receivers = np.flatnonzero(table.collide & table.movable)
    if len(colliders) < 2 or len(receivers) == 0:
        return receivers, jnp.zeros((len(receivers), *pos.shape[1:]), pos.dtype)
    p = _take(pos, colliders)  # [C, 2, B]
    delta = p[:, None] - p[None, :]  # [C, C, 2, B]
    not_self = ~np.eye(len(colliders), dtype=bool)
    dist = jnp.where(not_self[:, :, None], jnp.sqrt(jnp.sum(delta * delta, axis=2)), 1.0)  # [C, C, B]
    size = table.size[colliders]
    dist_min = (size[:, None] + size[None, :])[:, :, None]
    k = params.contact_margin
    penetration = jnp.logaddexp(0.0, -(dist - dist_min) / k) * k
    force = params.contact_force * delta * (penetration / dist)[:, :, None]
    force = jnp.where(not_self[:, :, None, None], force, 0.0)
    on_collider = jnp.sum(force, axis=1)  # [C, 2, B]
    return receivers, _take(on_collider, np.searchsorted(colliders, receivers))


def integrate(
    pos: Array, vel: Array, force: Array, table: EntityTable, params: MPEParams
) -> tuple[Array, Array]:
    """One mpe2 integration step of the movable entities; ``force`` is ``[M, 2, B]`` for those only."""
    movable = np.flatnonzero(table.movable)
    moving_pos, moving_vel = _take(pos, movable), _take(vel, movable)
    new_pos = moving_pos + moving_vel * params.dt
    new_vel = moving_vel * (1.0 - params.damping) + force / table.mass[movable][:, None, None] * params.dt
    max_speed = table.max_speed[movable]
    if np.isfinite(max_speed).any():
        speed = jnp.sqrt(jnp.sum(new_vel * new_vel, axis=1, keepdims=True))
        cap = max_speed[:, None, None]
        new_vel = jnp.where(speed > cap, new_vel / jnp.maximum(speed, 1e-30) * cap, new_vel)
    return _put(pos, movable, new_pos), _put(vel, movable, new_vel)


def world_step(
    state: MPEState, move: Array, table: EntityTable, params: MPEParams, accel: Array | float
) -> tuple[Array, Array]:
    """Advance positions and velocities one step given agents' unit moves ``[N, 2, B]``.

    ``accel`` scales the moves into forces (a scalar, or ``[N, 1, 1]`` per agent). Agents are the first
    ``N`` entities; every force is gathered onto the movable entities only.
    """
    num_agents = move.shape[0]
    movable = np.flatnonzero(table.movable)
    full = jnp.concatenate([move * accel, jnp.zeros((table.num_entities - num_agents, *move.shape[1:]))])
    force = _take(full, movable)
    receivers, contact = contact_forces(state.pos, table, params)
    if len(receivers):
        rows = np.searchsorted(movable, receivers)  # receivers are movable, so they are among the rows
        force = _put(force, rows, _take(force, rows) + contact)
    return integrate(state.pos, state.vel, force, table, params)


def pairwise_distance(a: Array, b: Array) -> Array:
    """Distances between ``a`` ``[I, 2, B]`` and ``b`` ``[J, 2, B]``: ``[I, J, B]``."""
    delta = a[:, None] - b[None, :]
    return jnp.sqrt(jnp.sum(delta * delta, axis=2))


def others_index(num_agents: int) -> np.ndarray:
    """``[N, N-1]``: for agent ``i`` the other agents in order, as mpe2 lists them in observations."""
    return np.array([[j for j in range(num_agents) if j != i] for i in range(num_agents)], dtype=np.int32)
