"""The rules of SMAX on batch-minor arrays (env batch last): movement, shots and heals, shields,
deaths and collisions, over one world sub-step. Pure functions; ``smax.py`` composes them.

Shapes: ``N`` units (allies first), ``B`` envs. Positions are ``[N, 2, B]``; per-unit values ``[N, B]``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

Array = jax.Array

NUM_MOVES = 4
MOVE_DIRECTIONS = jnp.array([[0.0, 1.0], [0.0, -1.0], [1.0, 0.0], [-1.0, 0.0]], jnp.float32)
"""North, south, east, west (SMAC's order for actions 2..5)."""


@struct.dataclass
class UnitStats:
    """Per-unit statistics ``[N, B]`` (or ``[N, 1]`` for fixed scenarios), looked up from unit types."""

    health: Array
    shield: Array
    damage: Array
    attack_range: Array
    sight_range: Array
    speed: Array
    cooldown: Array
    radius: Array
    heal_rate: Array
    heals: Array


@struct.dataclass
class Combat:
    """What changes during the sub-steps of one agent step."""

    pos: Array
    health: Array
    shield: Array
    cooldown: Array
    since_damage: Array
    """Seconds since the unit last took damage (shields regenerate after a delay)."""
    damage_taken: Array
    """Health plus shield removed by shots during this agent step (heals not counted)."""


def pairwise_offsets(pos: Array) -> Array:
    """``[N, N, 2, B]``: ``pos[j] - pos[i]`` at ``[i, j]``."""
    return pos[None, :] - pos[:, None]


def norm2(offsets: Array) -> Array:
    """Euclidean norm over the coordinate axis (axis -2)."""
    return jnp.sqrt(jnp.sum(offsets * offsets, axis=-2))


def clip_to_map(pos: Array, width: float, height: float) -> Array:
    """Keep unit centres inside ``[0, width] x [0, height]``."""
    upper = jnp.array([width, height], jnp.float32)[:, None]
    return jnp.clip(pos, 0.0, upper)


def separate(pos: Array, alive: Array, radius: Array, width: float, height: float) -> Array:
    """Push overlapping living units apart: each pair moves half its overlap along the line between them."""
    offsets = pairwise_offsets(pos)  # [i, j] = pos[j] - pos[i]
    num_units = pos.shape[0]
    dist = norm2(offsets) + jnp.eye(num_units)[:, :, None] + 1e-6
    reach = radius[:, None] + radius[None, :]
    both = alive[:, None] & alive[None, :]
    overlap = jnp.where(both, jax.nn.relu(reach / dist - 1.0), 0.0)  # [N, N, B]
    push = -0.5 * jnp.sum(offsets * overlap[:, :, None], axis=1)
    moved = jnp.where(alive[:, None], pos + push, pos)
    return clip_to_map(moved, width, height)


def sub_step(
    combat: Combat,
    move: Array,
    target: Array,
    stats: UnitStats,
    jitter: Array,
    dt: Array | float,
    regen_rate: Array | float,
    regen_delay: Array | float,
    width: float,
    height: float,
) -> Combat:
    """One world sub-step of ``dt`` seconds.

    ``move`` is ``[N, 2, B]`` (unit vectors or zero), ``target`` a ``[N, N, B]`` one-hot of each unit's
    target (all zero for none), ``jitter`` ``[N, B]`` seconds added to a cooldown when a shot is fired.
    Order: units move; every shot is resolved from the same positions (so mutual kills happen);
    shields absorb damage before health; heals apply to units still alive; shields regenerate; the
    living are pushed apart.
    """
    alive = combat.health > 0
    pos = combat.pos + move * (stats.speed * dt * alive)[:, None]
    pos = clip_to_map(pos, width, height)

    target_pos = jnp.einsum("ijb,jkb->ikb", target, pos)
    in_range = norm2(target_pos - pos) < stats.attack_range
    target_alive = jnp.einsum("ijb,jb->ib", target, alive.astype(jnp.float32)) > 0
    target_hurt = jnp.einsum("ijb,jb->ib", target, (combat.health < stats.health).astype(jnp.float32)) > 0
    ready = combat.cooldown <= 0.0
    fires = alive & target_alive & in_range & ready & (~stats.heals | target_hurt)

    shot = jnp.where(fires & ~stats.heals, stats.damage, 0.0)
    heal = jnp.where(fires & stats.heals, stats.heal_rate * dt, 0.0)
    incoming = jnp.einsum("ijb,ib->jb", target, shot)
    healing = jnp.einsum("ijb,ib->jb", target, heal)

    absorbed = jnp.minimum(combat.shield, incoming)
    shield = combat.shield - absorbed
    health = jnp.maximum(combat.health - (incoming - absorbed), 0.0)
    taken = (combat.health + combat.shield) - (health + shield)
    health = jnp.where(health > 0, jnp.minimum(health + healing, stats.health), health)

    cooldown = jnp.where(fires & ~stats.heals, stats.cooldown + jitter, combat.cooldown - dt)
    since_damage = jnp.where(incoming > 0, 0.0, combat.since_damage + dt)
    regen = (since_damage >= regen_delay) & (health > 0)
    shield = jnp.where(regen, jnp.minimum(shield + regen_rate * dt, stats.shield), shield)

    pos = separate(pos, health > 0, stats.radius, width, height)
    return Combat(pos, health, shield, cooldown, since_damage, combat.damage_taken + taken)
