"""Coin Game rules, each against values worked out by hand from JaxMARL 0.2.0's rules: moves on the
torus, every kind of pick-up and its rewards and counts (also with an asymmetric payoff matrix and shared
rewards), coin respawns, inner and outer episode boundaries, the observation planes (absolute,
egocentric, cnn), the key use, rendering and bad constructor input. Random draws are restated here with
``jax.random`` as JaxMARL makes them; the env computes them its own way (``jaxmarl_suite.core.threefry``)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.core import threefry
from jaxmarl_suite.environments.coin_game import CoinGame, CoinGameParams, CoinGameState
from jaxmarl_suite.errors import ConfigError

RIGHT, LEFT, UP, DOWN, STAY = range(5)
KEY = jax.random.PRNGKey(42)


@functools.cache
def game(**kwargs: Any) -> tuple[CoinGame, Any]:
    """The env and its jitted per-env step (params are an argument: no recompiling per payoff)."""
    env = jaxmarl_suite.make("CoinGame", **kwargs)
    assert isinstance(env, CoinGame)
    return env, jax.jit(env.step)


def state_at(red: tuple[int, int], blue: tuple[int, int], red_coin: tuple[int, int],
             blue_coin: tuple[int, int], inner_t: int = 0, time: int = 0) -> CoinGameState:
    return CoinGameState(agent_pos=jnp.asarray([red, blue], jnp.int32),
                         coin_pos=jnp.asarray([red_coin, blue_coin], jnp.int32),
                         inner_t=jnp.asarray(inner_t, jnp.int32), time=jnp.asarray(time, jnp.int32))


def step(state: CoinGameState, red_action: int, blue_action: int, key: jax.Array = KEY,
         params: CoinGameParams | None = None, **kwargs: Any) -> tuple[CoinGameState, Any]:
    env, jitted = game(**kwargs)
    params = env.default_params if params is None else params
    actions = {"agents": jnp.asarray([red_action, blue_action], jnp.int32)}
    state, timestep = jitted(key, state, actions, params)
    return jax.tree.map(np.asarray, state), jax.tree.map(np.asarray, timestep)


def respawn_draw(key: jax.Array) -> np.ndarray:
    """Where picked-up coins reappear, as JaxMARL draws it: ``key, subkey = split(key)``, then
    ``randint(subkey, (2, 2), 0, 3)`` (row 0 the red coin)."""
    return np.asarray(jax.random.randint(jax.random.split(key)[1], (2, 2), 0, 3))


def start_draw(key: jax.Array) -> np.ndarray:
    """JaxMARL's reset draw ``randint(split(key)[1], (4, 2), 0, 3)``: red, blue, red coin, blue coin."""
    return np.asarray(jax.random.randint(jax.random.split(key)[1], (4, 2), 0, 3))


@pytest.mark.parametrize(("typed", "partitionable"), [(True, True), (False, False)],
                         ids=["typed", "original-threefry"])
def test_every_key_kind_draws_as_jax_random(typed: bool, partitionable: bool) -> None:
    """Typed keys take the written-out path (raw keys do in the live parity test); JAX's older Threefry
    scheme falls back to ``jax.random`` itself. Either way the draws are ``jax.random``'s."""
    with jax.threefry_partitionable(partitionable):
        assert threefry.fast_path_ok(jax.random.PRNGKey(0)) == partitionable
        check_draws(jax.random.split(jax.random.key(3) if typed else jax.random.PRNGKey(3), 4))


def check_draws(keys: jax.Array) -> None:
    env, _ = game()

    def reset_then_take_own_coins(keys: jax.Array) -> tuple[CoinGameState, CoinGameState]:
        state, _ = env.reset_batch(keys, env.default_params)
        # Each player stands on its own coin and stays: both coins respawn, from each env's own key.
        on_coins = state.replace(coin_pos=state.agent_pos)
        stay = {"agents": jnp.full((2, keys.shape[0]), STAY, jnp.int32)}
        return state, env.step_batch(keys, on_coins, stay, env.default_params)[0]

    state, stepped = jax.jit(reset_then_take_own_coins)(keys)
    for i in range(4):
        start = start_draw(keys[i])
        np.testing.assert_array_equal(np.asarray(state.agent_pos[..., i]), start[:2])
        np.testing.assert_array_equal(np.asarray(state.coin_pos[..., i]), start[2:])
    for i in range(4):
        np.testing.assert_array_equal(np.asarray(stepped.coin_pos[..., i]), respawn_draw(keys[i]))


@pytest.mark.parametrize(("start", "action", "end"), [
    ((0, 0), RIGHT, (0, 1)), ((0, 0), LEFT, (0, 2)), ((0, 0), UP, (1, 0)), ((0, 0), DOWN, (2, 0)),
    ((0, 0), STAY, (0, 0)), ((2, 2), RIGHT, (2, 0)), ((2, 2), UP, (0, 2)), ((1, 2), LEFT, (1, 1)),
    ((1, 2), DOWN, (0, 2)),
])
def test_moves_wrap_around_the_torus(start: tuple[int, int], action: int, end: tuple[int, int]) -> None:
    far = (2, 1) if end != (2, 1) else (1, 0)  # coins away from where the players end up
    state, _ = step(state_at(start, start, far, far), action, action)
    assert tuple(state.agent_pos[0]) == end and tuple(state.agent_pos[1]) == end


DEFAULT = ((1.0, 1.0, -2.0), (1.0, 1.0, -2.0))
ASYMMETRIC = ((1.0, 2.0, -3.0), (4.0, 5.0, -6.0))
"""Player i: [reward for the red coin, for the blue coin, penalty when the other takes i's coin]."""

PICKUPS = {
    # name: (red, red action, blue, blue action, red coin, blue coin, payoffs, rewards, own, others)
    "red takes its own coin":
        ((0, 0), RIGHT, (2, 2), STAY, (0, 1), (1, 1), DEFAULT, (1, 0), (1, 0), (0, 0)),
    "red takes blue's coin":
        ((0, 0), RIGHT, (2, 2), STAY, (1, 1), (0, 1), DEFAULT, (1, -2), (0, 0), (1, 0)),
    "blue takes red's coin":
        ((0, 0), STAY, (2, 2), LEFT, (2, 1), (1, 1), DEFAULT, (-2, 1), (0, 0), (0, 1)),
    "both take blue's coin":
        ((0, 0), RIGHT, (0, 2), LEFT, (2, 2), (0, 1), DEFAULT, (1, -1), (0, 1), (1, 0)),
    "red takes both coins":
        ((0, 0), UP, (2, 2), STAY, (1, 0), (1, 0), DEFAULT, (2, -2), (1, 0), (1, 0)),
    "staying on a coin takes it":
        ((1, 1), STAY, (2, 2), DOWN, (1, 1), (0, 0), DEFAULT, (1, 0), (1, 0), (0, 0)),
    "no coin reached":
        ((0, 0), RIGHT, (2, 2), UP, (1, 1), (2, 0), DEFAULT, (0, 0), (0, 0), (0, 0)),
    "asymmetric: red takes blue's":
        ((0, 0), RIGHT, (2, 2), STAY, (1, 1), (0, 1), ASYMMETRIC, (2, -6), (0, 0), (1, 0)),
    "asymmetric: blue takes red's":
        ((0, 0), STAY, (2, 2), LEFT, (2, 1), (1, 1), ASYMMETRIC, (-3, 4), (0, 0), (0, 1)),
    "asymmetric: both own":
        ((0, 0), RIGHT, (2, 2), LEFT, (0, 1), (2, 1), ASYMMETRIC, (1, 5), (1, 1), (0, 0)),
}


@pytest.mark.parametrize("name", list(PICKUPS))
def test_pickups_pay_and_count(name: str) -> None:
    red, red_action, blue, blue_action, red_coin, blue_coin, payoffs, rewards, own, others = PICKUPS[name]
    env, _ = game()
    params = env.default_params.replace(payoffs=jnp.asarray(payoffs, jnp.float32))
    state, ts = step(state_at(red, blue, red_coin, blue_coin), red_action, blue_action, params=params)
    np.testing.assert_array_equal(ts.reward["agents"], rewards)
    np.testing.assert_array_equal(ts.info["cooperative_pickups"], own)
    np.testing.assert_array_equal(ts.info["defecting_pickups"], others)
    # A coin that was picked up reappears where JaxMARL's draw puts it; one that was not stays.
    taken = (own[0] + others[1] > 0, own[1] + others[0] > 0)
    respawn = respawn_draw(KEY)
    for coin, before in enumerate((red_coin, blue_coin)):
        np.testing.assert_array_equal(state.coin_pos[coin], respawn[coin] if taken[coin] else before)


def test_shared_rewards_give_both_players_the_sum() -> None:
    start = state_at((0, 0), (2, 2), (1, 1), (0, 1))  # red takes blue's coin: 1 and -2
    env, _ = game()
    _, ts = step(start, RIGHT, STAY, params=env.default_params.replace(shared_rewards=True))
    np.testing.assert_array_equal(ts.reward["agents"], (-1, -1))
    np.testing.assert_array_equal(ts.info["defecting_pickups"], (1, 0))


def short_episodes() -> CoinGameParams:
    """``CoinGame(num_inner_steps=3, num_outer_steps=2)``'s params on the default env."""
    env, _ = game()
    return env.default_params.replace(num_inner_steps=3, max_steps=6)


def test_an_inner_episode_ends_with_new_positions_and_no_reward() -> None:
    # num_inner_steps=3: the third step ends the inner episode, though red takes its coin on it.
    start = state_at((0, 0), (2, 2), (0, 1), (1, 1), inner_t=2, time=2)
    state, ts = step(start, RIGHT, STAY, params=short_episodes())
    np.testing.assert_array_equal(ts.reward["agents"], (0, 0))
    np.testing.assert_array_equal(ts.info["cooperative_pickups"], (1, 0))  # still counted, as JaxMARL does
    assert bool(ts.info["inner_episode_done"]) and not ts.truncated["agents"].any()
    # Fresh positions come from the first half of the step's key, as JaxMARL's inner reset draws them.
    fresh = start_draw(jax.random.split(KEY)[0])
    np.testing.assert_array_equal(state.agent_pos, fresh[:2])
    np.testing.assert_array_equal(state.coin_pos, fresh[2:])
    assert int(state.inner_t) == 0 and int(state.time) == 3
    # ... and the observation is of the fresh positions (red's own plane lit on red's new cell).
    row, col = fresh[0]
    assert ts.obs["agents"][0][(3 * row + col) * 4] == 1 and ts.obs["agents"][0].sum() == 4


def test_episode_is_outer_steps_inner_episodes_then_truncated() -> None:
    env, jitted = game(num_inner_steps=3, num_outer_steps=2)
    assert env.default_params.max_steps == 6 and env.default_params.num_inner_steps == 3
    env, jitted = game()  # the same params, traced: the compiled default step serves
    state, first = jax.jit(env.reset)(KEY, short_episodes())
    assert not first.info["inner_episode_done"] and not first.truncated["agents"].any()
    inner_ends, truncations = [], []
    for t in range(6):
        state, ts = jitted(jax.random.PRNGKey(t), state, {"agents": jnp.asarray([t % 5, 4 - t % 5])},
                           short_episodes())
        inner_ends.append(bool(ts.info["inner_episode_done"]))
        truncations.append(bool(ts.truncated["agents"].all()))
        assert not ts.terminated["agents"].any()
        assert ts.truncated["agents"].all() == ts.truncated["agents"].any()  # both players or neither
    assert inner_ends == [False, False, True, False, False, True]
    assert truncations == [False] * 5 + [True]


# Red (0, 1), blue (2, 2), red coin (1, 0), blue coin (0, 1) under red. Cell = 3 * row + col; the flat
# observation is [cell, plane] with planes (self, other player, own coin, other's coin).
OBS_STATE = ((0, 1), (2, 2), (1, 0), (0, 1))
ABSOLUTE = {0: [(1, 0), (8, 1), (3, 2), (1, 3)], 1: [(8, 0), (1, 1), (1, 2), (3, 3)]}
# Egocentric: shift so the observer is at (1, 1). Red: shift (+1, 0): blue (0, 2), red coin (2, 0),
# blue coin (1, 1). Blue: shift (-1, -1): red (2, 0), blue coin (2, 0), red coin (0, 2).
EGOCENTRIC = {0: [(4, 0), (2, 1), (6, 2), (4, 3)], 1: [(4, 0), (6, 1), (6, 2), (2, 3)]}


@pytest.mark.parametrize(("kwargs", "lit"), [
    ({}, ABSOLUTE), ({"egocentric": True}, EGOCENTRIC), ({"cnn": True}, ABSOLUTE),
], ids=["absolute", "egocentric", "cnn"])
def test_observation_planes(kwargs: dict[str, Any], lit: dict[int, list[tuple[int, int]]]) -> None:
    env, _ = game(**kwargs)
    state = jax.tree.map(lambda x: x[..., None], state_at(*OBS_STATE))
    obs = np.asarray(env.observe(state)[..., 0])
    assert obs.shape == ((2, 3, 3, 4) if kwargs.get("cnn") else (2, 36)) and obs.dtype == np.float32
    for player, cells in lit.items():
        expected = np.zeros((9, 4), np.float32)
        for cell, plane in cells:
            expected[cell, plane] = 1
        np.testing.assert_array_equal(obs[player].reshape(9, 4), expected, err_msg=f"player {player}")


def test_render_shows_players_and_coins_where_they_are() -> None:
    env, _ = game()
    frame = np.asarray(jax.jit(env.render)(state_at(*OBS_STATE)))
    assert frame.shape == (104, 96, 3) and frame.dtype == np.uint8
    # Row 0 is drawn at the bottom. Red at (0, 1): its disc sits in the top left of tile (2, 1).
    assert tuple(frame[2 * 32 + 10, 32 + 10]) == (210, 40, 40)
    # Blue at (2, 2): top right of tile (0, 2). The blue coin at (0, 1): bottom right of tile (2, 1).
    assert tuple(frame[10, 64 + 22]) == (40, 80, 210)
    assert tuple(frame[2 * 32 + 23, 32 + 22]) == (120, 150, 245)
    assert not (frame[32 + 10, 10] == (210, 40, 40)).all()  # nobody at (1, 0)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"num_inner_steps": 0}, "num_inner_steps"),
    ({"num_outer_steps": -3}, "num_outer_steps"),
    ({"payoff_matrix": [[1, 1], [1, 1]]}, "payoff_matrix"),
    ({"payoff_matrix": [[1, 1, float("nan")], [1, 1, -2]]}, "payoff_matrix"),
    ({"payoff_matrix": [[1, 1, "a"], [1, 1, -2]]}, "payoff_matrix"),
])
def test_bad_settings_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        jaxmarl_suite.make("CoinGame", **kwargs)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"num_outer_steps": 2.5}, "num_outer_steps"),
    ({"cnn": 1}, "cnn"),
    ({"egocentric": "yes"}, "egocentric"),
    ({"shared_rewards": None}, "shared_rewards"),
])
def test_settings_of_the_wrong_type_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises((ConfigError, TypeError), match=field):
        jaxmarl_suite.make("CoinGame", **kwargs)
    with pytest.raises(ConfigError, match=field):
        CoinGame(**kwargs)  # the constructor checks too, for direct use
