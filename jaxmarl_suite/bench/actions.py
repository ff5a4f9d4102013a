"""Random actions for the env benchmarks: a sample of any space, and of every group's, legal where masked."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.spaces import Box, Discrete, MultiDiscrete, Space

Array = jax.Array



def sample_space(key: Array, space: Space, batch_shape: tuple[int, ...]) -> Array:
    """Uniform random values of ``space`` with shape ``[*batch_shape, *space.shape]``, drawn cheaply.

    ``Discrete`` uses one ``randint`` (ignoring action masks), ``MultiDiscrete`` a scaled uniform and
    ``Box`` a uniform between its bounds (a unit normal clipped to the bounds where a bound is infinite).
    """
    if isinstance(space, Discrete):
        return jax.random.randint(key, batch_shape, 0, space.n, dtype=space.dtype)
    if isinstance(space, MultiDiscrete):
        nvec = np.asarray(space.nvec)
        unit = jax.random.uniform(key, (*batch_shape, len(nvec)))
        return jnp.minimum(jnp.floor(unit * nvec), nvec - 1).astype(space.dtype)
    if isinstance(space, Box):
        shape = (*batch_shape, *space.shape)
        if np.all(np.isfinite(space.low) & np.isfinite(space.high)):
            return jax.random.uniform(key, shape, space.dtype, space.low, space.high)
        return jnp.clip(jax.random.normal(key, shape, space.dtype), space.low, space.high)
    raise TypeError(f"cannot sample actions from {space!r}")


def sample_group_actions(key: Array, env: Any, num_envs: int) -> dict[str, Array]:
    """Random actions ``{group: [B, n, *action_shape]}``, one draw per group."""
    groups = list(env.groups)
    keys = [key] if len(groups) == 1 else list(jax.random.split(key, len(groups)))
    return {
        group: sample_space(group_key, env.action_space(group), (num_envs, len(env.groups[group])))
        for group_key, group in zip(keys, groups, strict=True)
    }


def _masked_group_actions(key: Array, env: Any, num_envs: int, action_mask: dict[str, Array]) -> Any:
    """Random legal actions: uniform over ``action_mask`` for Discrete groups, ``sample_space`` elsewhere."""
    actions = sample_group_actions(key, env, num_envs)
    for index, group in enumerate(env.groups):
        if group in action_mask and isinstance(env.action_space(group), Discrete):
            noise = jax.random.uniform(jax.random.fold_in(key, index), action_mask[group].shape)
            actions[group] = jnp.argmax(jnp.where(action_mask[group], noise, -1.0), axis=-1).astype(
                env.action_space(group).dtype
            )
    return actions
