"""Overcooked's kitchens, constructor checks, random starts and frames (the rules: the parity tests)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.environments.overcooked import CLASSIC_GRIDS, Overcooked, get_layout, layout_from_grid
from jaxmarl_suite.environments.overcooked.layouts import FLOOR, POT
from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.training.kit.envs import make_training_env


def test_classic_layouts_rebuild_from_their_grids_and_aliases_name_them() -> None:
    for name in CLASSIC_GRIDS:
        layout = get_layout(name)
        assert layout_from_grid(layout.grid(), name).grid() == layout.grid()
        assert layout.terrain[layout.start_positions[0][1], layout.start_positions[0][0]] == FLOOR
    assert get_layout("coord_ring").name == "coordination_ring"
    assert get_layout("counter_circuit_o_1order").name == "counter_circuit"
    cramped = get_layout("cramped_room")
    assert (cramped.width, cramped.height) == (5, 4) and cramped.terrain[0, 2] == POT
    assert cramped.start_positions == ((1, 2), (3, 1))


@pytest.mark.parametrize("grid, message", [
    ("XXPXX\nO 2O\nX1  X\nXDXSX", "rows differ"),
    ("XXPXX\nO Q2O\nX1  X\nXDXSX", "unknown character"),
    ("XXPXX\nO  2O\nX   X\nXDXSX", "one start for each"),
    ("XXPXX\nO 22O\nX1  X\nXDXSX", "starts twice"),
    ("XX XX\nO  2O\nX1  X\nXDXSX", "border"),
])
def test_bad_grids_are_refused_with_the_reason(grid: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        layout_from_grid(grid)


def test_constructor_and_registry() -> None:
    env = jaxmarl_suite.make("overcooked", layout="forced_coord")
    assert env.layout.name == "forced_coordination"
    assert env.reference == "overcooked_ai_py.forced_coordination"
    assert env.observation_space("agents").shape == (5, 5, 26) and env.action_space("agents").n == 6
    custom = Overcooked(layout_from_grid("XXPXX\nO 2 O\nX1  X\nXDXSX", name="mine"))
    assert custom.reference is None and custom.layout.name == "mine"
    # a misspelt layout names the keyword and the layout meant, at construction and through the training
    # env stack (whose error names env_kwargs, not env_id, for an id that exists)
    for build in (lambda: jaxmarl_suite.make("overcooked", layout="cramped"),
                  lambda: make_training_env("Overcooked", 2, {"layout": "cramped"}, "group")):
        with pytest.raises(ConfigError) as caught:
            build()
        message = str(caught.value)
        assert "layout: unknown Overcooked layout 'cramped'; did you mean 'cramped_room'?" in message
        assert "env_id" not in message and len(message.splitlines()) == 1
    assert str(caught.value).startswith("env_kwargs: layout: ")
    with pytest.raises(ConfigError, match=r"^layout: unknown Overcooked layout 'kitchen'\. Known: \["):
        Overcooked("kitchen")  # nothing close: no guess, the known names
    with pytest.raises(ValueError, match="max_steps"):
        Overcooked(max_steps=0)
    with pytest.raises(TypeError, match="old_dynamics"):
        Overcooked(old_dynamics="yes")  # type: ignore[arg-type]


def test_featurized_observations_are_featurize_of_the_state() -> None:
    """The option wires ``featurize`` (checked against overcooked-ai in test_overcooked_featurize.py)."""
    from jaxmarl_suite.environments.overcooked.featurize import featurize

    env = Overcooked("coordination_ring", observation="featurized")
    assert env.observation_space("agents").shape == (96,)
    state, timestep = jax.jit(env.reset_batch)(jax.random.split(jax.random.PRNGKey(0), 3), env.default_params)
    actions = {"agents": np.array([[5, 5, 0], [1, 2, 3]], np.int32)}
    state, timestep = jax.jit(env.step_batch)(jax.random.split(jax.random.PRNGKey(1), 3), state, actions,
                                              env.default_params)
    np.testing.assert_array_equal(timestep.obs["agents"],
                                  jax.jit(featurize, static_argnums=0)(env, state, env.default_params))
    with pytest.raises(ValueError, match="observation must be one of"):
        Overcooked(observation="pixels")


def test_random_starts_put_players_on_distinct_floor_cells() -> None:
    env = jaxmarl_suite.make("Overcooked_counter_circuit", num_envs=64, random_start=True)
    assert env.random_reset and not jaxmarl_suite.make("Overcooked").random_reset
    state, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    position, orientation = np.asarray(state.position), np.asarray(state.orientation)
    floor = set(get_layout("counter_circuit").cells_of(FLOOR).tolist())
    assert set(position.reshape(-1).tolist()) <= floor
    assert (position[0] != position[1]).all()
    assert len({tuple(p) for p in position.T}) > 10 and len(set(orientation.reshape(-1).tolist())) == 4


def test_frames_render_inside_jit_for_a_whole_episode() -> None:
    env = Overcooked("asymmetric_advantages")
    state, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    frame = np.asarray(jax.jit(env.render)(state))
    assert frame.shape == (5 * 24, 9 * 24, 3) and frame.dtype == np.uint8
    states = jax.tree.map(lambda x: np.stack([x, x]), state)
    frames = np.asarray(jax.vmap(env.render)(states))
    assert frames.shape == (2, *frame.shape)
    np.testing.assert_array_equal(frames[0], frame)
    blue_player = np.array([51, 102, 216])
    assert (np.abs(frame.astype(int) - blue_player).sum(-1) < 10).any(), "player 0 is not drawn"


def test_jaxmarl_layout_dicts_and_the_jaxmarl_view() -> None:
    """JaxMARL's layout dicts build our kitchens (with JaxMARL's starts), and ``to_jaxmarl`` presents its
    observation layout, ``(height, width, 26)``, and per-agent shaped rewards, as JaxMARL's scripts read."""
    pytest.importorskip("jaxmarl")
    from jaxmarl.environments.overcooked import overcooked_layouts

    from jaxmarl_suite.compat import to_jaxmarl

    layout = get_layout(overcooked_layouts["asymm_advantages"])
    classic = get_layout("asymmetric_advantages")
    np.testing.assert_array_equal(layout.terrain, classic.terrain)
    assert layout.name == "jaxmarl_asymmetric_advantages"
    assert layout.start_positions != classic.start_positions
    ours = Overcooked("counter_circuit")
    view = to_jaxmarl(ours)
    obs, state = view.reset(jax.random.PRNGKey(0))
    _, timestep = ours.reset(jax.random.PRNGKey(0))
    assert obs["agent_1"].shape == (5, 8, 26) == view.observation_space("agent_1").shape
    np.testing.assert_array_equal(obs["agent_1"], np.swapaxes(np.asarray(timestep.obs["agents"][1]), 0, 1))
    _, _, _, _, info = view.step(jax.random.PRNGKey(1), state, {"agent_0": 5, "agent_1": 4})
    assert set(info["shaped_reward"]) == {"agent_0", "agent_1"}


def test_dish_pickup_shaping_fires_when_useful() -> None:
    """Regression for JaxMARL's issue #167 (its plate-pickup shaping never fires). On cramped_room, player 0
    stands above the dish dispenser facing it while the pot cooks: taking a dish earns 3. With a dish
    already lying on a counter it earns nothing (overcooked-ai's rule against dish hoarding)."""
    import dataclasses

    from jaxmarl_suite.environments.overcooked.layouts import DISH, SOUP, SOUTH

    env = Overcooked("cramped_room")
    layout = env.layout
    start, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    pot, counter = layout.cell((2, 0)), layout.cell((0, 0))
    cooking = dataclasses.replace(
        start,
        position=start.position.at[0].set(layout.cell((1, 2))),
        orientation=start.orientation.at[0].set(SOUTH),
        kind=start.kind.at[pot].set(SOUP), onions=start.onions.at[pot].set(3), tick=start.tick.at[pot].set(5),
    )
    hoarded = dataclasses.replace(cooking, kind=cooking.kind.at[counter].set(DISH))
    interact_and_stay = {"agents": np.array([5, 4], np.int32)}
    step = jax.jit(env.step)
    for state, expected in ((cooking, 3.0), (hoarded, 0.0)):
        after, timestep = step(jax.random.PRNGKey(1), state, interact_and_stay)
        assert int(after.held[0]) == DISH
        np.testing.assert_array_equal(timestep.info["shaped_reward"], [expected, 0.0])


# 48 envs: blocks of 16, the layout between the two kept by default (blocks of 32 and env-last)
@pytest.mark.parametrize("num_envs", [64, pytest.param(48, marks=pytest.mark.slow), 24])
def test_batched_encoding_in_every_word_layout_equals_each_env_alone(num_envs: int) -> None:
    # 64 and 48 envs store the encoding's words in blocks of 32 and 16 envs, 24 env-last; the vmap path
    # encodes each env alone (the layout the live parity tests check against overcooked-ai).
    batched = jaxmarl_suite.make("Overcooked_asymmetric_advantages", num_envs=num_envs, random_start=True)
    alone = jaxmarl_suite.core.vec.VecEnv(
        jaxmarl_suite.make("Overcooked_asymmetric_advantages", random_start=True), num_envs, use_vmap=True)
    state, timestep = jax.jit(batched.reset)(jax.random.PRNGKey(0))
    state_alone, timestep_alone = jax.jit(alone.reset)(jax.random.PRNGKey(0))
    step, step_alone = jax.jit(batched.step), jax.jit(alone.step)
    sample = jax.jit(batched.sample_actions)
    lit = 0
    for t in range(60):
        key = jax.random.PRNGKey(t + 1)
        actions = sample(key, timestep.action_mask)
        state, timestep = step(key, state, actions)
        state_alone, timestep_alone = step_alone(key, state_alone, actions)
        obs = np.asarray(timestep.obs["agents"])
        np.testing.assert_array_equal(obs, np.asarray(timestep_alone.obs["agents"]))
        lit = max(lit, int((obs[..., 16:25] > 0).sum()))
    assert obs.shape == (num_envs, 2, 9, 5, 26)
    assert lit > 0  # objects and soups were lit somewhere, not only players and terrain


def test_encoding_words_give_every_channel_its_own_bits() -> None:
    from jaxmarl_suite.environments.overcooked.overcooked import (
        CHANNEL_SHIFT,
        COOK_CHANNEL,
        channel_shift_and_mask,
    )

    shift, mask = (np.asarray(a) for a in channel_shift_and_mask(jax.numpy.arange(26)))
    in_word = [k for k in range(26) if k != COOK_CHANNEL]
    np.testing.assert_array_equal(shift[in_word], CHANNEL_SHIFT[in_word])  # written where it is read
    bits = [bit for k in in_word for bit in range(shift[k], shift[k] + int(mask[k]).bit_length())]
    assert len(bits) == len(set(bits)) == 29 and max(bits) == 28  # no overlap, inside an int32
    assert [int(mask[k]) for k in range(16, 20)] == [3] * 4  # ingredient counts reach 3
