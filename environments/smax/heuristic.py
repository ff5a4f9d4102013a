"""The built-in heuristic policy (SMAC's scripted opponent, in the spirit of JaxMARL's
``HeuristicEnemySMAX``), computed from the batch-minor state for either team.

Each living unit: if it can act on a target, keeps its last target while that stays legal, else takes
the closest legal one (healers: the closest hurt ally in range). Otherwise it moves toward an enemy it
can see, drawn at random each step as JaxMARL's heuristic does, and, seeing none, toward the closest
living enemy anywhere: like StarCraft II's built-in AI it knows where the other team is, so a learner
cannot win by hiding until the time limit (JaxMARL's heuristic walks to a fixed point instead, which
learners exploit by hiding). Healers follow the closest living attacker of their own team. Moves pick
the legal direction best aligned with the goal. It only ever returns legal actions.

``SMAX`` imports this module to play its enemies, so this module does not import ``SMAX``: it reads the
env through ``HeuristicEnv``, the few public members it needs, which ``SMAX`` provides.
"""

from __future__ import annotations

from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np

from .game import (
    FIRST_MOVE,
    FIRST_TARGET,
    MOVE_DIRECTIONS,
    NOOP,
    NUM_MOVES,
    STOP,
    Geometry,
    SMAXState,
    UnitStats,
    coordinate_norm,
    unit_any,
    unit_argmax,
    unit_argmin,
)

Array = jax.Array


class HeuristicEnv(Protocol):
    """What the heuristic reads of an env: its team layout and target slots (``SMAX`` has them)."""

    @property
    def team_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The unit rows of each team (allies, enemies)."""
        ...

    @property
    def may_heal(self) -> tuple[bool, bool]:
        """Whether each team has healers."""
        ...

    def target_slots(self, matrix: Array, team: int, heals: Array) -> Array:
        """``[n, N, B]`` unit matrix of ``team``'s units -> ``[n, num_slots, B]`` per target slot."""
        ...


def _pick(values: Array, index: Array) -> Array:
    """``values[i, index[i, b], b]`` for ``values`` ``[n, K, B]`` and ``index`` ``[n, B]``."""
    return jnp.take_along_axis(values, index[:, None], axis=1)[:, 0]


def _position_of(pos: Array, index: Array) -> Array:
    """``[n, 2, B]`` positions ``pos[index[i, b], :, b]`` of ``[K, 2, B]`` units."""
    x = jnp.take_along_axis(pos[:, 0], index, axis=0)
    y = jnp.take_along_axis(pos[:, 1], index, axis=0)
    return jnp.stack([x, y], axis=1)


def heuristic_actions(
    env: HeuristicEnv,
    state: SMAXState,
    stats: UnitStats,
    team: int,
    mask: Array,
    geo: Geometry,
    keys: Array,
) -> Array:
    """``[n, B]`` int32 actions for every unit of ``team`` (0 allies, 1 enemies), legal under ``mask``.

    ``keys`` ``[B]`` (one per env) draw which enemy in sight each unit walks toward.
    """
    rows, opp = env.team_rows[team], env.team_rows[1 - team]
    alive = state.health > 0
    heals = jnp.broadcast_to(stats.heals[rows], (len(rows), state.step.shape[0]))
    dist = geo.dist[rows]  # [n, N, B]
    far = jnp.float32(1e9)

    targets_ok = mask[:, FIRST_TARGET:]
    slot_dist = env.target_slots(dist, team, heals)
    last = state.last_target[rows]
    keep = (last >= 0) & (_pick(targets_ok.astype(jnp.float32), jnp.maximum(last, 0)) > 0)
    closest = unit_argmin(jnp.where(targets_ok, slot_dist, far), axis=1)
    slot = jnp.where(keep, last, closest)
    can_act = unit_any(targets_ok, axis=1)

    # A random enemy in sight, drawn afresh each step; seeing none, the closest living enemy anywhere.
    opp_dist = jnp.where(alive[opp][None], dist[:, opp], far)
    in_sight = opp_dist < stats.sight_range[rows][:, None]
    noise = jnp.moveaxis(jax.vmap(lambda k: jax.random.uniform(k, in_sight.shape[:2]))(keys), 0, -1)
    sees = unit_any(in_sight, axis=1)
    chase = jnp.where(sees[:, None], jnp.where(in_sight, noise, 2.0), opp_dist)
    goal = _position_of(state.pos[opp], unit_argmin(chase, axis=1))
    if env.may_heal[team]:
        own = env.team_rows[team]
        escort = alive[own][None] & ~jnp.broadcast_to(stats.heals[own], alive[own].shape)[None]
        own_dist = jnp.where(escort, dist[:, own], far)
        buddy = unit_argmin(own_dist, axis=1)
        buddy_pos = _position_of(state.pos[own], buddy)
        has_buddy = unit_any(escort, axis=1)
        goal = jnp.where((heals & has_buddy)[:, None], buddy_pos, goal)

    heading = goal - state.pos[rows]  # [n, 2, B]
    score = (
        MOVE_DIRECTIONS[None, :, 0, None] * heading[:, None, 0]
        + MOVE_DIRECTIONS[None, :, 1, None] * heading[:, None, 1]
    )
    moves_ok = mask[:, FIRST_MOVE : FIRST_MOVE + NUM_MOVES]
    best = unit_argmax(jnp.where(moves_ok, score, -far), axis=1)
    should_move = unit_any(moves_ok, axis=1) & (coordinate_norm(heading) > 0.5)
    move_action = jnp.where(should_move, FIRST_MOVE + best, STOP)
    action = jnp.where(can_act, FIRST_TARGET + slot, move_action)
    return jnp.where(alive[rows], action, NOOP).astype(jnp.int32)
