"""n-player STORM rules on hand-built boards: payoffs of one zap and of a chain of two, who a zap hits (the
four beam cells, the left zap on the left cell), conflicts (one winner per target, one-cell zaps before
two-cell ones), freezing and respawn (the walk that places respawned agents and coins, against a plain
re-implementation over the same random draw), collisions (including the knock-on return JaxMARL omits),
the view, pick-up counts, errors. Expected values are worked out by hand from environments/storm/README.md;
test_storm_np_parity.py compares the env with JaxMARL's ``storm_np`` live."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.environments.storm import Storm, StormState
from jaxmarl_suite.errors import ConfigError

LEFT, RIGHT, FORWARD, STAY, ZAP_ONE, ZAP_TWO, ZAP_RIGHT, ZAP_LEFT = range(8)
COOP, DEFECT = 3, 4

ENV = Storm(num_agents=3, num_coins=1)
_STEP: Any = None
_OBSERVE = jax.jit(ENV._observe)


def board(positions: list[tuple[int, int, int]], inventory: list[list[int]] | None = None,
          coins: tuple[tuple[int, int], tuple[int, int]] = ((7, 0), (0, 7)),
          freeze: np.ndarray | None = None) -> StormState:
    """A one-env state (batch axis last): agents at ``(x, y, facing)``, one cooperate and one defect coin."""
    grid = np.zeros(64, np.int8)
    (cx, cy), (dx, dy) = coins
    grid[cx * 8 + cy], grid[dx * 8 + dy] = COOP, DEFECT
    for agent, (x, y, _) in enumerate(positions):
        grid[x * 8 + y] = 5 + agent
    pos = np.array(positions, np.int32)
    n = len(positions)
    held = np.array(inventory or [[0, 0]] * n, np.int32)
    return StormState(grid=jnp.asarray(grid)[:, None], cooperate_coins=jnp.array([[cx * 8 + cy]]),
                      defect_coins=jnp.array([[dx * 8 + dy]]), x=jnp.asarray(pos[:, :1]),
                      y=jnp.asarray(pos[:, 1:2]), facing=jnp.asarray(pos[:, 2:]),
                      inventory=jnp.asarray(held)[..., None],
                      freeze=jnp.asarray(np.full((n, n), -1) if freeze is None else freeze,
                                         jnp.int32)[..., None],
                      step=jnp.array([0], jnp.int32))


def step(state: StormState, actions: list[int], seed: int = 0) -> tuple[StormState, Any]:
    """One step of a one-env state; compiled once, without XLA's slow backend passes (same program)."""
    global _STEP
    keys = jax.random.PRNGKey(seed)[None]
    args = (keys, state, {"agents": jnp.array(actions, jnp.int32)[:, None]}, ENV.default_params)
    if _STEP is None:
        _STEP = jax.jit(ENV.step_batch).lower(*args).compile(
            compiler_options={"xla_backend_optimization_level": 0})
    return _STEP(*args)


def pos(state: StormState) -> list[tuple[int, int, int]]:
    x, y, facing = (np.asarray(v)[:, 0] for v in (state.x, state.y, state.facing))
    return [(int(x[a]), int(y[a]), int(facing[a])) for a in range(len(x))]


def pairs(state: StormState) -> set[tuple[int, int]]:
    """The pairs frozen by an interaction on the last step (entries at the freeze penalty)."""
    freeze = np.asarray(state.freeze[..., 0])
    return {(a, b) for a, b in zip(*np.nonzero(freeze == 5), strict=True) if a < b}


def test_one_zap_pays_each_its_own_side_and_freezes_the_pair() -> None:
    # Agent 0 (cooperate coin) zaps agent 1 (defect coin) one cell ahead; agent 2 stands far away.
    state = board([(2, 2, 0), (2, 3, 1), (6, 6, 0)], inventory=[[1, 0], [0, 1], [1, 0]])
    state, ts = step(state, [ZAP_ONE, STAY, STAY])
    # Prisoner's Dilemma: the row agent 0 plays C against D, gets M0[C][D] = 0; agent 1 gets M1[C][D] = 5.
    np.testing.assert_allclose(np.asarray(ts.reward["agents"])[:, 0], [0.0, 5.0, 0.0])
    assert pairs(state) == {(0, 1)}
    assert np.asarray(state.freeze[2, :, 0]).tolist() == [-1, -1, -1]


def test_a_chain_of_two_zaps_pays_the_middle_agent_twice() -> None:
    # 0 zaps 1 (one ahead, +y); 1, facing +x, zaps 2 one ahead: pairs {0, 1} and {1, 2}.
    state = board([(2, 2, 0), (2, 3, 1), (3, 3, 0)], inventory=[[1, 0], [1, 1], [0, 2]])
    state, ts = step(state, [ZAP_ONE, ZAP_ONE, STAY])
    # s0 = (1, 0), s1 = (1/2, 1/2), s2 = (0, 1).
    # {0, 1}: agent 0 gets (3 + 0) / 2 = 1.5, agent 1 gets (3 + 5) / 2 = 4.
    # {1, 2}: agent 1 gets (0 + 1) / 2 = 0.5 (row: M0[C][D], M0[D][D]), agent 2 gets (5 + 1) / 2 = 3.
    np.testing.assert_allclose(np.asarray(ts.reward["agents"])[:, 0], [1.5, 4.5, 3.0])
    assert pairs(state) == {(0, 1), (1, 2)}


def test_no_interaction_without_coins_on_both_sides() -> None:
    for held in ([[1, 0], [0, 0], [0, 0]], [[0, 0], [1, 0], [0, 0]]):
        state, ts = step(board([(2, 2, 0), (2, 3, 1), (6, 6, 0)], inventory=held), [ZAP_ONE, STAY, STAY])
        assert not np.asarray(ts.reward["agents"]).any() and not pairs(state)


@pytest.mark.parametrize(("action", "target", "hits"), [
    (ZAP_ONE, (3, 4), True), (ZAP_TWO, (3, 5), True), (ZAP_RIGHT, (4, 4), True), (ZAP_LEFT, (2, 4), True),
    (ZAP_ONE, (3, 5), False), (ZAP_TWO, (3, 4), False), (ZAP_LEFT, (4, 4), False), (ZAP_RIGHT, (2, 4), False),
])
def test_each_zap_reaches_its_own_cell(action: int, target: tuple[int, int], hits: bool) -> None:
    # Agent 0 at (3, 3) facing +y: one ahead (3, 4), two ahead (3, 5), ahead + x (4, 4) is "right" (facing 1),
    # ahead - x (2, 4) "left". JaxMARL's left zap tests the right cell (storm.py:1075); ours the left.
    state = board([(3, 3, 0), (*target, 2), (7, 7, 0)], inventory=[[1, 0], [1, 0], [0, 0]])
    state, ts = step(state, [action, STAY, STAY])
    assert (pairs(state) == {(0, 1)}) is hits
    np.testing.assert_allclose(np.asarray(ts.reward["agents"])[:2, 0], [3.0, 3.0] if hits else [0.0, 0.0])


def test_two_one_cell_zaps_on_one_target_a_random_one_wins() -> None:
    # 0 (below, facing +y) and 2 (above, facing -y) both zap 1 one cell ahead.
    state = board([(2, 2, 0), (2, 3, 1), (2, 4, 2)], inventory=[[1, 0], [1, 0], [1, 0]])
    winners = set()
    for seed in range(12):
        after, ts = step(state, [ZAP_ONE, STAY, ZAP_ONE], seed=seed)
        assert len(pairs(after)) == 1
        winners |= pairs(after)
        assert np.asarray(ts.reward["agents"])[1, 0] == 3.0
    assert winners == {(0, 1), (1, 2)}


def test_a_two_cell_zap_yields_to_a_one_cell_zap() -> None:
    # 0 zaps 1 from one cell; 2, facing -y from two cells away, zaps it too. JaxMARL lets both through.
    state = board([(2, 2, 0), (2, 3, 1), (2, 5, 2)], inventory=[[1, 0], [1, 0], [1, 0]])
    for seed in range(4):
        after, _ = step(state, [ZAP_ONE, STAY, ZAP_TWO], seed=seed)
        assert pairs(after) == {(0, 1)}


def test_frozen_pair_stands_still_then_respawns_with_empty_hands() -> None:
    state = board([(2, 2, 0), (2, 3, 1), (6, 6, 0)], inventory=[[1, 0], [0, 1], [1, 0]])
    state, _ = step(state, [ZAP_ONE, STAY, STAY])
    for left in (4, 3, 2, 1):  # actions of the frozen pair are ignored for freeze_penalty = 5 steps
        state, _ = step(state, [FORWARD, FORWARD, LEFT], seed=left)
        assert pos(state)[:2] == [(2, 2, 0), (2, 3, 1)]
        assert int(state.freeze[0, 1, 0]) == left
    state, ts = step(state, [FORWARD, FORWARD, STAY], seed=9)
    assert int(state.freeze[0, 1, 0]) == 0 and int(state.freeze[1, 0, 0]) == 0
    assert np.asarray(state.inventory[:2, :, 0]).tolist() == [[0, 0], [0, 0]]
    assert pos(state)[2] == (6, 6, 0)  # agent 2 was never frozen: it turned four times, then stayed
    cells = [x * 8 + y for x, y, _ in pos(state)]
    assert len(set(cells)) == 3 and not {7 * 8, 7} & set(cells)  # free cells: no agent, no coin
    grid = np.asarray(state.grid[:, 0])
    assert [grid[c] for c in cells] == [5, 6, 7] and grid[7 * 8] == COOP and grid[7] == DEFECT
    state, _ = step(state, [STAY, STAY, STAY])  # free again: the next step's actions count
    assert int(state.freeze[0, 1, 0]) == 0


def walk(order: np.ndarray, occupied: set[int], queues: list[list[bool]]) -> list[list[int | None]]:
    """JaxMARL's respawn walk, written plainly, with the occupancy of the candidate cell: per cell of the
    permutation, each queue's pointer in turn skips an item that needs nothing or places the next item that
    needs a cell if the cell is free."""
    spots = [int(k % 8) * 8 + int(k // 8) for k in order]  # JaxMARL's SPAWNS[k] is (k % 8, k // 8)
    pointers, placed = [0] * len(queues), [[None] * len(q) for q in queues]
    for spot in spots:
        free = spot not in occupied
        for q, needs in enumerate(queues):
            if pointers[q] >= len(needs):
                continue
            if not needs[pointers[q]]:
                pointers[q] += 1
            elif free:
                placed[q][pointers[q]] = spot
                pointers[q] += 1
                free = False
    return placed


@pytest.mark.parametrize("seed", range(6))
def test_respawn_places_agents_and_taken_coins_on_free_cells_in_walk_order(seed: int) -> None:
    # Agents 0 and 1 respawn this step; agent 2 stands where it took the cooperate coin (which respawns too);
    # the defect coin is still on the board. Expected: the walk above over the same permutation draw.
    freeze = np.full((3, 3), -1)
    freeze[0, 1] = freeze[1, 0] = 1
    state = board([(2, 2, 0), (2, 3, 1), (5, 5, 0)], inventory=[[1, 0], [0, 1], [1, 0]],
                  coins=((5, 5), (0, 7)), freeze=freeze)
    state = state.replace(grid=state.grid.at[5 * 8 + 5].set(7))  # agent 2 over the taken coin's cell
    after, _ = step(state, [STAY, STAY, STAY], seed=seed)
    key = jax.random.PRNGKey(seed)
    order = np.asarray(jax.random.permutation(jax.random.split(key, 3)[1], 64))
    agents, cooperate, defect = walk(order, {5 * 8 + 5, 7}, [[True, True, False], [True], [False]])
    cells = [x * 8 + y for x, y, _ in pos(after)]
    assert cells == [agents[0], agents[1], 5 * 8 + 5] and defect == [None]
    assert int(after.cooperate_coins[0, 0]) == cooperate[0] and int(after.defect_coins[0, 0]) == 7
    facing = np.asarray(jax.random.randint(jax.random.split(key, 3)[2], (3,), 0, 3, jnp.int8))
    assert [f for _, _, f in pos(after)] == [int(facing[0]), int(facing[1]), 0]
    grid = np.asarray(after.grid[:, 0])
    assert grid[cooperate[0]] == COOP and [grid[c] for c in cells] == [5, 6, 7]


def test_collisions_and_the_knock_on_return() -> None:
    # 0 steps into 1's cell while 1 stays: 0 goes back. 2 stepped into 0's old cell, so 2 goes back too.
    state = board([(2, 2, 1), (3, 2, 0), (1, 2, 1)])
    state, _ = step(state, [FORWARD, STAY, FORWARD])
    assert pos(state) == [(2, 2, 1), (3, 2, 0), (1, 2, 1)]
    # Two movers onto one cell: one of them (at random) gets it.
    state = board([(2, 2, 1), (4, 2, 3), (6, 6, 0)])
    seen = set()
    for seed in range(12):
        after, _ = step(state, [FORWARD, FORWARD, STAY], seed=seed)
        seen.add(tuple(pos(after)[:2]))
    assert seen == {((3, 2, 1), (4, 2, 3)), ((2, 2, 1), (3, 2, 3))}


def test_pick_ups_and_their_counts() -> None:
    state = board([(7, 1, 2), (0, 6, 0), (4, 4, 0)])
    state, ts = step(state, [FORWARD, FORWARD, FORWARD])  # 0 onto the cooperate coin, 1 onto the defect one
    assert np.asarray(state.inventory[..., 0]).tolist() == [[1, 0], [0, 1], [0, 0]]
    assert np.asarray(ts.info["cooperative_pickups"])[:, 0].tolist() == [1, 0, 0]
    assert np.asarray(ts.info["defecting_pickups"])[:, 0].tolist() == [0, 1, 0]


def test_the_view() -> None:
    # Agent 0 at (2, 2) facing +y with a cooperate coin; agent 1 two cells ahead facing -y, frozen with 2.
    freeze = np.full((3, 3), -1)
    freeze[1, 2] = freeze[2, 1] = 3
    state = board([(2, 2, 0), (2, 4, 2), (6, 6, 0)], inventory=[[1, 0], [0, 1], [1, 0]], freeze=freeze)
    obs = np.asarray(_OBSERVE(state))[0, :, 0].reshape(5, 5, 14)
    # The viewer sits at view cell (2, 0): self, holds a coin, its own inventory.
    assert obs[2, 0].tolist() == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    # Agent 1: row = x offset + 2, column = y offset; faces back at us (relative facing 2); frozen, and
    # its inventory hidden (agent 0 is not frozen with it).
    assert obs[2, 2].tolist() == [0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1]
    # Wall: x = -1 is view row 0 (x offset -3 is off the view; -2 -> row 0 is x = 0, on the board).
    assert obs[:, :, 0].sum() == 0
    # Agent 1 sees its own inventory in its own cell.
    own = np.asarray(_OBSERVE(state))[1, :, 0].reshape(5, 5, 14)
    assert own[2, 0, 11:13].tolist() == [0, 1]


def test_registration_errors_and_render() -> None:
    for env_id in ("STORM_np", "storm_np", "STORM", "storm"):
        env = jaxmarl_suite.make(env_id)
        assert isinstance(env, Storm) and env.num_agents == 2
    assert Storm(cnn=True).observation_space("agents").shape == (5, 5, 14)
    assert Storm().observation_space("agents").shape == (350,)
    for kwargs in ({"num_agents": 1}, {"num_coins": 40}, {"obs_size": 1}, {"grid_size": 3},
                   {"game": "chess"}, {"payoff_matrix": [[1, 2], [3, 4]]}, {"cnn": 1}, {"freeze_penalty": 0}):
        with pytest.raises(ConfigError):
            Storm(**kwargs)
    state = board([(2, 2, 0), (2, 4, 2), (6, 6, 0)])
    image = jax.jit(ENV.render)(jax.tree.map(lambda leaf: leaf[..., 0], state))
    assert image.shape == (10 * 24 + 3 * 24, 240, 3) and image.dtype == jnp.uint8
