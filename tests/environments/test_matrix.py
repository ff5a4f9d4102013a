"""Iterated matrix games: every payoff of every game against the textbook tables, the memory-one
observation of each joint action from both seats, the episode length, and bad constructor input."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.errors import ConfigError

# (player 0's action, player 1's action) -> (player 0's payoff, player 1's payoff); 0: C, stag, swerve, heads.
TEXTBOOK = {
    "prisoners_dilemma": {(0, 0): (3, 3), (0, 1): (0, 5), (1, 0): (5, 0), (1, 1): (1, 1)},
    "stag_hunt": {(0, 0): (4, 4), (0, 1): (0, 3), (1, 0): (3, 0), (1, 1): (2, 2)},
    "chicken": {(0, 0): (3, 3), (0, 1): (1, 4), (1, 0): (4, 1), (1, 1): (0, 0)},
    "matching_pennies": {(0, 0): (1, -1), (0, 1): (-1, 1), (1, 0): (-1, 1), (1, 1): (1, -1)},
}
OUTCOME = {(0, 0): 1, (0, 1): 2, (1, 0): 3, (1, 1): 4}
"""Observation index of a round seen as (own action, other's action); 0 is the episode's start."""


def play(env, joint_actions: list[tuple[int, int]]):
    state, first = env.reset(jax.random.PRNGKey(0))
    steps = []
    for t, joint in enumerate(joint_actions):
        state, timestep = env.step(jax.random.PRNGKey(t), state, {"agents": jnp.asarray(joint, jnp.int32)})
        steps.append(jax.tree.map(np.asarray, timestep))
    return jax.tree.map(np.asarray, first), steps


@pytest.mark.parametrize("game", sorted(TEXTBOOK))
def test_every_joint_action_pays_the_textbook_payoffs(game: str) -> None:
    env = jaxmarl_suite.make("MatrixGame", game=game)
    joints = list(itertools.product((0, 1), repeat=2))
    _, steps = play(env, joints)
    for joint, timestep in zip(joints, steps, strict=True):
        np.testing.assert_array_equal(timestep.reward["agents"], TEXTBOOK[game][joint], err_msg=str(joint))


def test_a_perturbed_payoff_table_is_caught() -> None:
    """Negative control: swapping the temptation and sucker payoffs changes what the comparison sees."""
    table = np.array([[[3, 5], [0, 1]], [[3, 5], [0, 1]]], np.float32)
    _, steps = play(jaxmarl_suite.make("MatrixGame", payoffs=table), [(0, 1)])
    assert tuple(steps[0].reward["agents"]) != TEXTBOOK["prisoners_dilemma"][(0, 1)]


def test_observations_are_the_last_round_from_each_seat() -> None:
    env = jaxmarl_suite.make("MatrixGame")
    joints = [(0, 1), (1, 1), (1, 0), (0, 0)]
    first, steps = play(env, joints)
    np.testing.assert_array_equal(first.obs["agents"], np.eye(5)[[0, 0]])
    for (a0, a1), timestep in zip(joints, steps, strict=True):
        np.testing.assert_array_equal(timestep.obs["agents"], np.eye(5)[[OUTCOME[a0, a1], OUTCOME[a1, a0]]])


def test_episodes_are_max_steps_rounds_and_never_terminate() -> None:
    env = jaxmarl_suite.make("MatrixGame", max_steps=3)
    _, steps = play(env, [(1, 1)] * 3)
    assert [bool(t.truncated["agents"].all()) for t in steps] == [False, False, True]
    assert not any(t.terminated["agents"].any() for t in steps)


def test_batch_equals_one_game_at_a_time() -> None:
    env = jaxmarl_suite.make("MatrixGame", game="chicken")
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    state, _ = env.reset_batch(keys, env.default_params)
    actions = jnp.array([[0, 1, 0, 1], [0, 0, 1, 1]], jnp.int32)
    _, batched = env.step_batch(keys, state, {"agents": actions}, env.default_params)
    for b in range(4):
        want = TEXTBOOK["chicken"][int(actions[0, b]), int(actions[1, b])]
        np.testing.assert_array_equal(np.asarray(batched.reward["agents"][:, b]), want)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"game": "prisoner"}, "game"),
    ({"payoffs": [[1, 2], [3, 4]]}, "payoffs"),
    ({"payoffs": np.full((2, 2, 2), np.nan)}, "payoffs"),
    ({"max_steps": 0}, "max_steps"),
])
def test_bad_settings_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        jaxmarl_suite.make("MatrixGame", **kwargs)
