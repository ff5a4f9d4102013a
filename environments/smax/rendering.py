"""Jittable SMAX frames: each living unit is a disc in its team's colour (allies red, enemies blue) marked
with its type's letter (SMAC's shorthand: ``m`` marine, ``s`` stalker, ``z`` zealot, ...), under a health bar
and, for shielded types, a shield bar. A yellow ring marks a unit that attacked or healed in the last step;
the dead are not drawn.

Units are painted one at a time into a small patch of the canvas (``lax.scan`` over units with
``dynamic_slice``), so a frame costs units x patch pixels, not units x frame pixels, and a vmapped episode
never holds a per-unit copy of the frame.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .units import UNIT_TYPES, unit_table

Array = jax.Array
Color = tuple[float, float, float] | Array

FRAME_SIZE = 512
"""14 px per map unit on the default 32 x 32 map: a marine's disc is 21 px across, its letter 10 x 14 px."""
RADIUS_SCALE = 2.0
"""Units are drawn at twice their radius; true to scale a marine would be 10 px across."""

MAP_COLOR = (0.95, 0.95, 0.92)
BORDER_COLOR = (0.82, 0.82, 0.79)
TEAM_COLORS = np.array([[0.85, 0.2, 0.2], [0.2, 0.38, 0.85]], np.float32)
"""Allies, enemies."""
OUTLINE_COLOR = (0.1, 0.1, 0.1)
LETTER_COLOR = (1.0, 1.0, 1.0)
FIRING_COLOR = (1.0, 0.85, 0.1)
HEALTH_COLOR = (0.2, 0.75, 0.25)
SHIELD_COLOR = (0.45, 0.85, 1.0)
EMPTY_BAR_COLOR = (0.3, 0.3, 0.3)

GLYPH_ROWS = {
    "m": (".....", ".....", "XX.X.", "X.X.X", "X.X.X", "X.X.X", "X.X.X"),
    "M": ("X...X", "XX.XX", "X.X.X", "X.X.X", "X...X", "X...X", "X...X"),
    "s": (".....", ".....", ".XXXX", "X....", ".XXX.", "....X", "XXXX."),
    "z": (".....", ".....", "XXXXX", "...X.", "..X..", ".X...", "XXXXX"),
    "g": (".....", ".XXXX", "X...X", "X...X", ".XXXX", "....X", ".XXX."),
    "h": ("X....", "X....", "XXXX.", "X...X", "X...X", "X...X", "X...X"),
    "V": ("X...X", "X...X", "X...X", "X...X", "X...X", ".X.X.", "..X.."),
}
"""5 x 7 bitmaps of the unit shorthands."""
GLYPH_HEIGHT, GLYPH_WIDTH = 7, 5


def _glyph_table() -> np.ndarray:
    """``bool[num_unit_types, 7, 5]``: each unit type's letter, in ``UNIT_TYPES`` order."""
    missing = sorted({u.shorthand for u in UNIT_TYPES} - set(GLYPH_ROWS))
    if missing:
        raise ValueError(f"no glyph for unit shorthand(s) {missing}; add them to GLYPH_ROWS")
    return np.array([[[c == "X" for c in row] for row in GLYPH_ROWS[u.shorthand]] for u in UNIT_TYPES])


GLYPHS = _glyph_table()


def render_units(
    pos: Array,
    unit_type: Array,
    health: Array,
    shield: Array,
    attacking: Array,
    num_allies: int,
    map_width: float,
    map_height: float,
    frame_size: int = FRAME_SIZE,
) -> Array:
    """``uint8[frame_size, frame_size, 3]`` of one env: ``pos`` ``[N, 2]`` (allies first), the rest ``[N]``.

    ``unit_type`` indexes ``UNIT_TYPES``; ``health`` and ``shield`` are raw points (a unit is alive while its
    health is positive); ``attacking`` marks units that attacked or healed in the last step. The whole map
    is shown with a border of ``frame_size / 16`` px (room for a unit and its bars at the map's edge), y
    pointing up; the camera never moves.
    """
    if frame_size < 64:
        raise ValueError(f"frame_size must be at least 64 px, got {frame_size}")
    table = unit_table()
    num_units = pos.shape[0]
    size = frame_size
    pad = size / 16
    scale = (size - 2 * pad) / max(map_width, map_height)
    offset = (np.array([size, size]) - scale * np.array([map_width, map_height])) / 2
    # Pixel sizes grow with the frame so that a bigger frame is the same picture, sharper.
    letter = max(1, round(size / 256))
    ring = letter + 1
    bar_height = 2 * letter
    min_radius = size / 64
    radii_px = np.maximum(RADIUS_SCALE * table.radius * scale, min_radius)  # [num_unit_types]
    reach = float(radii_px.max()) + ring + letter + 2 * bar_height + 2
    patch = 2 * math.ceil(reach) + 2

    centers = jnp.stack([offset[0] + pos[:, 0] * scale, size - offset[1] - pos[:, 1] * scale], axis=-1)
    alive = health > 0
    radius = jnp.asarray(radii_px)[unit_type]
    health_frac = jnp.clip(health / jnp.asarray(table.health)[unit_type], 0.0, 1.0)
    max_shield = jnp.asarray(table.shield)[unit_type]
    shield_frac = jnp.clip(shield / jnp.maximum(max_shield, 1e-6), 0.0, 1.0)
    is_enemy = np.arange(num_units) >= num_allies
    team_color = jnp.asarray(np.where(is_enemy[:, None], TEAM_COLORS[1], TEAM_COLORS[0]))

    # Built from iotas, not a NumPy constant: a frame-sized literal would bloat the program and its compile.
    x_lo, y_lo = np.floor(offset).astype(int)
    pixels = jnp.arange(size)
    in_x = (pixels >= x_lo) & (pixels < size - x_lo)
    in_y = (pixels >= y_lo) & (pixels < size - y_lo)
    inside_map = in_y[:, None, None] & in_x[None, :, None]
    map_color, border_color = jnp.asarray(MAP_COLOR, jnp.float32), jnp.asarray(BORDER_COLOR, jnp.float32)
    canvas = jnp.where(inside_map, map_color, border_color)

    def window(center: Array) -> tuple[Array, Array, Array, Array]:
        """Top-left corner of a unit's patch (kept inside the frame) and its pixel-centre coordinates."""
        x0 = jnp.clip(jnp.floor(center[0]).astype(jnp.int32) - patch // 2, 0, size - patch)
        y0 = jnp.clip(jnp.floor(center[1]).astype(jnp.int32) - patch // 2, 0, size - patch)
        xs = (x0 + jnp.arange(patch) + 0.5)[None, :]
        ys = (y0 + jnp.arange(patch) + 0.5)[:, None]
        return x0, y0, xs, ys

    def draw(canvas: Array, sprite: tuple[Array, ...]) -> tuple[Array, None]:
        """Paint one unit's body or, when ``is_bars``, its bars into the patch around it."""
        is_bars, center, r, glyph, color, live, fired, health_left, shield_left, shielded = sprite
        x0, y0, xs, ys = window(center)
        body, bars = live & ~is_bars, live & is_bars
        dist = jnp.sqrt((xs - center[0]) ** 2 + (ys - center[1]) ** 2)
        disc = body & (dist <= r)
        # The letter sits on whole pixels so its strokes stay crisp. One-hot products read the bitmap
        # without a gather, which keeps the vmapped program quick to compile.
        left = jnp.round(center[0] - GLYPH_WIDTH * letter / 2)
        top = jnp.round(center[1] - GLYPH_HEIGHT * letter / 2)
        col = jnp.floor((xs[0] - left) / letter)
        row = jnp.floor((ys[:, 0] - top) / letter)
        row_hot = (row[:, None] == jnp.arange(GLYPH_HEIGHT)).astype(jnp.float32)  # [P, 7]
        col_hot = (col[:, None] == jnp.arange(GLYPH_WIDTH)).astype(jnp.float32)  # [P, 5]
        stroke = (row_hot @ glyph @ col_hot.T) > 0.5  # [P, P]

        bar_left = jnp.round(center[0] - r)
        width = jnp.round(2 * r)
        across = (xs >= bar_left) & (xs < bar_left + width)
        health_top = jnp.round(center[1] - r) - letter - bar_height
        shield_top = health_top - bar_height - 1
        in_health = bars & across & (ys >= health_top) & (ys < health_top + bar_height)
        in_shield = bars & shielded & across & (ys >= shield_top) & (ys < shield_top + bar_height)

        layers: list[tuple[Array, Color]] = [
            (body & fired & (dist <= r + ring), FIRING_COLOR),
            (disc, color),
            (disc & (dist > r - letter), OUTLINE_COLOR),
            (disc & stroke, LETTER_COLOR),
            (in_health, EMPTY_BAR_COLOR),
            (in_health & (xs < bar_left + health_left * width), HEALTH_COLOR),
            (in_shield, EMPTY_BAR_COLOR),
            (in_shield & (xs < bar_left + shield_left * width), SHIELD_COLOR),
        ]
        region = jax.lax.dynamic_slice(canvas, (y0, x0, 0), (patch, patch, 3))
        for mask, paint in layers:
            region = jnp.where(mask[..., None], jnp.asarray(paint, jnp.float32), region)
        return jax.lax.dynamic_update_slice(canvas, region, (y0, x0, 0)), None

    # Every body first, then every unit's bars, so a neighbour never hides how hurt a unit is.
    per_unit = (
        centers, radius, jnp.asarray(GLYPHS, jnp.float32)[unit_type], team_color, alive, attacking,
        health_frac, shield_frac, max_shield > 0,
    )
    sprites = (
        jnp.repeat(jnp.array([False, True]), num_units),
        *(jnp.concatenate([x, x]) for x in per_unit),
    )
    canvas, _ = jax.lax.scan(draw, canvas, sprites)
    return (jnp.clip(canvas, 0.0, 1.0) * 255).astype(jnp.uint8)
