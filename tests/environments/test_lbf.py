"""Level-Based Foraging's rules on hand-made situations, its resets, its arguments and its ids.

Expected values come from lbforaging's rules as its README and source state them (a pick-up pays
``level * food_level / (group_level_sum * food_spawned)``, swaps pass, shared targets block), worked out
by hand here; the live comparison is tests/environments/test_lbf_parity.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.environments.lbf import LevelBasedForaging
from jaxmarl_suite.environments.lbf.lbf import EAST, LOAD, NONE, NORTH, SOUTH, WEST


def step(env: LevelBasedForaging, state, actions):  # type: ignore[no-untyped-def]
    return env.step(jax.random.key(0), state, {"agents": jnp.asarray(actions, jnp.int32)})


def test_a_group_whose_levels_reach_the_food_shares_it_by_level() -> None:
    env = LevelBasedForaging(num_agents=3, field_size=6, max_num_food=2)
    # food of level 3 at (2, 2) with players of levels 1 and 2 north and west of it; a second food of
    # level 1 far away keeps the episode going; player 2 (level 1) stands by without loading
    state, timestep = env.state_from_arrays(player_pos=[(1, 2), (2, 1), (4, 4)], player_level=[1, 2, 1],
                                            food_pos=[(2, 2), (4, 1)], food_level=[3, 1])
    assert timestep.action_mask["agents"][:, LOAD].tolist() == [True, True, False]
    state, timestep = step(env, state, [LOAD, LOAD, NONE])
    spawned = 4
    np.testing.assert_allclose(timestep.reward["agents"], [1 * 3 / (3 * spawned), 2 * 3 / (3 * spawned), 0.0],
                               rtol=1e-6)
    assert state.food_level.tolist() == [0, 1]
    assert not timestep.terminated["agents"].any()
    # the last food: a lone level-1 player eats the level-1 food and the field is clear
    state, _ = env.state_from_arrays(player_pos=[(0, 0), (4, 2), (5, 5)], player_level=[1, 1, 1],
                                     food_pos=[(4, 1)], food_level=[1])
    state, timestep = step(env, state, [NONE, LOAD, NONE])
    np.testing.assert_allclose(timestep.reward["agents"], [0.0, 1.0, 0.0])
    assert timestep.terminated["agents"].all() and not timestep.truncated["agents"].any()


def test_falling_short_costs_the_loaders_the_penalty_unnormalized() -> None:
    env = LevelBasedForaging(num_agents=2, field_size=6, max_num_food=1, penalty=0.25)
    state, _ = env.state_from_arrays(player_pos=[(1, 2), (3, 3)], player_level=[1, 1],
                                     food_pos=[(2, 2)], food_level=[2])
    state, timestep = step(env, state, [LOAD, NONE])
    np.testing.assert_allclose(timestep.reward["agents"], [-0.25, 0.0])
    assert state.food_level.tolist() == [2]
    env = LevelBasedForaging(num_agents=2, field_size=6, max_num_food=1, normalize_reward=False)
    state, _ = env.state_from_arrays(player_pos=[(1, 2), (2, 3)], player_level=[1, 2],
                                     food_pos=[(2, 2)], food_level=[3])
    _, timestep = step(env, state, [LOAD, LOAD])
    np.testing.assert_allclose(timestep.reward["agents"], [3.0, 6.0])


def test_moves_swaps_shared_targets_and_foods() -> None:
    env = LevelBasedForaging(num_agents=4, field_size=6, max_num_food=1)
    state, timestep = env.state_from_arrays(player_pos=[(2, 2), (2, 3), (4, 0), (4, 2)],
                                            player_level=[1, 1, 1, 1], food_pos=[(1, 3)], food_level=[2])
    # player 1 cannot move north onto the food, nor player 2 west off the field
    assert not timestep.action_mask["agents"][1, NORTH] and not timestep.action_mask["agents"][2, WEST]
    state, _ = step(env, state, [EAST, WEST, EAST, WEST])
    # 0 and 1 swap; 2 and 3 both target (4, 1) and stay
    assert state.player_pos.tolist() == [[2, 3], [2, 2], [4, 0], [4, 2]]
    # an illegal move is a no-op
    state, _ = step(env, state, [NORTH, NONE, WEST, NONE])
    assert state.player_pos.tolist() == [[2, 3], [2, 2], [4, 0], [4, 2]]
    # entering the cell of a player that stays fails
    state, _ = step(env, state, [WEST, NONE, NONE, NONE])
    assert state.player_pos.tolist() == [[2, 3], [2, 2], [4, 0], [4, 2]]


def test_entering_a_cell_whose_owner_is_blocked_overlaps_as_in_the_reference() -> None:
    env = LevelBasedForaging(num_agents=3, field_size=6, max_num_food=1)
    state, _ = env.state_from_arrays(player_pos=[(2, 1), (2, 2), (1, 3)], player_level=[1, 1, 1],
                                     food_pos=[(4, 4)], food_level=[1])
    # 1 moves east into (2, 3), where 2 moves south too: both stay; 0 moves east into 1's cell and goes
    state, _ = step(env, state, [EAST, EAST, SOUTH])
    assert state.player_pos.tolist() == [[2, 2], [2, 2], [1, 3]]


def test_the_vector_observation_is_relative_to_the_clipped_view() -> None:
    env = LevelBasedForaging(num_agents=3, field_size=8, max_num_food=2, sight=2)
    state, timestep = env.state_from_arrays(player_pos=[(0, 0), (4, 4), (5, 1)], player_level=[2, 1, 2],
                                            food_pos=[(3, 3), (1, 2)], food_level=[3, 2])
    obs = np.asarray(timestep.obs["agents"])
    # player 0 at the corner: its view is rows 0-2, cols 0-2, so the food at (1, 2) is seen at (1, 2) and the
    # one at (3, 3) is not; players count as seen up to 2 * sight from the view's corner, so player 1 at
    # (4, 4) is seen (lbforaging's quirk) and player 2 at (5, 1) is not
    assert obs[0].tolist() == [1, 2, 2, -1, -1, 0, 0, 0, 2, 4, 4, 1, -1, -1, 0]
    # player 1 at (4, 4): view rows 2-6, cols 2-6; the food at (3, 3) is at (1, 1); itself at (2, 2) first
    assert obs[1].tolist() == [1, 1, 3, -1, -1, 0, 2, 2, 1, -1, -1, 0, -1, -1, 0]
    # player 2 at (5, 1): view rows 3-7, cols 0-3; food (3, 3) at (0, 3); player 1 at (1, 4)
    assert obs[2].tolist() == [0, 3, 3, -1, -1, 0, 2, 1, 2, 1, 4, 1, -1, -1, 0]


def test_resets_follow_the_spawning_rules() -> None:
    env = LevelBasedForaging(num_agents=4, field_size=7, max_num_food=3, force_coop=True)
    states = jax.jit(jax.vmap(env.start_one))(jax.random.split(jax.random.key(3), 400))
    for i in range(400):
        pos = np.asarray(states.player_pos[i])
        levels = np.asarray(states.player_level[i])
        assert len({tuple(p) for p in pos}) == 4 and set(levels.tolist()) <= {1, 2}
        placed = np.asarray(states.food_level[i]) > 0
        foods = np.asarray(states.food_pos[i])[placed]
        assert placed.any()
        assert np.all((foods >= 1) & (foods <= 5)), "a food on the border"
        # coop: every food at the sum of the three lowest levels
        assert np.all(np.asarray(states.food_level[i])[placed] == np.sort(levels)[:3].sum())
        assert not any(tuple(f) in {tuple(p) for p in pos} for f in foods)
        for a in range(len(foods)):
            for b in range(a + 1, len(foods)):
                d = np.abs(foods[a] - foods[b])
                assert d.max() > 1 and not (d.min() == 0 and d.max() <= 2), (foods[a], foods[b])
        cells = foods[:, 0] * 7 + foods[:, 1]
        assert np.all(np.diff(cells) > 0), "foods kept in row-major order"
        assert int(states.food_spawned[i]) == int(np.asarray(states.food_level[i]).sum())


# slow: the default suite's conformance rollouts compare the batch-native step with jax.vmap of the
# per-env one on the family's first two cases already; this also steps each env on its own
@pytest.mark.slow
def test_a_batch_steps_as_its_envs_one_by_one() -> None:
    env = jaxmarl_suite.make("Foraging-2s-8x8-3p-2f-v3")
    keys = jax.random.split(jax.random.key(1), 6)
    state, _ = env.reset_batch(keys, env.default_params)
    actions = jax.random.randint(jax.random.key(2), (3, 6), 0, 6)
    batch_state, batch_ts = env.step_batch(keys, state, {"agents": actions}, env.default_params)
    reset, step_one = jax.jit(env.reset), jax.jit(env.step)
    for i in range(6):
        one_state, one_ts = reset(keys[i])
        one_state, one_ts = step_one(keys[i], one_state, {"agents": actions[:, i]})
        for got, want in zip(jax.tree.leaves((batch_state, batch_ts)), jax.tree.leaves((one_state, one_ts)),
                             strict=True):
            np.testing.assert_array_equal(np.asarray(got)[..., i], want)


def test_the_time_limit_truncates() -> None:
    env = LevelBasedForaging(max_steps=3)
    state, _ = env.reset(jax.random.key(0))
    for t in range(3):
        state, timestep = step(env, state, [NONE, NONE])
        assert bool(timestep.truncated["agents"].all()) == (t == 2)
        assert not timestep.terminated["agents"].any()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"field_size": 2}, "at least 3x3"),
    ({"observation_type": "image"}, "observation_type"),
    ({"penalty": -1.0}, "penalty"),
    ({"num_agents": 3, "min_player_level": [1, 2]}, "min_player_level"),
    ({"min_food_level": 3, "max_food_level": 2}, "must not exceed"),
    ({"num_agents": 0}, "num_agents"),
    ({"sight": 0}, "sight"),
])
def test_bad_arguments_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LevelBasedForaging(**kwargs)


def test_ids_and_errors() -> None:
    env = jaxmarl_suite.make("Foraging-2s-10x10-3p-3f-coop-v3")
    assert (env.num_players, env.rows, env.num_food, env.sight, env.force_coop) == (3, 10, 3, 2, True)
    grid = jaxmarl_suite.make("Foraging-grid-3s-6x6-2p-1f-v3")
    assert grid.observation_space("agents").shape == (3, 7, 7)
    assert jaxmarl_suite.make("LBF").sight == 8
    with pytest.raises(ValueError, match="Unknown env id"):
        jaxmarl_suite.make("Foraging-8x8-2p-2f-coop-v2")


def test_render_draws_players_and_foods() -> None:
    env = LevelBasedForaging(num_agents=2, field_size=5, max_num_food=1, sight=1)
    state, _ = env.state_from_arrays(player_pos=[(0, 0), (4, 4)], player_level=[1, 2],
                                     food_pos=[(2, 2)], food_level=[3])
    frame = np.asarray(jax.jit(env.render)(state))
    assert frame.shape == (160, 160, 3) and frame.dtype == np.uint8
    tile = 32
    corner = frame[5, 5].astype(int)  # inside player 0's square, off its pips
    food = frame[2 * tile + 6, 2 * tile + 16].astype(int)
    out_of_view = frame[2 * tile + 2, 4, :].astype(int)
    assert corner[2] > corner[0], "player 0 is blue"
    assert food[0] > food[2], "food is orange"
    assert out_of_view.mean() < frame[1 * tile + 2, 4].astype(int).mean(), "unseen cells are darker"
