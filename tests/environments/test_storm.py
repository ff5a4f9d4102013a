"""STORM rules on hand-built boards: movement, collisions, coins, zaps, payoffs, freezing, respawn, inner
episodes, the egocentric view and errors. Expected values are worked out by hand from the rules in
environments/storm/README.md (JaxMARL 0.2.0's ``storm_2p.py``); test_storm_parity.py checks the same
rules against JaxMARL live."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.environments.storm import Storm2p, Storm2pState
from jaxmarl_suite.errors import ConfigError

LEFT, RIGHT, FORWARD, ZAP, STAY = range(5)
COOP, DEFECT = 3, 4


def board(positions: list[tuple[int, int, int]], coins: dict[tuple[int, int], int] | None = None,
          inventory: list[list[int]] | None = None, freeze: int = -1, step: int = 0) -> Storm2pState:
    """A one-env state (batch axis last) with agents at ``(x, y, facing)`` and ``coins`` by cell."""
    grid = np.zeros(64, np.int8)
    for (cx, cy), kind in (coins or {}).items():
        grid[cx * 8 + cy] = kind
    layout = grid.copy()
    for agent, (x, y, _) in enumerate(positions):
        grid[x * 8 + y] = agent + 1
    pos = np.array(positions, np.int32)
    return Storm2pState(grid=jnp.asarray(grid)[:, None], coins=jnp.asarray(layout)[:, None],
                        x=jnp.asarray(pos[:, 0])[:, None], y=jnp.asarray(pos[:, 1])[:, None],
                        facing=jnp.asarray(pos[:, 2])[:, None],
                        inventory=jnp.asarray(inventory or [[0, 0], [0, 0]], jnp.int32)[..., None],
                        freeze=jnp.array([freeze], jnp.int32), step=jnp.array([step], jnp.int32))


ENV = Storm2p()
_STEP = jax.jit(ENV.step_batch)


def step(state: Storm2pState, a0: int, a1: int, params: Any = None,
         seed: int = 0) -> tuple[Storm2pState, Any]:
    """One step of a one-env state with the two actions."""
    keys = jax.random.PRNGKey(seed)[None]
    return _STEP(keys, state, {"agents": jnp.array([[a0], [a1]])}, params or ENV.default_params)


def pos(state: Storm2pState) -> list[tuple[int, int, int]]:
    return [(int(state.x[a, 0]), int(state.y[a, 0]), int(state.facing[a, 0])) for a in range(2)]


def test_turning_and_walking_stop_at_the_edge() -> None:
    state = board([(0, 0, 0), (7, 7, 2)])
    state, _ = step(state, FORWARD, FORWARD)  # facing 0 steps +y; facing 2 steps -y
    assert pos(state) == [(0, 1, 0), (7, 6, 2)]
    state, _ = step(state, LEFT, RIGHT)  # left adds one to the facing, right takes one
    assert pos(state) == [(0, 1, 1), (7, 6, 1)]
    state, _ = step(state, FORWARD, FORWARD)  # facing 1 steps +x; agent 1 is on the right edge
    assert pos(state) == [(1, 1, 1), (7, 6, 1)]
    assert int(state.grid[1 * 8 + 1, 0]) == 1 and int(state.grid[0 * 8 + 1, 0]) == 0


def test_the_agent_that_stands_still_keeps_a_contested_cell() -> None:
    state = board([(2, 2, 1), (3, 2, 3)])  # facing each other, adjacent
    state, _ = step(state, FORWARD, STAY)
    assert pos(state) == [(2, 2, 1), (3, 2, 3)]
    state = board([(2, 2, 1), (4, 2, 3)])  # both walk into (3, 2): a coin flip, exactly one gets it
    winners = set()
    for seed in range(8):
        moved, _ = step(state, FORWARD, FORWARD, seed=seed)
        cells = [p[:2] for p in pos(moved)]
        assert cells in ([(3, 2), (4, 2)], [(2, 2), (3, 2)])
        winners.add(cells[0] == (3, 2))
    assert winners == {True, False}


def test_coins_are_taken_by_walking_onto_them_and_counted_in_info() -> None:
    state = board([(0, 0, 0), (7, 7, 2)], coins={(0, 1): COOP, (7, 6): DEFECT})
    state, ts = step(state, FORWARD, FORWARD)
    np.testing.assert_array_equal(state.inventory[..., 0], [[1, 0], [0, 1]])
    np.testing.assert_array_equal(ts.info["cooperative_pickups"][:, 0], [1, 0])
    np.testing.assert_array_equal(ts.info["defecting_pickups"][:, 0], [0, 1])
    state, ts = step(state, STAY, STAY)  # the coins are gone
    np.testing.assert_array_equal(state.inventory[..., 0], [[1, 0], [0, 1]])
    assert float(ts.info["cooperative_pickups"].sum() + ts.info["defecting_pickups"].sum()) == 0


def test_zap_pays_both_inventories_through_the_payoff_matrix_then_freezes_and_respawns() -> None:
    # Agent 0 holds 2 cooperate coins, agent 1 one of each; agent 0 zaps agent 1 two cells ahead.
    state = board([(3, 2, 0), (3, 4, 2)], inventory=[[2, 0], [1, 1]], coins={(6, 6): COOP})
    state, ts = step(state, ZAP, STAY)
    # Prisoner's Dilemma: s0 = (1, 0), s1 = (1/2, 1/2); agent 0 gets 3/2 + 0/2, agent 1 gets 3/2 + 5/2.
    np.testing.assert_allclose(ts.reward["agents"][:, 0], [1.5, 4.0])
    assert int(state.freeze[0]) == 5
    frozen_at = pos(state)
    for left in (4, 3, 2, 1):
        state, ts = step(state, FORWARD, ZAP)  # ignored while frozen
        assert pos(state) == frozen_at and float(ts.reward["agents"].sum()) == 0
        assert int(state.freeze[0]) == left
    state, ts = step(state, FORWARD, FORWARD)  # the fifth frozen step ends in a respawn
    assert int(state.freeze[0]) == -1
    np.testing.assert_array_equal(state.inventory[..., 0], 0)
    assert int(state.grid[6 * 8 + 6, 0]) == COOP  # the board's coins are back


@pytest.mark.parametrize(("second", "hit"), [((3, 3, 0), True), ((3, 4, 0), True), ((4, 3, 0), True),
                                             ((2, 3, 0), True), ((3, 5, 0), False), ((4, 2, 0), False)])
def test_the_beam_reaches_ahead_two_ahead_and_both_front_diagonals(second: tuple[int, int, int],
                                                                   hit: bool) -> None:
    state = board([(3, 2, 0), second], inventory=[[1, 0], [0, 1]])
    state, _ = step(state, ZAP, STAY)
    assert (int(state.freeze[0]) == 5) == hit


def test_no_payoff_unless_both_hold_coins_and_beams_light_only_empty_cells_for_one_step() -> None:
    state = board([(3, 2, 0), (3, 3, 0)], inventory=[[1, 0], [0, 0]], coins={(3, 4): DEFECT})
    state, ts = step(state, ZAP, STAY)
    assert float(jnp.abs(ts.reward["agents"]).sum()) == 0 and int(state.freeze[0]) == -1
    grid = np.asarray(state.grid[:, 0]).reshape(8, 8)
    assert grid[3, 3] == 2 and grid[3, 4] == DEFECT  # occupied cells keep what they hold
    assert grid[4, 3] == 6 and grid[2, 3] == 6  # the empty diagonals light up
    state, _ = step(state, STAY, STAY)
    assert not (np.asarray(state.grid) == 6).any()


def test_a_zap_at_the_edge_falls_back_on_the_cell_ahead() -> None:
    # Facing +x at the right edge: every beam cell clips back onto the agent's own cell.
    state = board([(7, 3, 1), (7, 4, 0)], inventory=[[1, 0], [1, 0]])
    state, ts = step(state, ZAP, STAY)
    assert float(ts.reward["agents"][0, 0]) == 0
    assert not (np.asarray(state.grid) == 6).any()


def test_the_view_is_egocentric_and_sees_walls_beyond_the_edge() -> None:
    for facing in range(4):
        state = board([(0, 0, facing), (7, 7, 0)])
        obs = np.asarray(ENV._observe(state)[0, :250, 0]).reshape(5, 5, 10)
        assert obs[2, 0, 0] == 1 and obs[..., 0].sum() == 1  # itself, always at view cell (2, 0)
        assert obs[..., 4].sum() > 0  # walls: the corner agent sees past two edges
    # Agent 1 two cells ahead of agent 0 (facing +y), turned to face -x: agent 0 sees it at (2, 2), with
    # relative facing (3 - 0) % 4 = 3; agent 1 sees itself in its own "self" channel.
    state = board([(3, 2, 0), (3, 4, 3)])
    obs = np.asarray(ENV._observe(state)[:, :250, 0]).reshape(2, 5, 5, 10)
    assert obs[0, 2, 2, 1] == 1 and obs[0, 2, 2, 6 + 3] == 1
    assert obs[1, 2, 0, 0] == 1 and obs[1, 2, 0, 1] == 0


def test_the_inventory_part_of_the_observation() -> None:
    state = board([(0, 0, 0), (7, 7, 0)], inventory=[[2, 1], [0, 3]])
    inv = np.asarray(ENV._observe(state)[:, 250:, 0])
    np.testing.assert_array_equal(inv, [[2, 1, 1, 1, 0, 0], [0, 3, 1, 1, 0, 0]])  # others' coins hidden
    inv = np.asarray(ENV._observe(state.replace(freeze=jnp.array([3])))[:, 250:, 0])
    np.testing.assert_array_equal(inv, [[2, 1, 1, 1, 0, 3], [0, 3, 1, 1, 2, 1]])  # shown while frozen


def test_inner_episodes_restart_the_board_and_only_the_last_step_truncates() -> None:
    params = ENV.default_params.replace(inner_steps=3, max_steps=6)  # two inner episodes of 3 steps
    state = board([(0, 0, 0), (7, 7, 2)], coins={(0, 1): COOP})
    for t in range(1, 7):
        state, ts = step(state, FORWARD, FORWARD, params=params, seed=t)
        assert bool(ts.truncated["agents"].all()) == (t == 6) and not bool(ts.terminated["agents"].any())
        if t == 1:
            assert int(state.inventory.sum()) == 1
        if t == 3:  # a fresh board (all 12 coins of the fixed layout), empty hands, the step's reward dropped
            grid = np.asarray(state.grid[:, 0])
            assert (grid == COOP).sum() == 6 and (grid == DEFECT).sum() == 6
            assert int(state.inventory.sum()) == 0 and int(state.step[0]) == 3
            np.testing.assert_array_equal(ts.reward["agents"], 0)


def test_games_are_payoff_params() -> None:
    np.testing.assert_array_equal(ENV.default_params.payoff_matrix, [[[3, 0], [5, 1]], [[3, 5], [0, 1]]])
    stag = Storm2p(game="stag_hunt").default_params.payoff_matrix
    np.testing.assert_array_equal(stag, [[[4, 0], [3, 2]], [[4, 3], [0, 2]]])
    state = board([(3, 2, 0), (3, 3, 2)], inventory=[[1, 0], [1, 0]])
    _, ts = step(state, ZAP, STAY, params=ENV.default_params.replace(payoff_matrix=stag))
    np.testing.assert_allclose(ts.reward["agents"][:, 0], [4.0, 4.0])


@pytest.mark.parametrize(("kwargs", "field"), [({"game": "poker"}, "game"),
                                                ({"payoff_matrix": [[1, 2]]}, "payoff_matrix"),
                                                ({"freeze_penalty": 0}, "freeze_penalty"),
                                                ({"num_inner_steps": 0}, "num_inner_steps"),
                                                ({"num_agents": 3}, "num_agents")])
def test_bad_arguments_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        jaxmarl_suite.make("storm_2p", **kwargs)


def test_render_is_a_jittable_image() -> None:
    state = board([(3, 2, 0), (3, 4, 2)], inventory=[[2, 0], [1, 1]], coins={(0, 0): COOP, (7, 7): DEFECT})
    image = jax.jit(ENV.render)(jax.tree.map(lambda x: x[..., 0], state))
    assert image.dtype == jnp.uint8 and image.shape == (240 + 48, 240, 3)
    assert len(np.unique(np.asarray(image).reshape(-1, 3), axis=0)) > 5
