"""Jittable SMAX frames: units as discs (allies red, enemies blue) whose dark core shrinks with health."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.render.draw import draw_circles

Array = jax.Array

FRAME_SIZE = 256
ALLY_COLORS = np.array([[0.95, 0.6, 0.6], [0.75, 0.1, 0.1]], np.float32)
ENEMY_COLORS = np.array([[0.6, 0.7, 0.95], [0.1, 0.25, 0.75]], np.float32)
FIRING_COLOR = np.array([1.0, 0.85, 0.1], np.float32)


def render_units(
    pos: Array,
    radius: Array,
    health_frac: Array,
    alive: Array,
    num_allies: int,
    map_width: float,
    map_height: float,
    attacking: Array,
    frame_size: int = FRAME_SIZE,
) -> Array:
    """``uint8[frame_size, frame_size, 3]`` of one env: ``pos`` ``[N, 2]``; the rest ``[N]``.

    Each living unit is a light disc (twice its radius) (yellow rim while attacking) with a dark core whose
    area is its health fraction; the dead are not drawn. The map fills the frame, y pointing up.
    """
    num_units = pos.shape[0]
    scale = frame_size / max(map_width, map_height)
    centers = jnp.stack([pos[:, 0] * scale, frame_size - pos[:, 1] * scale], axis=-1)
    # Units are drawn at twice their radius (at least 4 px): true to scale they are specks.
    drawn = jnp.maximum(2.0 * radius * scale, 4.0)
    outer = jnp.where(alive, drawn, 0.0)
    inner = jnp.where(alive, drawn * 0.8 * jnp.sqrt(jnp.clip(health_frac, 0.0, 1.0)), 0.0)
    rim = jnp.where(alive & attacking, drawn + 2.0, 0.0)
    team = np.arange(num_units) >= num_allies
    light = np.where(team[:, None], ENEMY_COLORS[0], ALLY_COLORS[0])
    dark = np.where(team[:, None], ENEMY_COLORS[1], ALLY_COLORS[1])
    firing = np.broadcast_to(FIRING_COLOR, (num_units, 3))
    return draw_circles(
        jnp.concatenate([centers, centers, centers]),
        jnp.concatenate([rim, outer, inner]),
        jnp.asarray(np.concatenate([firing, light, dark])),
        frame_size,
        background=(0.93, 0.93, 0.9),
    )
