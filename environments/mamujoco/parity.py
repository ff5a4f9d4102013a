"""Live parity with Gymnasium-Robotics' ``mamujoco_v1``: our state and params from a reference env.

``state_from_mamujoco(ref_env, env)`` reads the reference's current MuJoCo data and task settings, so
one step of ours from that state can be compared with one step of the reference (tests/environments/
test_mamujoco_parity.py). The reference runs MuJoCo's C engine in float64; ours runs MJX in float32.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from .mamujoco import MaMuJoCo, MaMuJoCoParams, MaMuJoCoState, physics_float

_WEIGHTS = {
    # MaMuJoCoParams field: the v5 env's attribute
    "forward_reward_weight": "_forward_reward_weight",
    "ctrl_cost_weight": "_ctrl_cost_weight",
    "contact_cost_weight": "_contact_cost_weight",
    "healthy_reward": "_healthy_reward",
    "terminate_when_unhealthy": "_terminate_when_unhealthy",
    "reset_noise_scale": "_reset_noise_scale",
}
_RANGES = {
    # (min field, max field): the v5 env's attribute holding (min, max)
    ("healthy_z_min", "healthy_z_max"): "_healthy_z_range",
    ("healthy_angle_min", "healthy_angle_max"): "_healthy_angle_range",
    ("healthy_state_min", "healthy_state_max"): "_healthy_state_range",
    ("contact_force_min", "contact_force_max"): "_contact_force_range",
}


def _snapshot(values: Any) -> Any:
    """A JAX copy of a MuJoCo buffer. ``jnp.asarray`` of a float64 buffer under x64 aliases MuJoCo's
    (64-byte aligned) memory on the CPU, so stepping the reference would change our state after the fact,
    and, with asynchronous dispatch, while our step still reads it."""
    return jnp.asarray(np.array(values, copy=True), physics_float())


def reference_task(ref_env: Any) -> Any:
    """The reference's underlying Gymnasium v5 env (unwrapped)."""
    return ref_env.single_agent_env.unwrapped


def params_from_mamujoco(ref_env: Any, env: MaMuJoCo) -> MaMuJoCoParams:
    """Our params equal to the reference task's weights, ranges, time limit and physical constants."""
    task = reference_task(ref_env)
    updates: dict[str, Any] = {}
    for field, attribute in _WEIGHTS.items():
        if hasattr(task, attribute):
            updates[field] = getattr(task, attribute)
    for (low, high), attribute in _RANGES.items():
        if hasattr(task, attribute):
            updates[low], updates[high] = (float(v) for v in getattr(task, attribute))
    if hasattr(task, "_contact_cost_range"):
        updates["contact_cost_max"] = float(task._contact_cost_range[1])
    if hasattr(task, "_impact_cost_range"):
        updates["contact_cost_max"] = float(task._impact_cost_range[1])
        updates["contact_cost_weight"] = task._impact_cost_weight
    if hasattr(task, "_reward_dist_weight"):
        updates["forward_reward_weight"] = task._reward_dist_weight
        updates["ctrl_cost_weight"] = task._reward_control_weight
    max_steps = getattr(ref_env.single_agent_env, "_max_episode_steps", None)
    if max_steps is not None:
        updates["max_steps"] = int(max_steps)
    model = task.model
    updates["body_mass"] = _snapshot(model.body_mass)
    updates["geom_friction"] = _snapshot(model.geom_friction)
    updates["actuator_gear"] = _snapshot(model.actuator_gear)
    return dataclasses.replace(env.default_params, **updates)


def state_from_mamujoco(ref_env: Any, env: MaMuJoCo) -> tuple[MaMuJoCoState, MaMuJoCoParams]:
    """Our single-env state and params equal to the reference env's current MuJoCo data and settings."""
    task = reference_task(ref_env)
    data = task.data
    params = params_from_mamujoco(ref_env, env)
    if env.robot.progress == "body_xy":
        progress_x = data.xpos[env.main_body][0]
    elif env.robot.progress == "mass_center":
        mass = np.asarray(task.model.body_mass)
        progress_x = np.sum(mass * data.xipos[:, 0]) / np.sum(mass)
    else:
        progress_x = data.qpos[0]
    elapsed = getattr(ref_env.single_agent_env, "_elapsed_steps", 0) or 0
    state = MaMuJoCoState(
        qpos=_snapshot(data.qpos),
        qvel=_snapshot(data.qvel),
        qacc_warmstart=_snapshot(data.qacc_warmstart),
        progress_x=jnp.asarray(progress_x, physics_float()),
        time=jnp.asarray(elapsed, jnp.int32),
    )
    return state, params


def agent_observations(env: MaMuJoCo, obs: dict[str, Any]) -> dict[str, np.ndarray]:
    """Our grouped observations ``{group: [n, dim]}`` as the reference's ``{agent_i: [dim]}``."""
    out = {}
    for group, names in env.groups.items():
        for row, name in enumerate(names):
            out[name] = np.asarray(obs[group][row])
    return out


def group_actions(env: MaMuJoCo, actions: dict[str, np.ndarray]) -> dict[str, Any]:
    """The reference's ``{agent_i: [act_dim]}`` actions as our ``{group: [n, act_dim]}``."""
    return {
        group: jnp.asarray(np.stack([actions[name] for name in names]), jnp.float32)
        for group, names in env.groups.items()
    }
