"""Live comparison of our n-player STORM with JaxMARL 0.2.0's ``storm_np`` (``InTheMatrix``), key for key.

Our env fixes JaxMARL's bugs (environments/storm/README.md), so the trajectories cannot agree everywhere.
The comparison is therefore made one step at a time from a shared state: before every step JaxMARL's state is
converted into ours, both envs step with the same key and actions, and the results are compared. Our env
consumes each key exactly as JaxMARL's ``step_env`` does (collision draws, conflict draws, respawn and
inner-episode draws), so everything random is compared too. Per env and step:

- **always**: whether the episode ended; then, unless JaxMARL's state is already broken by an earlier bug
  (an agent hidden under a coin or another agent: skipped) or it leaves two agents on one cell this step
  (no knock-on return: nothing more compared), facings, inventories, the step count, the agents that
  respawn and their new facings;
- unless the step has a zap JaxMARL resolves wrongly (a qualified ``zap_left``, or a one-cell and a two-cell
  zap in the same step, where JaxMARL never lets the farther zapper yield): the freeze matrix;
- unless an agent respawns (JaxMARL's respawn reads the occupancy of the wrong cell) or JaxMARL's collision
  fix leaves two agents on one cell: positions, coin cells and the board, where the only difference allowed
  is a beam cell ours lights and JaxMARL's scatter erases (checked to be such a cell);
- rewards: against a payoff computed here from JaxMARL's freeze matrix (the pairs it froze this step) and
  inventories; JaxMARL's own rewards must equal ours on steps without interactions;
- observations: JaxMARL's ``get_obs`` applied to *our* state must give our wall, beam, coin, relative-facing
  and "holds a coin" channels exactly; the self/other, inventory and frozen channels (which JaxMARL indexes
  off by one) are checked against values computed here from the state.

Each category's count is asserted to be a minority, and the events (interactions, respawns, conflicts) are
asserted to happen. Negative controls (a perturbed payoff, freeze penalty or observation) must fail.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.environments.storm import Storm, StormState

storm_module = pytest.importorskip("jaxmarl.environments.storm.storm", reason="JaxMARL is the reference")

GRID = 8
VIEW = 5


FAST_COMPILE = {"xla_backend_optimization_level": 0}
"""Both sides compile without XLA's backend optimisations (the same programs, much faster to build)."""


def _compiled(fn: Any, *example: Any) -> Any:
    return jax.jit(fn).lower(*example).compile(compiler_options=FAST_COMPILE)


@functools.cache
def _functions(num_agents: int, num_envs: int) -> tuple[Storm, Any, Any, Any, Any]:
    """Ours and JaxMARL's ``InTheMatrix``, compiled for ``num_envs`` envs: our env and step, and JaxMARL's
    vmapped reset, ``step_env`` and ``get_obs``."""
    env = Storm(num_agents=num_agents)
    ref = storm_module.InTheMatrix(num_agents=num_agents)
    keys = jax.random.split(jax.random.PRNGKey(0), num_envs)
    ref_reset = _compiled(jax.vmap(ref.reset), keys)
    _, ref_state = ref_reset(keys)
    actions = {a: jnp.zeros(num_envs, jnp.int32) for a in range(num_agents)}
    ref_step = _compiled(jax.vmap(ref.step_env), keys, ref_state, actions)
    ref_obs = _compiled(jax.vmap(ref.get_obs), ref_state)
    state, _ = env.reset_batch(keys, env.default_params)
    step = _compiled(env.step_batch, keys, state, {"agents": jnp.zeros((num_agents, num_envs), jnp.int32)},
                     env.default_params)
    return env, step, ref_reset, ref_step, ref_obs


def to_ours(ref: Any) -> StormState:
    """JaxMARL's batched state (batch first) as ours (batch last)."""
    loc = np.asarray(ref.agent_locs).astype(np.int32)
    red, blue = np.asarray(ref.red_coins).astype(np.int32), np.asarray(ref.blue_coins).astype(np.int32)
    num_envs = loc.shape[0]
    return StormState(
        grid=jnp.asarray(np.asarray(ref.grid).reshape(num_envs, -1).T.astype(np.int8)),
        cooperate_coins=jnp.asarray((red[..., 0] * GRID + red[..., 1]).T),
        defect_coins=jnp.asarray((blue[..., 0] * GRID + blue[..., 1]).T),
        x=jnp.asarray(loc[..., 0].T), y=jnp.asarray(loc[..., 1].T), facing=jnp.asarray(loc[..., 2].T),
        inventory=jnp.asarray(np.asarray(ref.agent_invs).astype(np.int32).transpose(1, 2, 0)),
        freeze=jnp.asarray(np.asarray(ref.freeze).astype(np.int32).transpose(1, 2, 0)),
        step=jnp.asarray(np.asarray(ref.step).astype(np.int32)))


def to_reference(ours: StormState, like: Any) -> Any:
    """Our batched state as JaxMARL's (for its ``get_obs``)."""
    grid = np.asarray(ours.grid).T.reshape(-1, GRID, GRID).astype(np.int16)
    locs = np.stack([np.asarray(ours.x).T, np.asarray(ours.y).T, np.asarray(ours.facing).T], -1)
    return like.replace(grid=jnp.asarray(grid), agent_locs=jnp.asarray(locs.astype(np.int16)),
                        agent_invs=jnp.asarray(np.asarray(ours.inventory).transpose(2, 0, 1).astype(np.int8)),
                        freeze=jnp.asarray(np.asarray(ours.freeze).transpose(2, 0, 1).astype(np.int16)))


def policy(rng: np.random.Generator, state: StormState, random_share: float = 0.3) -> np.ndarray:
    """``int32[n, B]``: each agent chases the next one (turning toward it along the longer axis) and fires a
    random kind of zap when within two cells; ``random_share`` of the actions uniform instead."""
    x, y, facing = (np.asarray(a) for a in (state.x, state.y, state.facing))
    dx, dy = np.roll(x, -1, 0) - x, np.roll(y, -1, 0) - y
    wanted = np.where(np.abs(dx) >= np.abs(dy), np.where(dx > 0, 1, 3), np.where(dy > 0, 0, 2))
    turn = (wanted - facing) % 4
    act = np.where(turn == 0, 2, np.where(turn == 1, 0, 1))
    near = (np.abs(dx) + np.abs(dy) <= 2) & (turn != 2)
    act = np.where(near, rng.integers(4, 8, act.shape), act)
    return np.where(rng.random(act.shape) < random_share, rng.integers(0, 8, act.shape), act).astype(np.int32)


def beam_cells(x: int, y: int, facing: int) -> list[int]:
    """JaxMARL's four zap cells (one ahead, two ahead, ahead + STEP[d + 1], ahead + STEP[d - 1])."""
    step = [(0, 1), (1, 0), (0, -1), (-1, 0)]
    fx, fy = step[facing]

    def clip(v: int) -> int:
        return min(max(v, 0), GRID - 1)

    ahead = clip(x + fx) * GRID + clip(y + fy)
    cells = [ahead, clip(x + 2 * fx) * GRID + clip(y + 2 * fy)]
    for side in ((facing + 1) % 4, (facing - 1) % 4):
        cx, cy = x + fx + step[side][0], y + fy + step[side][1]
        cells.append(ahead if not (0 <= cx < GRID and 0 <= cy < GRID) else cx * GRID + cy)
    return cells


def zap_bug(act: np.ndarray, old: StormState, new: StormState) -> bool:
    """Whether JaxMARL resolves this step's zaps differently from the rules (one env, numpy state): a
    qualified ``zap_left`` whose outcome changes because JaxMARL tests the right cell for it
    (``storm.py:1075``), or a two-cell zap at a target a one-cell zap also reaches (JaxMARL's filter compares
    each agent's target with its own one-cell target, so it never fires). Positions are the ones after the
    move: the new ones, or the old ones for frozen agents (which stand still and may have respawned)."""
    n = len(act)
    frozen = old.freeze.max(1) > 0
    holds = new.inventory.sum(1) > 0
    x, y = np.where(frozen, old.x, new.x), np.where(frozen, old.y, new.y)
    occupant = {int(x[a]) * GRID + int(y[a]): a for a in range(n)}
    qualified = (act >= 4) & ~frozen & holds

    def target(zapper: int, cell: int, need_coins: bool = True) -> int:
        other = occupant.get(cell, -1)
        ok = other >= 0 and other != zapper and not frozen[other] and (holds[other] or not need_coins)
        return other if ok else -1

    ours, forward = {}, set()
    for i in np.flatnonzero(qualified):
        cells = beam_cells(int(x[i]), int(y[i]), int(new.facing[i]))
        kind = int(act[i]) - 4
        ours[i] = target(i, cells[kind])
        if kind == 3:
            theirs = target(i, cells[3], need_coins=False) if target(i, cells[2]) >= 0 else -1
            if theirs != ours[i]:
                return True
        if kind == 0 and ours[i] >= 0:
            forward.add(ours[i])
    return any(ours[i] in forward for i in ours if act[i] != 4)


def agent_window(grid: np.ndarray, x: int, y: int, facing: int) -> np.ndarray:
    """``int[25]``: the agent index (or -1) in each cell of the viewer's 5x5 window, row-major: JaxMARL's
    padded slice at its ``_get_obs_point`` corner, turned by ``rot90(k=facing)``."""
    pad = VIEW - 1
    board = np.pad(grid.reshape(GRID, GRID).astype(np.int32) - 5, pad, constant_values=-1)
    board = np.where(board >= 0, board, -1)
    corner = {0: (-(VIEW // 2), 0), 1: (0, -(VIEW // 2)), 2: (-(VIEW // 2), -pad), 3: (-pad, -(VIEW // 2))}
    cx, cy = x + pad + corner[facing][0], y + pad + corner[facing][1]
    return np.rot90(board[cx:cx + VIEW, cy:cy + VIEW], k=facing).reshape(-1)


def expected_payoff(inventory: np.ndarray, pairs: np.ndarray, payoff: np.ndarray) -> np.ndarray:
    """Per agent, the sum over its pairs ``a < b`` of ``s_a @ M[0] @ s_b`` (for ``a``) or ``s_a @ M[1] @ s_b``
    (for ``b``), ``s`` the normalised inventory: ``inventory [n, 2]``, ``pairs [n, n]``."""
    share = inventory / np.maximum(inventory.sum(1, keepdims=True), 1)
    reward = np.zeros(len(inventory))
    for a in range(len(inventory)):
        for b in range(a + 1, len(inventory)):
            if pairs[a, b]:
                reward[a] += share[a] @ payoff[0] @ share[b]
                reward[b] += share[a] @ payoff[1] @ share[b]
    return reward


def run_parity(n: int, num_envs: int, num_steps: int, seed: int, params: Any = None,
               obs_hook: Any = None) -> dict[str, int]:
    """Step JaxMARL's env and ours (``n`` agents) side by side as the module docstring says; raise on any
    mismatch. Returns event counts."""
    env, step, ref_reset, ref_step, ref_obs = _functions(n, num_envs)
    params = env.default_params if params is None else params
    payoff = np.asarray(env.default_params.payoff_matrix)
    penalty = int(env.default_params.freeze_penalty)
    rng = np.random.default_rng(seed)
    _, ref_state = ref_reset(jax.random.split(jax.random.PRNGKey(seed), num_envs))
    counts = dict.fromkeys(("interactions", "respawns", "zap_bug", "overlap_bug", "beam_bug", "reward_bug",
                            "inherited_bug", "collisions", "checked"), 0)
    for t in range(num_steps):
        keys = jax.random.split(jax.random.PRNGKey(seed * 1000 + t + 1), num_envs)
        before = to_ours(ref_state)
        actions = policy(rng, before)
        ours, ts = step(keys, before, {"agents": jnp.asarray(actions)}, params)
        if obs_hook is not None:
            ts = obs_hook(ts)
        _, ref_state, ref_reward, ref_done, _ = ref_step(keys, ref_state, {a: jnp.asarray(actions[a])
                                                                           for a in range(n)})
        after = to_ours(ref_state)
        ref_obs_of_ours = np.asarray(ref_obs(to_reference(ours, ref_state)))  # [B, n, 5, 5, 14]
        obs = np.asarray(ts.obs["agents"]).reshape(n, VIEW, VIEW, 14, num_envs)
        reward = np.asarray(ts.reward["agents"])
        np.testing.assert_array_equal(np.asarray(ts.truncated["agents"])[0], np.asarray(ref_done["__all__"]))
        old_freeze, new_freeze = np.asarray(before.freeze), np.asarray(after.freeze)
        respawned = ((new_freeze == 0) & (old_freeze == 1)).any(1)  # [n, B]
        done = np.asarray(ref_done["__all__"])
        ours_np, after_np, before_np = (jax.tree.map(np.asarray, tree) for tree in (ours, after, before))
        ref_reward = np.asarray(ref_reward)
        # A state JaxMARL's earlier bugs left broken (an agent under a coin or another agent) is no start to
        # compare from: those envs are skipped until JaxMARL's own state is whole again.
        cells = before_np.x * GRID + before_np.y
        shown = np.take_along_axis(before_np.grid, cells, 0) == 5 + np.arange(n)[:, None]
        whole = shown.all(0)
        counts["inherited_bug"] += int((~whole).sum())
        for b in range(num_envs):
            if done[b]:  # JaxMARL has already started over; ours keeps the last state for final_obs
                np.testing.assert_array_equal(reward[:, b], 0.0)
                continue
            if not whole[b]:
                continue
            mine = jax.tree.map(lambda leaf, b=b: leaf[..., b], ours_np)
            theirs = jax.tree.map(lambda leaf, b=b: leaf[..., b], after_np)
            old = jax.tree.map(lambda leaf, b=b: leaf[..., b], before_np)
            where = f"step {t} env {b}"
            for field in ("facing", "inventory", "step"):
                np.testing.assert_array_equal(getattr(mine, field), getattr(theirs, field), err_msg=where)
            # JaxMARL left two agents on one cell (no knock-on return): their zaps and positions differ.
            overlap = len(set((theirs.x * GRID + theirs.y).tolist())) < n
            counts["overlap_bug"] += overlap
            if overlap:
                continue
            inner_reset = False  # one inner episode per episode here: the only restart is the episode's end
            qualified = (actions[:, b] >= 4) & (old.freeze.max(1) <= 0) & (theirs.inventory.sum(1) > 0)
            bug = not inner_reset and zap_bug(actions[:, b], old, theirs)
            counts["zap_bug"] += bug
            if not bug:
                np.testing.assert_array_equal(mine.freeze, theirs.freeze, err_msg=where)
            counts["respawns"] += bool(respawned[:, b].any())
            if respawned[:, b].any():
                continue
            ahead = np.clip(old.x + np.array([0, 1, 0, -1])[old.facing], 0, GRID - 1) * GRID + np.clip(
                old.y + np.array([1, 0, -1, 0])[old.facing], 0, GRID - 1)
            heading = np.where((actions[:, b] == 2) & (old.freeze.max(1) <= 0), ahead, old.x * GRID + old.y)
            counts["collisions"] += len(set(heading.tolist())) < n
            for field in ("x", "y", "cooperate_coins", "defect_coins"):
                np.testing.assert_array_equal(getattr(mine, field), getattr(theirs, field), err_msg=where)
            differs = np.flatnonzero(mine.grid != theirs.grid)
            if len(differs):  # only beams JaxMARL's scatter erased: a later non-zapper's same-kind cell
                counts["beam_bug"] += 1
                assert (mine.grid[differs] == 2).all() and (theirs.grid[differs] == 0).all(), where
                rays = [beam_cells(int(mine.x[a]), int(mine.y[a]), int(mine.facing[a])) for a in range(n)]
                for cell in differs:
                    assert any(rays[i][k] == cell and any(rays[j][k] == cell and not qualified[j]
                                                          for j in range(i + 1, n))
                               for i in range(n) if qualified[i] for k in range(4)), where
            # Rewards: the pairs JaxMARL froze this step, paid from its inventories.
            new_pairs = (theirs.freeze == penalty) & (old.freeze != penalty) & ~np.eye(n, dtype=bool)
            if inner_reset:
                want = np.zeros(n)
            elif bug:
                ours_pairs = (mine.freeze == penalty) & (old.freeze != penalty)
                want = expected_payoff(mine.inventory, ours_pairs, payoff)
            else:
                want = expected_payoff(theirs.inventory, new_pairs, payoff)
            np.testing.assert_allclose(reward[:, b], want, atol=1e-5, err_msg=where)
            if new_pairs.any() and not bug:
                counts["interactions"] += 1
                counts["reward_bug"] += not np.allclose(ref_reward[b], want, atol=1e-5)
            elif not new_pairs.any() and not bug:
                np.testing.assert_allclose(reward[:, b], ref_reward[b], atol=1e-5, err_msg=where)
            counts["checked"] += 1
        # Observations of our state: JaxMARL's unaffected channels exactly, the rest computed here.
        theirs_obs = ref_obs_of_ours.transpose(1, 2, 3, 4, 0)[..., whole]  # [n, 5, 5, 14, B whole]
        obs = obs[..., whole]
        same = [0, 1, 2, 3, 6, 7, 8, 9, 10]
        np.testing.assert_array_equal(obs[..., same, :], theirs_obs[..., same, :], err_msg=f"obs step {t}")
        anyone = (theirs_obs[..., 4, :] + theirs_obs[..., 5, :]) > 0  # JaxMARL's self + other: any agent
        own_cell = np.zeros((VIEW, VIEW, 1), bool)
        own_cell[VIEW // 2, 0] = True
        np.testing.assert_array_equal(obs[..., 4, :], anyone & own_cell, err_msg=f"obs self step {t}")
        np.testing.assert_array_equal(obs[..., 5, :], anyone & ~own_cell, err_msg=f"obs other step {t}")
        mine_all = jax.tree.map(lambda leaf, keep=whole: leaf[..., keep], ours_np)
        grid, inv, freeze = mine_all.grid, mine_all.inventory, mine_all.freeze
        frozen = freeze.max(1) > 0
        for b in range(int(whole.sum())):
            for v in range(n):
                who = agent_window(grid[:, b], int(mine_all.x[v, b]), int(mine_all.y[v, b]),
                                   int(mine_all.facing[v, b]))
                other = who >= 0
                other[VIEW // 2 * VIEW] = False
                shown = (who == v) | (other & (freeze[v, np.clip(who, 0, n - 1), b] > 0))
                want_inv = np.where(shown[:, None], inv[np.clip(who, 0, n - 1), :, b], 0)
                got = obs[v, ..., b].reshape(VIEW * VIEW, 14)
                np.testing.assert_array_equal(got[:, 11:13], want_inv, err_msg=f"obs inventory step {t}")
                np.testing.assert_array_equal(got[:, 13], other & frozen[np.clip(who, 0, n - 1), b],
                                              err_msg=f"obs frozen step {t}")
    return counts


@pytest.mark.slow  # 20-45 s of compiling both envs on 2 cores; STORM_2p's live parity runs by default
def test_parity_three_players() -> None:
    counts = run_parity(3, num_envs=24, num_steps=40, seed=0)
    checked = counts["checked"]
    assert counts["interactions"] >= 5 and counts["respawns"] >= 3, counts
    assert counts["reward_bug"] >= 1, counts  # JaxMARL pays the wrong agents on some of them
    assert checked >= 0.7 * 24 * 40, counts


@pytest.mark.slow
@pytest.mark.parametrize("perturb", ["payoff", "freeze", "obs"])
def test_parity_negative_controls(perturb: str) -> None:
    params, hook = Storm(num_agents=3).default_params, None
    if perturb == "payoff":
        params = dataclasses.replace(params, payoff_matrix=params.payoff_matrix.at[0, 0, 0].add(0.5))
    elif perturb == "freeze":
        params = dataclasses.replace(params, freeze_penalty=params.freeze_penalty + 1)
    else:
        def hook(ts: Any) -> Any:
            obs = ts.obs["agents"]
            return ts._replace(obs={"agents": obs.at[1, 7, 2].set(1.0 - obs[1, 7, 2])})
    with pytest.raises(AssertionError):
        run_parity(3, num_envs=24, num_steps=40, seed=0, params=params, obs_hook=hook)


@pytest.mark.slow
@pytest.mark.parametrize("num_agents", [2, 4, 6])
def test_parity_long(num_agents: int) -> None:
    counts = run_parity(num_agents, num_envs=32, num_steps=152, seed=num_agents)
    assert counts["interactions"] >= 5 and counts["respawns"] >= 3, counts
    assert counts["checked"] >= 0.6 * 32 * 160, counts
