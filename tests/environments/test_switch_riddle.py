"""Switch Riddle's rules on hand-built states: who acts, the bulb and who sees it, the announcement's
reward (the teller counts as visited), the day limit (truncated, or terminated when the last day's
prisoner announces), custom rewards and first bulb, the batch-written prisoner draw against
``jax.random.randint``, frames, and bad constructor input. The live comparison with JaxMARL is in
test_switch_riddle_parity.py."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.environments.switch_riddle import SwitchRiddle, SwitchRiddleState
from jaxmarl_suite.errors import ConfigError

NOTHING, SWITCH, TELL = 0, 1, 2


def state_of(in_room: int, been: list[int], bulb: bool = False, step: int = 0) -> SwitchRiddleState:
    """One env's state: prisoner ``in_room`` in the room today, ``been`` those who have acted there."""
    has_been = np.zeros(3, bool)
    has_been[been] = True
    return SwitchRiddleState(bulb=jnp.asarray(bulb), agent_in_room=jnp.int32(in_room),
                             has_been=jnp.asarray(has_been), step=jnp.int32(step))


@functools.cache
def jitted_step(env: SwitchRiddle):
    return jax.jit(env.step)


def step(env: SwitchRiddle, state: SwitchRiddleState, actions: list[int], key: int = 0, params=None):
    params = env.default_params if params is None else params
    new_state, timestep = jitted_step(env)(jax.random.PRNGKey(key), state,
                                           {"agents": jnp.asarray(actions, jnp.int32)}, params)
    return jax.tree.map(np.asarray, new_state), jax.tree.map(np.asarray, timestep)


def test_only_the_prisoner_in_the_room_acts() -> None:
    env = SwitchRiddle()
    # Prisoner 1 is in the room and does nothing: the others' announcements and switches are ignored.
    state, timestep = step(env, state_of(1, []), [TELL, NOTHING, SWITCH])
    assert not state.bulb and not timestep.terminated["agents"].any()
    assert timestep.reward["agents"].tolist() == [0.0, 0.0, 0.0]
    assert state.has_been.tolist() == [False, True, False] and state.step == 1
    # The same with prisoner 2 in the room: now the switch is flipped.
    state, _ = step(env, state_of(2, []), [TELL, NOTHING, SWITCH])
    assert state.bulb


def test_the_bulb_toggles_and_only_the_prisoner_in_the_room_sees_it() -> None:
    env = SwitchRiddle()
    readers = set()
    for key in range(6):  # several keys, so tomorrow's prisoner (the reader) varies
        state, timestep = step(env, state_of(0, [], bulb=False), [SWITCH, NOTHING, NOTHING], key=key)
        reader = int(state.agent_in_room)
        readers.add(reader)
        expected = np.zeros((3, 2), np.float32)
        expected[reader] = [1.0, 1.0]  # in the room, light on
        np.testing.assert_array_equal(timestep.obs["agents"], expected)
        state, timestep = step(env, state_of(0, [], bulb=True), [SWITCH, NOTHING, NOTHING], key=key)
        expected[reader] = [1.0, 0.0]  # in the room, light off
        assert not state.bulb
        np.testing.assert_array_equal(timestep.obs["agents"], expected)
    assert len(readers) > 1
    # Doing nothing leaves the light on.
    state, _ = step(env, state_of(0, [], bulb=True), [NOTHING, SWITCH, SWITCH])
    assert state.bulb


@pytest.mark.parametrize(("in_room", "been", "reward"), [
    (2, [0, 1], 1.0),      # the teller's own visit today completes the set
    (0, [0, 1, 2], 1.0),   # everyone had been before
    (2, [0], -1.0),        # prisoner 1 never came
    (0, [], -1.0),         # only the teller
])
def test_an_announcement_ends_the_game_and_pays_all(in_room: int, been: list[int], reward: float) -> None:
    env = SwitchRiddle()
    actions = [NOTHING, NOTHING, NOTHING]
    actions[in_room] = TELL
    _, timestep = step(env, state_of(in_room, been, step=2), actions)
    assert timestep.reward["agents"].tolist() == [reward] * 3
    assert timestep.terminated["agents"].all() and not timestep.truncated["agents"].any()
    assert bool(timestep.info["won"]) == (reward > 0)


def test_custom_rewards_are_paid() -> None:
    env = SwitchRiddle(reward_all_live=10.0, reward_all_die=-3.0)
    _, win = step(env, state_of(1, [0, 2]), [NOTHING, TELL, NOTHING])
    _, loss = step(env, state_of(1, [0]), [NOTHING, TELL, NOTHING])
    assert win.reward["agents"].tolist() == [10.0] * 3 and loss.reward["agents"].tolist() == [-3.0] * 3
    # Params are traceable: the same compiled step pays what the params say.
    params = env.default_params.replace(reward_all_live=0.25)
    _, win = step(env, state_of(1, [0, 2]), [NOTHING, TELL, NOTHING], params=params)
    assert win.reward["agents"].tolist() == [0.25] * 3


def test_the_day_limit_is_4n_minus_6_and_truncates_without_reward() -> None:
    assert [SwitchRiddle(num_agents=n).default_params.max_steps for n in (3, 4, 5, 10)] == [6, 10, 14, 34]
    env, days = SwitchRiddle(num_agents=4), 10
    state, timestep = jax.jit(env.reset)(jax.random.PRNGKey(0))
    run = jax.jit(env.step)
    idle = {"agents": jnp.zeros((4,), jnp.int32)}
    for day in range(1, days + 1):
        state, timestep = run(jax.random.PRNGKey(day), state, idle)
        assert bool(timestep.truncated["agents"].all()) == (day == days), day
        assert not timestep.terminated["agents"].any() and not timestep.reward["agents"].any()
    # An announcement on the last day is the game's end, not the time limit's.
    last = state.replace(step=jnp.int32(days - 1), has_been=jnp.ones((4,), bool))
    actions = [NOTHING] * 4
    actions[int(last.agent_in_room)] = TELL
    _, timestep = step(env, last, actions)
    assert timestep.terminated["agents"].all() and not timestep.truncated["agents"].any()
    assert timestep.reward["agents"].tolist() == [1.0] * 4


def test_reset_puts_one_random_prisoner_in_the_room() -> None:
    env = SwitchRiddle(num_agents=4, initial_bulb_state=True)
    seen = set()
    reset = jax.jit(env.reset)
    for seed in range(24):
        state, timestep = reset(jax.random.PRNGKey(seed))
        obs = np.asarray(timestep.obs["agents"])
        in_room = int(state.agent_in_room)
        seen.add(in_room)
        expected = np.zeros((4, 2), np.float32)
        expected[in_room] = [1.0, 1.0]  # the first bulb is on, and only today's prisoner sees it
        np.testing.assert_array_equal(obs, expected)
        assert not np.asarray(state.has_been).any() and int(state.step) == 0
    assert seen == {0, 1, 2, 3}
    # only today's prisoner may toggle or announce; the others may only do nothing (turn-taking)
    expected_mask = np.zeros((4, 3), bool)
    expected_mask[:, 0] = True
    expected_mask[in_room] = True
    np.testing.assert_array_equal(np.asarray(timestep.action_mask["agents"]), expected_mask)


def test_frames_show_the_room_the_bulb_and_the_visits() -> None:
    env = SwitchRiddle()
    states = [state_of(1, [0], bulb=False, step=3), state_of(1, [0], bulb=True, step=3),
              state_of(2, [0, 2], bulb=False, step=3)]
    frames = jax.jit(jax.vmap(env.render))(jax.tree.map(lambda *x: jnp.stack(x), *states))
    dark, lit, moved = np.asarray(frames)
    assert dark.shape == (48, 96, 3) and dark.dtype == np.uint8
    bulb = (12, 3 * 24 + 12)  # the centre of the bulb's cell
    assert lit[bulb].tolist() != dark[bulb].tolist()
    assert lit[bulb][0] > 200 and lit[bulb][1] > 200 and dark[bulb].max() < 100  # yellow vs unlit
    floor = (2, 24 + 2)  # a corner of prisoner 1's cell, inside the room today
    assert dark[floor].tolist() != moved[floor].tolist()
    visit = (24 + 12, 2 * 24 + 12)  # prisoner 2's visit mark
    assert dark[visit].tolist() != moved[visit].tolist()


def test_registry_ids_and_spaces() -> None:
    env = jaxmarl_suite.make("switch_riddle", num_agents=5)
    assert isinstance(env, SwitchRiddle) and env.agents == tuple(f"agent_{i}" for i in range(5))
    assert env.reference == "jaxmarl.switch_riddle"
    assert SwitchRiddle(max_steps=9).reference is None  # JaxMARL has no other day limit
    assert env.observation_space("agents").shape == (2,) and env.action_space("agents").n == 3


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"num_agents": 2}, "num_agents"),
    ({"num_agents": 3.0}, "num_agents"),
    ({"initial_bulb_state": 1}, "initial_bulb_state"),
    ({"reward_all_live": float("nan")}, "reward_all_live"),
    ({"reward_all_die": "-1"}, "reward_all_die"),
    ({"max_steps": 0}, "max_steps"),
])
def test_bad_settings_name_the_field(kwargs: dict, field: str) -> None:
    # ``make`` already refuses wrong types (TypeError); the class itself names the field either way.
    with pytest.raises(ConfigError, match=field):
        SwitchRiddle(**kwargs)
    with pytest.raises((ConfigError, TypeError), match=field):
        jaxmarl_suite.make("SwitchRiddle", **kwargs)
