"""MaMuJoCo's jittable view: a frame of the right kind, the robot drawn, the camera following it over a
scrolling floor, a batch of states in one vmapped call; MuJoCo's own renderer where OpenGL works.

By default one planar task (HalfCheetah), one 3D task (Ant) and one top view (Swimmer) are drawn; the other
scenarios are ``slow``. States are built from the model's initial pose rather than by ``reset``, whose MJX
forward pass takes far longer to compile than the drawing itself.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite

pytest.importorskip("mujoco.mjx", reason="the mujoco extra (mujoco, mujoco-mjx) is not installed")
pytest.importorskip("gymnasium_robotics", reason="gymnasium-robotics is not installed")

from jaxmarl_suite.environments.mamujoco import rendering  # noqa: E402
from jaxmarl_suite.environments.mamujoco.mamujoco import MaMuJoCoState  # noqa: E402

SIZE = rendering.FRAME_SIZE
SKY_PIXEL = np.round(rendering.SKY * 255).astype(np.uint8)
BACKGROUNDS = np.round(np.stack([rendering.SKY, rendering.GROUND, rendering.TILE, rendering.TICK]) * 255)
FLOOR_ROW = int(SIZE * 0.8)
"""The side view's floor line: a fifth of the frame up."""

DEFAULT_TASKS = ["MaMuJoCo_HalfCheetah_6x1", "MaMuJoCo_Ant_4x2"]
SLOW_TASKS = [
    "MaMuJoCo_Hopper_3x1", "MaMuJoCo_Walker2d_2x3", "MaMuJoCo_Humanoid_9|8", "MaMuJoCo_HumanoidStandup_9|8",
    "MaMuJoCo_ManySegmentAnt_2x3", "MaMuJoCo_Reacher_2x1", "MaMuJoCo_ManySegmentSwimmer_10x2",
]


def initial_state(env, qpos=None) -> MaMuJoCoState:
    """A state at the model's initial pose (or ``qpos``), without compiling ``reset``."""
    nv = env.init_qvel.shape[0]
    return MaMuJoCoState(
        qpos=jnp.asarray(env.init_qpos if qpos is None else qpos, jnp.float32),
        qvel=jnp.zeros(nv, jnp.float32),
        qacc_warmstart=jnp.zeros(nv, jnp.float32),
        progress_x=jnp.zeros((), jnp.float32),
        time=jnp.zeros((), jnp.int32),
    )


def robot_share(frame: np.ndarray) -> float:
    """The share of pixels in none of the background colours (sky, ground, tiles, tick marks)."""
    distance = np.abs(frame[:, :, None].astype(int) - BACKGROUNDS).sum(-1)
    return float(np.all(distance > 0, -1).mean())


@pytest.fixture(scope="module", params=DEFAULT_TASKS)
def task(request):
    """The env and, from one jitted, vmapped call, frames of: the initial pose, the root slid forward, the
    last joint bent, the initial pose again."""
    env = jaxmarl_suite.make(request.param)
    state = initial_state(env)
    qpos = np.asarray(state.qpos)
    moved_qpos, bent_qpos = qpos.copy(), qpos.copy()
    moved_qpos[0] += 0.13
    bent_qpos[-1] += 0.8
    batch = jax.tree.map(
        lambda *x: jnp.stack(x), state, initial_state(env, moved_qpos), initial_state(env, bent_qpos), state
    )
    return env, np.asarray(jax.jit(jax.vmap(env.render))(batch))


def test_a_frame_shows_the_robot_above_the_floor(task) -> None:
    env, frames = task
    assert frames.shape == (4, SIZE, SIZE, 3) and frames.dtype == np.uint8
    assert env.renders
    frame = frames[0]
    assert np.all(frame[:FLOOR_ROW] == SKY_PIXEL, -1).mean() > 0.5, "sky above the floor"
    assert 0.005 < robot_share(frame) < 0.4, "a robot-sized blot in the sky"
    floor = frame[FLOOR_ROW + 20 :]
    assert np.abs(floor.astype(int) - np.round(rendering.GROUND * 255)).sum(-1).min() == 0, "the ground band"


def test_the_batch_differs_where_the_states_do(task) -> None:
    _, (before, _, bent, again) = task
    np.testing.assert_array_equal(before, again)
    assert not np.array_equal(before, bent), "a bent joint must show"


def test_the_camera_follows_the_robot_and_the_floor_scrolls(task) -> None:
    _, (before, moved, _, _) = task
    np.testing.assert_array_equal(before[: FLOOR_ROW - 2], moved[: FLOOR_ROW - 2])  # the robot stays put
    tick_row = FLOOR_ROW + 3
    assert not np.array_equal(before[tick_row], moved[tick_row]), "the floor's marks should move"


def test_a_single_jitted_frame_matches_the_batch(task) -> None:
    env, frames = task
    np.testing.assert_array_equal(np.asarray(jax.jit(env.render)(initial_state(env))), frames[0])


def test_the_top_view_follows_the_swimmer_over_tiles() -> None:
    env = jaxmarl_suite.make("MaMuJoCo_Swimmer_2x1")
    state = initial_state(env)
    qpos = np.asarray(state.qpos).copy()
    qpos[0] += 0.3
    batch = jax.tree.map(lambda *x: jnp.stack(x), state, initial_state(env, qpos))
    before, moved = np.asarray(jax.jit(jax.vmap(env.render))(batch))
    tile = np.round(rendering.TILE * 255).astype(np.uint8)
    assert np.all(before == tile, -1).mean() > 0.1, "the floor's tiles"
    assert 0.002 < robot_share(before) < 0.4, "the swimmer"
    centre = slice(SIZE // 2 - 4, SIZE // 2 + 4)
    np.testing.assert_array_equal(before[centre, centre], moved[centre, centre])  # the body stays centred
    assert not np.array_equal(before, moved), "the tiles scroll"


@pytest.mark.slow
@pytest.mark.parametrize("env_id", SLOW_TASKS)
def test_every_scenario_renders(env_id: str) -> None:
    env = jaxmarl_suite.make(env_id)
    state = initial_state(env)
    frame = np.asarray(jax.jit(env.render)(state))
    assert frame.shape == (SIZE, SIZE, 3) and frame.dtype == np.uint8
    assert 0.002 < robot_share(frame) < 0.5, "a robot-sized blot on the floor or in the sky"
    qpos = np.asarray(state.qpos).copy()
    qpos[-1] += 0.8
    assert not np.array_equal(frame, np.asarray(jax.jit(env.render)(initial_state(env, qpos))))


def test_mujocos_own_renderer_draws_or_names_the_opengl_setting() -> None:
    env = jaxmarl_suite.make("MaMuJoCo_HalfCheetah_6x1")
    try:
        frame = rendering.render_mujoco(env, initial_state(env), width=64, height=48)
    except RuntimeError as error:
        assert "MUJOCO_GL=egl" in str(error) and "\n" not in str(error)
        pytest.skip(f"no OpenGL context here: {error}")
    assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8 and frame.std() > 0
