"""Rendering of particle worlds in mpe2's look: coloured discs with dark outlines on white."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.render.draw import draw_circles, world_to_pixels

Array = jax.Array

FRAME_SIZE = 256
COLOR_SCALE = 200.0 / 255.0
"""mpe2 paints ``color * 200`` in 0..255 units."""


def render_world(pos: Array, sizes: np.ndarray, colors: np.ndarray, frame_size: int = FRAME_SIZE) -> Array:
    """Frame of one env: ``pos`` is ``[E, 2]``; the camera fits the farthest entity, as mpe2's does."""
    camera_range = jnp.maximum(jnp.max(jnp.abs(pos)), 1.0)
    centers = world_to_pixels(pos, camera_range, frame_size)
    radii = jnp.asarray(sizes) * 0.9 * (frame_size / 2) / camera_range
    return draw_circles(centers, radii, jnp.asarray(colors) * COLOR_SCALE, frame_size)
