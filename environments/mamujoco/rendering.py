"""Jittable views of a MaMuJoCo robot, and MuJoCo's own renderer where OpenGL is available.

``render_frame`` runs MJX's kinematics on the state's ``qpos`` and draws every geom projected onto a plane:
a side view (x right, z up) for the walking robots, a top view (x right, y up) for Reacher and the
swimmers. Capsules and cylinders are thick segments with round ends, spheres discs, boxes and ellipsoids
approximated by their longest axis; each pixel shows the nearest geom along the view axis, with a dark
outline. The camera follows the root body; the floor's tick marks (side view) or tiles (top view) are
fixed in the world, so they scroll as the robot moves. All of it is ``jnp`` over pixels, so an episode
renders in one vmapped call.
"""

from __future__ import annotations

import importlib
import weakref
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

FRAME_SIZE = 256
"""Frame width and height in pixels."""
TOP_VIEW = frozenset({"Reacher", "Swimmer", "ManySegmentSwimmer"})
"""Scenarios seen from above; the others from the side."""
SKY = np.array([0.93, 0.95, 0.98], np.float32)
GROUND = np.array([0.78, 0.74, 0.66], np.float32)
TILE = np.array([0.86, 0.86, 0.84], np.float32)
TICK = np.array([0.45, 0.42, 0.36], np.float32)
OUTLINE_PX = 1.5
"""Outline width in pixels."""
MIN_RADIUS_PX = 3.0
"""Thinnest drawn geom radius in pixels, so a long robot zoomed out (ManySegmentSwimmer) stays visible."""

_SPHERE, _CAPSULE, _ELLIPSOID, _CYLINDER, _BOX = 2, 3, 4, 5, 6


def _view_axes(scenario: str) -> tuple[int, int, int]:
    """(horizontal, vertical, depth) world axes of the view; depth grows away from the camera."""
    return (0, 1, 2) if scenario in TOP_VIEW else (0, 2, 1)


VIEW_HALF_WIDTH = {
    "HalfCheetah": 1.6,
    "Hopper": 1.1,
    "Walker2d": 1.2,
    "Ant": 1.6,
    "Humanoid": 1.3,
    "HumanoidStandup": 1.3,
    "Reacher": 0.36,
    "Swimmer": 2.2,
}
"""Half the frame's width in metres, per scenario (a fixed scale); the many-segment robots are sized from
their initial pose, since their length depends on the segment count."""
_DEFAULT_RGBA = np.array([0.5, 0.5, 0.5, 1.0], np.float32)
"""MuJoCo's default geom colour: a geom left at it shows its material's colour instead."""


def geom_colours(model: Any) -> np.ndarray:
    """``float32[ngeom, 4]``: each geom's RGBA as MuJoCo's renderer picks it.

    A geom with a material and the default ``rgba`` takes the material's ``rgba``; a material's RGB
    texture multiplies the colour by the texture's mean (the robots' tan ``texgeom``).
    """
    rgba = np.asarray(model.geom_rgba, np.float32).copy()
    matid = np.asarray(model.geom_matid)
    for g in np.nonzero(matid >= 0)[0]:
        material = int(matid[g])
        if np.allclose(rgba[g], _DEFAULT_RGBA):
            rgba[g] = np.asarray(model.mat_rgba[material], np.float32)
        texids = np.asarray(model.mat_texid[material]).reshape(-1)
        texture = int(texids[1]) if texids.shape[0] > 1 else int(texids[0])  # mjTEXROLE_RGB
        if texture >= 0:
            channels = int(model.tex_nchannel[texture])
            count = int(model.tex_width[texture]) * int(model.tex_height[texture]) * channels
            start = int(model.tex_adr[texture])
            texels = np.asarray(model.tex_data[start : start + count], np.float32).reshape(-1, channels)
            if channels >= 3:
                rgba[g, :3] *= texels[:, :3].mean(0) / 255.0
    return rgba


class _Drawing:
    """Static per-model drawing data, built once per env."""

    def __init__(self, env: Any) -> None:
        model = env.mj_model
        self.horizontal, self.vertical, self.depth = _view_axes(env.scenario)
        self.top = env.scenario in TOP_VIEW
        types = np.asarray(model.geom_type)
        rgba = geom_colours(model)
        drawn = np.isin(types, [_SPHERE, _CAPSULE, _ELLIPSOID, _CYLINDER, _BOX]) & (rgba[:, 3] > 0)
        self.geoms = np.nonzero(drawn)[0]
        size = np.asarray(model.geom_size, np.float32)[self.geoms]
        kind = types[self.geoms]
        # each geom as a segment along one local axis: (axis index, half-length, radius)
        axis = np.full(len(self.geoms), 2)
        half = np.zeros(len(self.geoms), np.float32)
        radius = size[:, 0].copy()
        long_kind = np.isin(kind, [_CAPSULE, _CYLINDER])
        half[long_kind] = size[long_kind, 1]
        for i in np.nonzero(np.isin(kind, [_BOX, _ELLIPSOID]))[0]:
            order = np.argsort(size[i])
            axis[i], half[i], radius[i] = order[2], size[i, order[2]] - size[i, order[1]], size[i, order[1]]
        self.axis, self.half, self.radius = axis, half, radius
        self.color = rgba[self.geoms, :3]
        self.offset = np.zeros(2, np.float32)
        """The view's centre relative to the root body (horizontal, vertical): the many-segment robots
        trail behind their root, so their view is centred on the whole chain."""
        if env.scenario in VIEW_HALF_WIDTH:
            self.half_width = VIEW_HALF_WIDTH[env.scenario]
        else:  # the robot's extent at its initial pose, with room to move
            mujoco: Any = importlib.import_module("mujoco")  # the C engine: this may run while jit traces
            data = mujoco.MjData(model)
            mujoco.mj_kinematics(model, data)
            points = np.asarray(data.geom_xpos)[self.geoms][:, [self.horizontal, self.vertical]]
            points = points - np.asarray(data.xpos)[1][[self.horizontal, self.vertical]]
            reach = (half + radius)[:, None]
            low, high = (points - reach).min(0), (points + reach).max(0)
            self.offset = ((low + high) / 2).astype(np.float32)
            self.half_width = float(max(0.6 * np.max(high - low) + 0.3, 0.3))
        self.tick = float(10 ** np.floor(np.log10(self.half_width)) / 2)
        """Spacing of the floor's marks in metres."""


_DRAWINGS: weakref.WeakKeyDictionary[Any, _Drawing] = weakref.WeakKeyDictionary()
"""Per-env drawing data; weak keys, so a new env never inherits a freed one's entry (as ``id`` could)."""


def _drawing(env: Any) -> _Drawing:
    drawing = _DRAWINGS.get(env)
    if drawing is None:
        drawing = _DRAWINGS[env] = _Drawing(env)
    return drawing


def render_frame(env: Any, state: Any, params: Any = None, size: int = FRAME_SIZE) -> Array:
    """``uint8[size, size, 3]``: the robot of one env's ``state`` (a ``MaMuJoCoState``), jittable."""
    del params  # the pose depends on qpos only
    drawing = _drawing(env)
    mjx = importlib.import_module("mujoco.mjx")
    data = mjx.kinematics(env.mjx_model, env._data0.replace(qpos=state.qpos))
    h, v, d = drawing.horizontal, drawing.vertical, drawing.depth
    centre_h = data.xpos[1, h] + drawing.offset[0]
    # side view: the floor sits a fifth of the frame up; top view: centred on the root
    centre_v = data.xpos[1, v] + drawing.offset[1] if drawing.top else drawing.half_width * 0.6
    scale = size / (2 * drawing.half_width)  # pixels per metre
    pixels = (jnp.arange(size, dtype=jnp.float32) + 0.5) / scale
    world_h = centre_h - drawing.half_width + pixels  # [W]
    world_v = centre_v + drawing.half_width - pixels  # [H], row 0 at the top
    point = jnp.stack(jnp.broadcast_arrays(world_h[None, :], world_v[:, None]), -1)  # [H, W, 2]

    geoms = jnp.asarray(drawing.geoms)
    centre = data.geom_xpos[geoms]  # [G, 3]
    axis_index = jnp.asarray(drawing.axis)[:, None, None]
    axis = jnp.take_along_axis(data.geom_xmat[geoms], axis_index, axis=2)[..., 0]
    half = jnp.asarray(drawing.half)[:, None]
    ends = jnp.stack([centre - half * axis, centre + half * axis], 1)  # [G, 2, 3]
    start, stop = ends[:, 0][:, [h, v]], ends[:, 1][:, [h, v]]
    depth = centre[:, d] if not drawing.top else -centre[:, d]
    radius = jnp.maximum(jnp.asarray(drawing.radius), MIN_RADIUS_PX / scale)  # long chains stay visible
    colours = jnp.asarray(drawing.color)

    def paint(g: Array, canvas: tuple[Array, Array]) -> tuple[Array, Array]:
        # one geom at a time keeps a frame's memory at one [H, W] layer, however many geoms there are
        nearest, colour = canvas
        segment = stop[g] - start[g]
        relative = point - start[g]
        along = jnp.clip(jnp.sum(relative * segment, -1) / jnp.maximum(jnp.sum(segment**2), 1e-12), 0.0, 1.0)
        inside = jnp.linalg.norm(relative - along[..., None] * segment, axis=-1) - radius[g]
        front = (inside < 0) & (depth[g] < nearest)
        edge = inside > -OUTLINE_PX / scale
        shade = jnp.where(edge[..., None], colours[g] * 0.35, colours[g])
        return jnp.where(front, depth[g], nearest), jnp.where(front[..., None], shade, colour)

    blank = (jnp.full((size, size), jnp.inf), jnp.zeros((size, size, 3)))
    nearest, colour = jax.lax.fori_loop(0, len(drawing.geoms), paint, blank)
    covered = jnp.isfinite(nearest)

    if drawing.top:
        tiles = (jnp.floor(point[..., 0] / drawing.tick) + jnp.floor(point[..., 1] / drawing.tick)) % 2
        background = jnp.where(tiles[..., None] > 0, jnp.asarray(TILE), jnp.asarray(SKY))
    else:
        below = point[..., 1] < 0
        mark = (jnp.abs(point[..., 0] / drawing.tick - jnp.round(point[..., 0] / drawing.tick)) * drawing.tick
                < 1.0 / scale) & (point[..., 1] > -12 / scale)
        ground = jnp.where(mark[..., None], jnp.asarray(TICK), jnp.asarray(GROUND))
        background = jnp.where(below[..., None], ground, jnp.asarray(SKY))
    frame = jnp.where(covered[..., None], colour, background)
    return jnp.round(jnp.clip(frame, 0.0, 1.0) * 255).astype(jnp.uint8)


def render_mujoco(
    env: Any, state: Any, params: Any = None, width: int = 480, height: int = 480,
    camera: int | str = -1,
) -> np.ndarray:
    """MuJoCo's own OpenGL rendering of one env's state (not jittable): ``uint8[height, width, 3]``.

    ``camera`` is a camera id or name (-1: MuJoCo's free camera); ``params`` is accepted for symmetry with
    ``env.render`` and unused, as the pose depends on ``qpos`` only.

    Raises RuntimeError in one line when no OpenGL context can be made (set ``MUJOCO_GL=egl`` or
    ``MUJOCO_GL=osmesa`` on a machine without a display).
    """
    del params
    mujoco: Any = importlib.import_module("mujoco")
    data = mujoco.MjData(env.mj_model)
    data.qpos[:] = np.asarray(state.qpos, np.float64)
    data.qvel[:] = np.asarray(state.qvel, np.float64)
    mujoco.mj_forward(env.mj_model, data)
    try:
        renderer = mujoco.Renderer(env.mj_model, height=height, width=width)
    except Exception as error:  # GLFW, EGL and OSMesa each fail in their own way
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RuntimeError(
            f"MuJoCo's renderer needs OpenGL ({message}); set MUJOCO_GL=egl or MUJOCO_GL=osmesa, "
            "or use env.render for the jittable view"
        ) from None
    try:
        renderer.update_scene(data, camera=camera)
        return renderer.render()
    finally:
        renderer.close()
