"""Writing frames to animated GIFs (Pillow; no video codec needed), scaled to a legible size and captioned
with the step and the running return."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from jaxmarl_suite.render.caption import caption_ink, caption_scale, caption_text
from jaxmarl_suite.render.draw import as_uint8_frames

MAX_GIF_FPS = 50.0
"""GIF delays are whole centiseconds, and browsers slow any delay under 20 ms down to 100 ms."""
MIN_GIF_SIDE = 300
"""By default a GIF shows an env's frame scaled by the smallest whole factor that makes its shorter side at
least this many pixels."""
CAPTION_BACKGROUND = (24, 24, 24)
CAPTION_INK = (240, 240, 240)
_FRAME_COLORS = 254
"""Palette entries a frame may use; the last two of GIF's 256 are the caption's."""


def check_gif_options(size: int | None, fps: float | None) -> None:
    """Raise ``ValueError`` (one line) unless ``size`` is None or a positive int and ``fps`` is None or in
    ``(0, MAX_GIF_FPS]`` (None: the default, checked where it is known)."""
    if size is not None and (isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1):
        raise ValueError(f"size must be a positive number of pixels, got {size!r}")
    if fps is not None and not 0 < fps <= MAX_GIF_FPS:
        raise ValueError(f"fps must be in (0, {MAX_GIF_FPS:g}] for a GIF, got {fps!r}")


def gif_frame_size(height: int, width: int, size: int | None = None) -> tuple[int, int]:
    """``(height, width)`` of an env frame of ``height x width`` pixels in a GIF, caption excluded.

    With ``size``, the shorter side becomes ``size`` pixels. By default the frame is scaled by the
    smallest whole factor that brings its shorter side to ``MIN_GIF_SIDE`` or more (1 for frames that
    are already that large), so every frame pixel becomes an equal square block.
    """
    shorter = min(height, width)
    if size is None:
        factor = max(1, -(-MIN_GIF_SIDE // shorter))
        return height * factor, width * factor
    return max(1, round(height * size / shorter)), max(1, round(width * size / shorter))


def write_gif(
    path: str | Path, frames: np.ndarray, fps: float, size: int | None = None,
    returns: np.ndarray | None = None,
) -> Path:
    """Write ``uint8[T, H, W, 3]`` frames to ``path`` as a looping GIF and return the path.

    ``fps`` is required so that no caller silently plays an env at someone else's speed: pass the env's
    ``render_fps``. Each frame lasts ``1000 / fps`` ms, rounded down to GIF's 10 ms ticks. Frames are
    scaled with nearest-neighbour sampling to ``gif_frame_size(H, W, size)``. With ``returns`` (``[T]``,
    the running per-agent mean return at each frame), a strip under each frame reads ``step t  return r``,
    ``t`` being the frame's index.
    """
    check_gif_options(size, fps)
    frames = as_uint8_frames(frames)
    if returns is not None and len(returns) != len(frames):
        raise ValueError(f"returns has {len(returns)} entries for {len(frames)} frames")
    height, width = frames.shape[1:3]
    out_height, out_width = gif_frame_size(height, width, size)
    # Nearest neighbour: output pixel i samples the input pixel under its centre (for a whole factor k,
    # i // k, so every input pixel becomes a k x k block).
    rows = ((np.arange(out_height) + 0.5) * height / out_height).astype(np.int64)
    cols = ((np.arange(out_width) + 0.5) * width / out_width).astype(np.int64)
    texts = [] if returns is None else [caption_text(t, float(value)) for t, value in enumerate(returns)]
    scale = caption_scale(out_width, texts)
    images = []
    for step, frame in enumerate(frames):
        # Palette indices are chosen on the small frame and then scaled: quantising the scaled frame
        # costs the square of the factor more, and a frame's few flat colours are kept exactly.
        small = Image.fromarray(frame).quantize(colors=_FRAME_COLORS, dither=Image.Dither.NONE)
        indices = np.asarray(small)[rows][:, cols]
        palette = (small.getpalette() or [])[: 3 * _FRAME_COLORS]
        palette += [0] * (3 * _FRAME_COLORS - len(palette))
        if texts:
            ink = caption_ink(texts[step], out_width, scale)
            indices = np.concatenate([indices, np.where(ink, _FRAME_COLORS + 1, _FRAME_COLORS)])
            palette += [*CAPTION_BACKGROUND, *CAPTION_INK]
        image = Image.fromarray(indices.astype(np.uint8), "P")
        image.putpalette(palette)
        images.append(image)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    duration_ms = 1000.0 / fps
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration_ms, loop=0)
    return path

