"""Drawing helpers in JAX: frames render inside ``jit`` and ``vmap`` (a whole episode in one call)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


def draw_circles(
    centers_px: Array,
    radii_px: Array,
    colors: Array,
    size: int,
    background: tuple[float, float, float] = (1.0, 1.0, 1.0),
    outline_px: float = 1.0,
) -> Array:
    """Filled circles with a dark outline on a square canvas; later circles are drawn on top.

    Args:
        centers_px: ``[K, 2]`` pixel coordinates (x right, y down).
        radii_px: ``[K]`` radii in pixels.
        colors: ``[K, 3]`` RGB in ``[0, 1]``.
        size: canvas side in pixels.
    Returns:
        ``uint8[size, size, 3]``.
    """
    coords = jnp.arange(size, dtype=jnp.float32) + 0.5
    dx = coords[None, None, :] - centers_px[:, 0, None, None]  # [K, 1, W]
    dy = coords[None, :, None] - centers_px[:, 1, None, None]  # [K, H, 1]
    dist = jnp.sqrt(dx * dx + dy * dy)  # [K, H, W]
    inside = dist <= radii_px[:, None, None]
    order = jnp.arange(centers_px.shape[0])[:, None, None]
    top = jnp.max(jnp.where(inside, order, -1), axis=0)  # [H, W]
    covered = top >= 0
    top_index = jnp.maximum(top, 0)
    fill = colors[top_index]  # [H, W, 3]
    top_dist = jnp.take_along_axis(dist, top_index[None], axis=0)[0]
    top_radius = radii_px[top_index]
    edge = covered & (top_dist >= top_radius - outline_px)
    image = jnp.where(covered[..., None], fill, jnp.asarray(background, jnp.float32))
    image = jnp.where(edge[..., None], 0.0, image)
    return (jnp.clip(image, 0.0, 1.0) * 255).astype(jnp.uint8)


def world_to_pixels(pos: Array, camera_range: Array, size: int, margin: float = 0.9) -> Array:
    """Map world ``[K, 2]`` positions in ``[-camera_range, camera_range]`` to pixels, y pointing up."""
    scale = margin * (size / 2) / camera_range
    x = pos[:, 0] * scale + size / 2
    y = -pos[:, 1] * scale + size / 2
    return jnp.stack([x, y], axis=-1)


def as_uint8_frames(frames: Array | np.ndarray) -> np.ndarray:
    """Frames as a host ``uint8[T, H, W, 3]`` array."""
    frames = np.asarray(frames)
    if frames.ndim == 3:
        frames = frames[None]
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"expected uint8 frames [T, H, W, 3], got {frames.dtype} {frames.shape}")
    return frames
