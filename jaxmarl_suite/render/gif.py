"""Writing frames to animated GIFs (Pillow; no video codec needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from jaxmarl_suite.render.draw import as_uint8_frames

MAX_GIF_FPS = 50.0
"""GIF delays are whole centiseconds, and browsers slow any delay under 20 ms down to 100 ms."""


def write_gif(path: str | Path, frames: np.ndarray, fps: float) -> Path:
    """Write ``uint8[T, H, W, 3]`` frames to ``path`` as a looping GIF and return the path.

    ``fps`` is required so that no caller silently plays an env at someone else's speed: pass the env's
    ``render_fps``. Each frame lasts ``1000 / fps`` ms, rounded down to GIF's 10 ms ticks.
    """
    if not 0 < fps <= MAX_GIF_FPS:
        raise ValueError(f"fps must be in (0, {MAX_GIF_FPS:g}] for a GIF, got {fps!r}")
    frames = as_uint8_frames(frames)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [Image.fromarray(frame) for frame in frames]
    duration_ms = 1000.0 / fps
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration_ms, loop=0)
    return path
