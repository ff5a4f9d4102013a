"""The built-in heuristic policy (SMAC's scripted opponent, in the spirit of JaxMARL's
``HeuristicEnemySMAX``), computed from the batch-minor state for either team.

Each living unit: if it can act on a target, keeps its last target while that stays legal, else takes
the closest legal one (healers: the closest hurt ally in range). Otherwise it moves toward the closest
enemy it can see (healers: toward the closest living attacker of its own team), and with nothing in
sight toward its waypoint, its start position reflected through the map centre, so both teams meet in
the middle. Moves pick the legal direction best aligned with the goal. It only ever returns legal
actions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from .game import MOVE_DIRECTIONS, NUM_MOVES, UnitStats, norm2

if TYPE_CHECKING:
    from .smax import SMAX, SMAXState

Array = jax.Array


def _pick(values: Array, index: Array) -> Array:
    """``values[i, index[i, b], ..., b]`` for ``values`` ``[n, K, ..., B]`` and ``index`` ``[n, B]``."""
    one_hot = (index[:, None] == jnp.arange(values.shape[1])[None, :, None]).astype(values.dtype)
    if values.ndim == 4:
        return jnp.einsum("nkb,nkcb->ncb", one_hot, values)
    return jnp.sum(one_hot * values, axis=1)


def heuristic_actions(
    env: SMAX, state: SMAXState, stats: UnitStats, team: int, mask: Array, offsets: Array
) -> Array:
    """``[n, B]`` int32 actions for every unit of ``team`` (0 allies, 1 enemies), legal under ``mask``."""
    from .smax import FIRST_MOVE, FIRST_TARGET, NOOP, STOP

    rows, opp = env.team_rows[team], env.team_rows[1 - team]
    alive = state.health > 0
    heals = jnp.broadcast_to(stats.heals[rows], (len(rows), state.step.shape[0]))
    dist = norm2(offsets[rows])  # [n, N, B]
    far = jnp.float32(1e9)

    targets_ok = mask[:, FIRST_TARGET:]
    slot_dist = env._slots(dist, team, heals)
    last = state.last_target[rows]
    keep = (last >= 0) & (_pick(targets_ok.astype(jnp.float32), jnp.maximum(last, 0)) > 0)
    closest = jnp.argmin(jnp.where(targets_ok, slot_dist, far), axis=1)
    slot = jnp.where(keep, last, closest)
    can_act = jnp.any(targets_ok, axis=1)

    opp_dist = dist[:, opp]
    seen = (opp_dist < stats.sight_range[rows][:, None]) & alive[opp][None]
    nearest = jnp.argmin(jnp.where(seen, opp_dist, far), axis=1)
    goal = jnp.where(
        jnp.any(seen, axis=1)[:, None],
        _pick(jnp.broadcast_to(state.pos[opp][None], (len(rows), *state.pos[opp].shape)), nearest),
        state.waypoint[rows],
    )
    if env.may_heal[team]:
        own = env.team_rows[team]
        escort = alive[own][None] & ~jnp.broadcast_to(stats.heals[own], alive[own].shape)[None]
        own_dist = jnp.where(escort, dist[:, own], far)
        buddy = jnp.argmin(own_dist, axis=1)
        buddy_pos = _pick(jnp.broadcast_to(state.pos[own][None], (len(rows), *state.pos[own].shape)), buddy)
        has_buddy = jnp.any(escort, axis=1)
        goal = jnp.where((heals & has_buddy)[:, None], buddy_pos, goal)

    heading = goal - state.pos[rows]  # [n, 2, B]
    score = jnp.einsum("kc,ncb->nkb", MOVE_DIRECTIONS, heading)
    moves_ok = mask[:, FIRST_MOVE : FIRST_MOVE + NUM_MOVES]
    best = jnp.argmax(jnp.where(moves_ok, score, -far), axis=1)
    should_move = jnp.any(moves_ok, axis=1) & (jnp.sqrt(jnp.sum(heading * heading, axis=1)) > 0.5)
    move_action = jnp.where(should_move, FIRST_MOVE + best, STOP)
    action = jnp.where(can_act, FIRST_TARGET + slot, move_action)
    return jnp.where(alive[rows], action, NOOP).astype(jnp.int32)
