"""MaMuJoCo's jittable view: a frame of the right kind, the robot drawn, the camera following it over a
scrolling floor, a batch of states in one vmapped call; MuJoCo's own renderer where OpenGL works. The
vmapped batch and the top view compile programs of their own, so they are ``slow``; the default suite
also renders the family's first task through tests/render."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite

pytest.importorskip("mujoco.mjx", reason="the mujoco extra (mujoco, mujoco-mjx) is not installed")
pytest.importorskip("gymnasium_robotics", reason="gymnasium-robotics is not installed")

from jaxmarl_suite.environments.mamujoco import rendering  # noqa: E402
from jaxmarl_suite.environments.mamujoco.rendering import SKY  # noqa: E402

SKY_PIXEL = np.round(SKY * 255).astype(np.uint8)


@pytest.fixture(scope="module")
def cheetah():
    env = jaxmarl_suite.make("MaMuJoCo_HalfCheetah_6x1")
    state, _ = env.reset(jax.random.key(0))
    return env, state, jax.jit(env.render)


def test_a_frame_shows_the_robot_on_the_floor(cheetah) -> None:
    env, state, render = cheetah
    frame = np.asarray(render(state))
    assert frame.shape == (rendering.FRAME_SIZE, rendering.FRAME_SIZE, 3) and frame.dtype == np.uint8
    robot = np.any(np.abs(frame.astype(int) - rendering.GROUND * 255).sum(-1) > 60, -1)  # not ground
    sky = np.all(frame == SKY_PIXEL, -1)
    assert sky.mean() > 0.3 and 0.01 < (~sky & robot).mean() < 0.5  # a robot-sized blot in the sky
    assert env.renders


def test_the_camera_follows_the_robot_and_the_floor_scrolls(cheetah) -> None:
    env, state, render = cheetah
    moved = dataclasses.replace(state, qpos=state.qpos.at[0].add(0.13))
    before, after = np.asarray(render(state)), np.asarray(render(moved))
    floor_row = rendering.FRAME_SIZE - 40  # inside the ground band, where the tick marks are
    assert not np.array_equal(before[floor_row], after[floor_row]), "the floor's marks should move"
    upper = slice(0, rendering.FRAME_SIZE // 2)
    np.testing.assert_array_equal(before[upper], after[upper])  # the robot stays where the camera puts it
    bent = dataclasses.replace(state, qpos=state.qpos.at[3].add(0.8))
    assert not np.array_equal(before, np.asarray(render(bent))), "a bent joint must show"


@pytest.mark.slow
def test_an_episode_of_states_renders_in_one_vmapped_call(cheetah) -> None:
    env, state, _ = cheetah
    bent = dataclasses.replace(state, qpos=state.qpos.at[3].add(0.8))
    batch = jax.tree.map(lambda *x: jnp.stack(x), state, bent, state)
    frames = np.asarray(jax.jit(jax.vmap(env.render))(batch))
    assert frames.shape == (3, rendering.FRAME_SIZE, rendering.FRAME_SIZE, 3)
    np.testing.assert_array_equal(frames[0], frames[2])
    assert not np.array_equal(frames[0], frames[1])


@pytest.mark.slow
def test_reacher_is_seen_from_above_on_tiles() -> None:
    env = jaxmarl_suite.make("MaMuJoCo_Reacher_2x1")
    state, _ = env.reset(jax.random.key(0))
    frame = np.asarray(jax.jit(env.render)(state))
    colours = {tuple(p) for p in frame.reshape(-1, 3)[::7]}
    assert tuple(np.round(rendering.TILE * 255).astype(np.uint8)) in colours  # the floor's tiles
    assert len(colours) > 4


def test_mujocos_own_renderer_draws_or_names_the_opengl_setting() -> None:
    env = jaxmarl_suite.make("MaMuJoCo_HalfCheetah_2x3")
    state, _ = env.reset(jax.random.key(0))
    try:
        frame = rendering.render_mujoco(env, state, width=64, height=48)
    except RuntimeError as error:
        assert "MUJOCO_GL=egl" in str(error) and "\n" not in str(error)
        pytest.skip(f"no OpenGL context here: {error}")
    assert frame.shape == (48, 64, 3) and frame.std() > 0
