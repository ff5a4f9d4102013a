"""Loading a live ``lbforaging`` 2.0.0 ``ForagingEnv`` into ours.

lbforaging draws its spawns from its own NumPy generator, which JAX cannot replay; its steps draw nothing.
So a reference episode is followed by building our env with the reference's arguments
(``env_from_lbforaging``), reading its state after each reset into ours (``state_from_lbforaging``) and
stepping both with the same actions. The reference package is only needed by the caller: this module
imports nothing from it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.types import TimeStep

from .lbf import LBFState, LevelBasedForaging


def _unwrapped(ref_env: Any) -> Any:
    return getattr(ref_env, "unwrapped", ref_env)


def env_from_lbforaging(ref_env: Any, observation_type: str | None = None) -> LevelBasedForaging:
    """Our env with the arguments of ``ref_env`` (a ``ForagingEnv``, wrapped or not). ``observation_type``
    overrides the reference's (its grid observation cannot be constructed in 2.0.0)."""
    ref = _unwrapped(ref_env)
    grid = bool(ref._grid_observation) if observation_type is None else observation_type == "grid"
    return LevelBasedForaging(
        num_agents=len(ref.players), field_size=tuple(int(s) for s in ref.field_size),
        max_num_food=int(ref.max_num_food), sight=int(ref.sight),
        min_player_level=[int(v) for v in ref.min_player_level],
        max_player_level=[int(v) for v in ref.max_player_level],
        min_food_level=[int(v) for v in ref.min_food_level],
        max_food_level=None if ref.max_food_level is None else [int(v) for v in ref.max_food_level],
        force_coop=bool(ref.force_coop), max_steps=int(ref._max_episode_steps),
        normalize_reward=bool(ref._normalize_reward), observation_type="grid" if grid else "vector",
        observe_agent_levels=bool(ref._observe_agent_levels), penalty=float(ref.penalty))


def state_from_lbforaging(ref_env: Any, env: LevelBasedForaging) -> tuple[LBFState, TimeStep]:
    """Our single-env state and TimeStep equal to ``ref_env``'s current state: players' cells and levels,
    the foods on its field, the food level it spawned and its step count."""
    ref = _unwrapped(ref_env)
    if len(ref.players) != env.num_players or tuple(ref.field_size) != (env.rows, env.cols):
        raise ValueError(f"the reference has {len(ref.players)} players on {tuple(ref.field_size)}, the env "
                         f"{env.num_players} on {(env.rows, env.cols)}: build it with env_from_lbforaging")
    rows, cols = np.nonzero(ref.field)
    state, timestep = env.state_from_arrays(
        player_pos=[tuple(p.position) for p in ref.players], player_level=[p.level for p in ref.players],
        food_pos=np.stack([rows, cols], -1), food_level=ref.field[rows, cols], time=int(ref.current_step))
    # the normalizer is what reset placed, not what is left
    return dataclasses.replace(state, food_spawned=jnp.asarray(ref._food_spawned, jnp.int32)), timestep


def lbforaging_state(ref_env: Any) -> dict[str, Any]:
    """``ref_env``'s state in our state's terms (players' cells and levels, foods in row-major order, the
    spawned level, the step), for comparing with ``LBFState``."""
    ref = _unwrapped(ref_env)
    rows, cols = np.nonzero(ref.field)
    return {"player_pos": np.asarray([p.position for p in ref.players], np.int32),
            "player_level": np.asarray([p.level for p in ref.players], np.int32),
            "food_pos": np.stack([rows, cols], -1).astype(np.int32),
            "food_level": ref.field[rows, cols].astype(np.int32),
            "food_spawned": np.int32(ref._food_spawned), "time": np.int32(ref.current_step)}


def legal_from_lbforaging(ref_env: Any) -> np.ndarray:
    """``bool[n, 6]``: the reference's valid actions (its ``_valid_actions``), as our ``action_mask``."""
    ref = _unwrapped(ref_env)
    legal = np.zeros((len(ref.players), 6), bool)
    for i, player in enumerate(ref.players):
        for action in ref._valid_actions[player]:
            legal[i, int(action.value)] = True
    return legal
