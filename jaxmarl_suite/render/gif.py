"""Writing frames to animated GIFs (Pillow; no video codec needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from jaxmarl_suite.render.draw import as_uint8_frames


def write_gif(path: str | Path, frames: np.ndarray, fps: float = 10.0) -> Path:
    """Write ``uint8[T, H, W, 3]`` frames to ``path`` as a looping GIF and return the path."""
    frames = as_uint8_frames(frames)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images = [Image.fromarray(frame) for frame in frames]
    duration_ms = max(int(round(1000.0 / fps)), 20)
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration_ms, loop=0)
    return path
