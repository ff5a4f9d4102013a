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
MIN_CAMERA_RANGE = 1.0
"""The camera shows at least ``[-1, 1]²``, where mpe2's scenarios place their entities, so the view only
zooms out when something leaves that square and does not zoom in on a tight cluster."""


def camera_range(pos: Array, sizes: np.ndarray | Array, visible: Array | None = None) -> Array:
    """Half-width of the square view: the farthest visible entity's edge (``|x|`` or ``|y|`` plus its radius).

    mpe2 fits its camera to the farthest entity centre, which can leave part of a large disc outside the
    frame; counting the radius keeps every disc whole. ``pos`` is ``[E, 2]``, ``sizes`` ``[E]``.
    """
    reach = jnp.max(jnp.abs(pos), axis=-1) + jnp.asarray(sizes)
    if visible is not None:
        reach = jnp.where(visible, reach, 0.0)
    return jnp.maximum(jnp.max(reach), MIN_CAMERA_RANGE)


def render_world(
    pos: Array,
    sizes: np.ndarray | Array,
    colors: np.ndarray | Array,
    frame_size: int = FRAME_SIZE,
    visible: Array | None = None,
) -> Array:
    """``uint8[frame_size, frame_size, 3]`` frame of one env; ``pos`` is ``[E, 2]``, ``sizes`` ``[E]``.

    The camera is chosen per frame (as mpe2's is) to hold every visible entity whole, with a 5% margin
    on each side; entities where ``visible`` (``[E]`` bool) is False are neither drawn nor framed.
    """
    view = camera_range(pos, sizes, visible)
    centers = world_to_pixels(pos, view, frame_size)
    radii = jnp.asarray(sizes) * 0.9 * (frame_size / 2) / view
    if visible is not None:
        radii = jnp.where(visible, radii, -1.0)  # a negative radius covers no pixel
    return draw_circles(centers, radii, jnp.asarray(colors) * COLOR_SCALE, frame_size)


def draw_comm_strip(frame: Array, comm: Array, speakers: np.ndarray, colors: np.ndarray) -> Array:
    """Overlay each speaking agent's communication vector as a row of cells at the bottom-left.

    ``comm`` is ``[N, dim_c]`` (one env); ``speakers`` the static indices of non-silent agents. A cell
    goes from white (0) to the agent's colour (1), so a one-hot message reads as one filled cell; mpe2
    prints the message as text, which does not jit.
    """
    if len(speakers) == 0:
        return frame
    size = frame.shape[0]
    dim_c = comm.shape[1]
    cell = max(3, min(12, (size // 2) // max(dim_c, 1)))
    margin = 4
    image = frame.astype(jnp.float32) / 255.0
    ys = np.arange(size)[:, None]
    xs = np.arange(size)[None, :]
    for row, agent in enumerate(speakers):
        top = size - margin - (row + 1) * (cell + 2)
        for channel in range(dim_c):
            left = margin + channel * (cell + 1)
            inside = (ys >= top) & (ys < top + cell) & (xs >= left) & (xs < left + cell)
            edge = inside & ((ys == top) | (ys == top + cell - 1) | (xs == left) | (xs == left + cell - 1))
            value = jnp.clip(comm[agent, channel], 0.0, 1.0)
            fill = 1.0 - value * (1.0 - jnp.asarray(colors[agent]) * COLOR_SCALE)
            image = jnp.where(inside[..., None], fill, image)
            image = jnp.where(edge[..., None], 0.0, image)
    return (image * 255.0).astype(jnp.uint8)
