"""Loading a ``rware`` 2.0.0 warehouse into ours.

``rware`` draws its starts and replacement requests from numpy; ours draws from JAX keys. A reference episode
is followed by reading its state into ours (``state_from_rware``), stepping both with the same actions
(``actions_to_rware``) and, after a delivery, reading the reference's request queue again. The reference
package is only needed by the caller: this module imports nothing from it.
"""

from __future__ import annotations

import weakref
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.types import TimeStep

from .rware import RobotWarehouse, RobotWarehouseState


def _unwrapped(ref_env: Any) -> Any:
    return getattr(ref_env, "unwrapped", ref_env)


def layout_of_rware(ref_env: Any) -> str:
    """The reference's layout as a layout string (``x`` shelf, ``.`` highway, ``g`` goal); goals come out
    in reading order, which is the order ``rware`` lists them in for both its layout sources."""
    ref = _unwrapped(ref_env)
    highway = np.asarray(ref.highways, bool)
    rows = [["." if highway[y, x] else "x" for x in range(highway.shape[1])] for y in range(highway.shape[0])]
    goals = [(int(x), int(y)) for x, y in ref.goals]
    if goals != sorted(goals, key=lambda g: (g[1], g[0])):
        raise ValueError("the reference's goals are not in reading order: a layout string cannot keep them")
    for x, y in goals:
        rows[y][x] = "g"
    return "\n".join("".join(row) for row in rows)


def observation_type_of_rware(ref_env: Any) -> str:
    """Our ``observation_type`` for the reference's observation flags."""
    ref = _unwrapped(ref_env)
    if ref.image_obs:
        return "image"
    if ref.image_dict_obs:
        return "image_dict"
    return "flattened" if ref.fast_obs else "dict"


def env_from_rware(ref_env: Any, **overrides: Any) -> RobotWarehouse:
    """Our env with the reference env's layout, sizes, reward and observation settings (``overrides``
    replace any of our constructor's arguments)."""
    return RobotWarehouse(**kwargs_from_rware(ref_env, **overrides))


def kwargs_from_rware(ref_env: Any, **overrides: Any) -> dict[str, Any]:
    """Our constructor's arguments for the reference env (see ``env_from_rware``)."""
    ref = _unwrapped(ref_env)
    obs_type = observation_type_of_rware(ref)
    kwargs: dict[str, Any] = {
        "layout": layout_of_rware(ref), "num_agents": int(ref.n_agents), "msg_bits": int(ref.msg_bits),
        "sensor_range": int(ref.sensor_range), "request_queue_size": int(ref.request_queue_size),
        "max_inactivity_steps": ref.max_inactivity_steps or None, "max_steps": int(ref.max_steps),
        "reward_type": ref.reward_type.name.lower(), "observation_type": obs_type,
        "normalised_coordinates": bool(ref.normalised_coordinates),
    }
    if obs_type in ("image", "image_dict"):
        layers = ref.image_observation_layers
        kwargs["image_observation_layers"] = tuple(layer.name.lower() for layer in layers)
        kwargs["image_observation_directional"] = bool(ref.image_observation_directional)
    kwargs.update(overrides)
    return kwargs


def state_from_rware(ref_env: Any, env: RobotWarehouse) -> tuple[RobotWarehouseState, TimeStep]:
    """Our single-env state equal to the reference's current one (robots, carried shelves, shelves, the
    request queue in order, delivery flags, messages, step and inactivity counters) and its TimeStep (zero
    reward; flags from the counters)."""
    state = rware_state(ref_env, env)
    return state, timestep_of(env, state)


def rware_state(ref_env: Any, env: RobotWarehouse) -> RobotWarehouseState:
    """The state part of ``state_from_rware``."""
    ref = _unwrapped(ref_env)
    agents, shelves = ref.agents, ref.shelfs
    if len(agents) != env.num_robots or len(shelves) != env.num_shelves:
        raise ValueError("the reference env's robots or shelves do not match this env's")
    shelf_index = {id(shelf): i for i, shelf in enumerate(shelves)}
    message = np.zeros((env.num_robots, env.msg_bits), np.int32)
    for i, agent in enumerate(agents):
        if env.msg_bits:
            message[i] = np.asarray(agent.message).astype(np.int32)
    state = RobotWarehouseState(
        agent_pos=jnp.asarray([[int(a.x), int(a.y)] for a in agents], jnp.int32).reshape(-1, 2),
        agent_dir=jnp.asarray([int(a.dir.value) for a in agents], jnp.int32),
        carried=jnp.asarray([-1 if a.carrying_shelf is None else shelf_index[id(a.carrying_shelf)]
                             for a in agents], jnp.int32),
        has_delivered=jnp.asarray([bool(a.has_delivered) for a in agents], bool),
        message=jnp.asarray(message),
        shelf_pos=jnp.asarray([[int(s.x), int(s.y)] for s in shelves], jnp.int32).reshape(-1, 2),
        request_queue=jnp.asarray([shelf_index[id(s)] for s in ref.request_queue], jnp.int32),
        step=jnp.asarray(int(ref._cur_steps or 0), jnp.int32),
        inactive_steps=jnp.asarray(int(ref._cur_inactive_steps or 0), jnp.int32),
    )
    return state


_TIMESTEP_FNS: weakref.WeakKeyDictionary[RobotWarehouse, Any] = weakref.WeakKeyDictionary()


def timestep_of(env: RobotWarehouse, state: RobotWarehouseState) -> TimeStep:
    """The TimeStep of one env's ``state`` with zero reward and no deliveries (jitted once per env)."""
    if env not in _TIMESTEP_FNS:
        def build(state: RobotWarehouseState) -> TimeStep:
            batched = jax.tree.map(lambda x: jnp.expand_dims(x, -1), state)
            zeros = jnp.zeros((env.num_robots, 1), jnp.float32)
            timestep = env._timestep(batched, zeros, jnp.zeros((1,), jnp.int32), env.default_params)
            return jax.tree.map(lambda x: jnp.squeeze(x, -1), timestep)

        _TIMESTEP_FNS[env] = jax.jit(build)
    return _TIMESTEP_FNS[env](state)


def step_with_draws(env: RobotWarehouse, key: Any, state: RobotWarehouseState, actions: Any, draws: Any,
                    params: Any = None) -> tuple[RobotWarehouseState, TimeStep]:
    """One env's ``env.step`` (the batch path, jittable) whose ``k``-th delivery takes ``draws[k]`` (shelf
    indices, ``int[num_goals]``, -1: our own draw) as the replacement request: replays the reference's
    numpy draws."""
    params = env.default_params if params is None else params
    batched = jax.tree.map(lambda x: jnp.expand_dims(x, -1), (state, {"agents": jnp.asarray(actions)},
                                                              jnp.asarray(draws, jnp.int32)))
    new_state, timestep = env.step_batch_with_draws(key[None], batched[0], batched[1], batched[2], params)
    return jax.tree.map(lambda x: jnp.squeeze(x, -1), (new_state, timestep))


def actions_to_rware(actions: Any, env: RobotWarehouse) -> list[Any]:
    """Our actions (``int[n]`` or ``int[n, 1 + msg_bits]``) as the reference's list (ints, or int arrays
    with the message bits)."""
    actions = np.asarray(actions)
    if env.msg_bits == 0:
        return [int(a) for a in actions.reshape(env.num_robots)]
    return [row.astype(np.int64) for row in actions.reshape(env.num_robots, 1 + env.msg_bits)]
