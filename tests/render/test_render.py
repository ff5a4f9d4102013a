"""Frames people can read: MPE's camera keeps every disc whole, SMAX units are big and labelled, and GIFs
play at each family's ``render_fps``."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image
from scipy import ndimage
from script_modules import load_script

import jaxmarl_suite
from jaxmarl_suite.core.registry import env_spec, registered_envs
from jaxmarl_suite.environments.smax import UNIT_TYPES
from jaxmarl_suite.environments.smax.units import unit_index
from jaxmarl_suite.render import write_gif


def gif_durations(path: Path) -> list[int]:
    """Each stored frame's duration in ms, read back with Pillow."""
    with Image.open(path) as image:
        durations = []
        for index in range(image.n_frames):
            image.seek(index)
            durations.append(int(image.info["duration"]))
    return durations


def zeros_like_reset(env: Any) -> Any:
    """A state shaped like ``env.reset``'s, all zeros, without running (or compiling) the reset."""
    template = jax.eval_shape(env.reset, jax.random.PRNGKey(0))[0]
    return jax.tree.map(lambda leaf: jnp.zeros(leaf.shape, leaf.dtype), template)


def blobs(mask: np.ndarray) -> list[tuple[slice, slice]]:
    """Bounding boxes (rows, columns) of the 8-connected components of ``mask``."""
    labels, _ = ndimage.label(mask, structure=np.ones((3, 3)))
    return [box for box in ndimage.find_objects(labels) if box is not None]


# --------------------------------------------------------------------------------------------------
# MPE: the camera


@pytest.mark.parametrize(
    "agents",
    [
        # Just outside [-1, 1]: mpe2's centre-fitted camera cuts these 0.15-radius agents in half.
        [(1.3, 0.2), (-0.3, -1.25), (-1.2, 1.2)],
        # Far outside, in opposite corners.
        [(6.0, -4.0), (-5.5, 5.0), (0.5, 0.5)],
    ],
)
def test_mpe_camera_keeps_every_disc_whole(agents: list[tuple[float, float]]) -> None:
    env = jaxmarl_suite.make("MPE_simple_spread_v3")  # agents of radius 0.15, landmarks 0.05, all silent
    landmarks = [(0.0, 0.0), (0.5, -0.5), (-0.5, 0.4)]
    state = zeros_like_reset(env).replace(pos=jnp.asarray(agents + landmarks, jnp.float32))
    frame = np.asarray(jax.jit(env.render)(state))
    size = frame.shape[0]

    drawn = (frame < 250).any(axis=-1)
    border = np.concatenate([drawn[0], drawn[-1], drawn[:, 0], drawn[:, -1]])
    assert not border.any(), "an entity touches the frame's edge"
    boxes = blobs(drawn)
    assert len(boxes) == 6, f"expected 6 separate discs, found {len(boxes)}"
    for rows, cols in boxes:
        height, width = rows.stop - rows.start, cols.stop - cols.start
        assert abs(height - width) <= 1, f"a disc is cut: {height} x {width} px"
    # The first agent (positive x, the rightmost of the largest discs) is drawn right of the centre.
    largest = max(boxes, key=lambda box: (box[0].stop - box[0].start, box[1].start))
    assert largest[1].start > size // 2


def test_mpe_render_fps_is_mpe2s() -> None:
    pytest.importorskip("mpe2")
    checked = 0
    for env_id in registered_envs("mpe"):
        reference = env_spec(env_id).reference
        if reference is None or not reference.startswith("mpe2."):
            continue
        expected = importlib.import_module(reference).raw_env.metadata["render_fps"]
        assert jaxmarl_suite.make(env_id).render_fps == expected, env_id
        checked += 1
    assert checked >= 10


# --------------------------------------------------------------------------------------------------
# SMAX: legible units


@functools.cache
def smax_2s3z() -> tuple[Any, Any, Any]:
    """The 2s3z env, its jitted ``render``, and a state with every unit at full health and shields, spread
    out in two columns (allies left) of five, none having attacked."""
    env = jaxmarl_suite.make("SMAX_2s3z")
    types = [UNIT_TYPES[t] for t in env.fixed_types]
    rows = [4.0, 10.0, 16.0, 22.0, 28.0]
    state = zeros_like_reset(env).replace(
        pos=jnp.asarray([(8.0, y) for y in rows] + [(24.0, y) for y in rows], jnp.float32),
        unit_type=jnp.asarray(env.fixed_types, jnp.int32),
        health=jnp.asarray([u.health for u in types], jnp.float32),
        shield=jnp.asarray([u.shield for u in types], jnp.float32),
        last_target=jnp.full((len(types),), -1, jnp.int32),
    )
    return env, jax.jit(env.render), state


def smax_frame(health: dict[int, float] | None = None) -> np.ndarray:
    """The 2s3z frame above, with ``health`` (unit -> points) overriding some units' health."""
    env, render, state = smax_2s3z()
    hp = state.health
    for unit, value in (health or {}).items():
        hp = hp.at[unit].set(value)
    return np.asarray(render(state.replace(health=hp)))


def team_masks(frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Strongly red (allies) and strongly blue (enemies) pixels."""
    rgb = frame.astype(int)
    red, green, blue = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return red - np.maximum(green, blue) > 80, blue - np.maximum(red, green) > 80


def test_smax_living_units_are_large_in_their_team_colour_and_the_dead_vanish() -> None:
    # Units 0-1 are ally stalkers, 2-4 ally zealots, 5-9 the same for the enemy. Kill one of each side.
    frame = smax_frame({1: 0.0, 8: 0.0})
    assert frame.shape[0] >= 384, "the default frame should be large enough to read"
    for team, mask in zip(("allies", "enemies"), team_masks(frame), strict=True):
        labels, count = ndimage.label(mask, structure=np.ones((3, 3)))
        sizes = np.bincount(labels.ravel())[1:]
        sizes = sizes[sizes >= 20]  # specks where a bar's edge meets a disc are not units
        assert len(sizes) == 4, f"{team}: expected 4 living units, found {len(sizes)}"
        assert sizes.min() >= 200, f"{team}: a unit covers only {sizes.min()} px of its team colour"


def test_smax_unit_types_have_distinct_letters() -> None:
    frame = smax_frame()
    allies, _ = team_masks(frame)
    white = (frame >= 250).all(axis=-1)
    letters = []
    # Allies from the top of the frame down: y points up, so units 4, 3, 2 (zealots), 1, 0 (stalkers).
    for rows, cols in sorted(blobs(allies), key=lambda box: box[0].start):
        if (rows.stop - rows.start) < 10:
            continue
        inner = white[rows, cols]
        ys, xs = np.nonzero(inner)
        letters.append(inner[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1])
    assert len(letters) == 5
    zealots, stalkers = letters[:3], letters[3:]
    assert all(np.array_equal(letter, zealots[0]) for letter in zealots)
    assert np.array_equal(stalkers[0], stalkers[1])
    assert not (zealots[0].shape == stalkers[0].shape and np.array_equal(zealots[0], stalkers[0]))


def test_smax_health_bar_shrinks_with_health() -> None:
    def green_pixels(frame: np.ndarray) -> int:
        rgb = frame.astype(int)
        return int((rgb[..., 1] - np.maximum(rgb[..., 0], rgb[..., 2]) > 80).sum())

    full = smax_frame()
    hurt = smax_frame({5: UNIT_TYPES[unit_index("stalker")].health / 2})  # unit 5: an enemy stalker
    assert green_pixels(hurt) < green_pixels(full)


# --------------------------------------------------------------------------------------------------
# GIF frame rates


def test_render_gif_script_plays_at_the_envs_frame_rate(tmp_path: Path) -> None:
    script = load_script("render_gif")
    path = tmp_path / "simple.gif"
    steps = 6
    assert script.main(["MPE_simple_v3", "--out", str(path), "--steps", str(steps)]) == 0
    frame_ms = 1000 / jaxmarl_suite.make("MPE_simple_v3").render_fps
    durations = gif_durations(path)
    # Pillow merges identical consecutive frames into one longer frame; the total is what plays.
    assert all(d % frame_ms == 0 for d in durations)
    assert sum(durations) == (steps + 1) * frame_ms


def test_write_gif_takes_an_explicit_frame_rate(tmp_path: Path) -> None:
    frames = np.stack([np.full((8, 8, 3), value, np.uint8) for value in (0, 90, 180)])
    assert gif_durations(write_gif(tmp_path / "a.gif", frames, fps=4)) == [250, 250, 250]
    with pytest.raises(ValueError, match="fps"):
        write_gif(tmp_path / "b.gif", frames, fps=0)


def test_collect_treasure_hides_dead_treasures_and_keeps_them_out_of_the_camera() -> None:
    env = jaxmarl_suite.make("MPE_collect_treasure_v1")
    state, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    render = jax.jit(env.render)
    alive_frame = np.asarray(render(state))
    dead = state.replace(extra={**state.extra, "alive": state.extra["alive"].at[0].set(False)})
    treasure = env.num_agents_total  # the first treasure's row in ``pos``
    parked_far = dead.replace(pos=dead.pos.at[treasure].set(jnp.array([40.0, -40.0])))
    dead_frame = np.asarray(render(dead))
    assert not np.array_equal(dead_frame, alive_frame)  # the dead treasure is not drawn ...
    np.testing.assert_array_equal(np.asarray(render(parked_far)), dead_frame)  # ... nor framed
