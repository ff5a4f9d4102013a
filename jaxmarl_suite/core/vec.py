"""``VecEnv``: B envs behind one interface, with batch-leading arrays at the boundary.

For a ``BatchNativeEnv`` it calls ``reset_batch``/``step_batch`` (env batch as the trailing axis
inside, which is where the speed comes from) and transposes the TimeStep once, at the edge.
For any other env it falls back to ``jax.vmap`` of the per-env functions. Both paths draw env ``i``'s
randomness from ``jax.random.split(key, B)[i]``, so they produce the same trajectories.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_suite.core import threefry
from jaxmarl_suite.core.env import BatchNativeEnv, MultiAgentEnv, State
from jaxmarl_suite.core.spaces import Discrete, Space
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep

Array = jax.Array


def _batch_last_to_first(tree: Any) -> Any:
    return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), tree)


def _batch_first_to_last(tree: Any) -> Any:
    return jax.tree.map(lambda x: jnp.moveaxis(x, 0, -1), tree)


class VecEnv(MultiAgentEnv):
    """``num_envs`` copies of ``env``. TimeStep arrays are ``[B, n_in_group, ...]``; keys are split per env.

    ``use_vmap=True`` forces the ``jax.vmap`` path even for batch-native envs (used to test that the two
    paths agree, and handy when debugging a single env's code).
    """

    def __init__(self, env: MultiAgentEnv, num_envs: int, use_vmap: bool = False) -> None:
        if isinstance(env, VecEnv):
            raise TypeError("env is already a VecEnv; vmap it instead to add another batch axis")
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs}")
        self.env = env
        self.num_envs = int(num_envs)
        self.batch_native = isinstance(env, BatchNativeEnv) and not use_vmap
        self.groups = env.groups
        self.reference = env.reference
        self.render_fps = env.render_fps
        self.episodes_end_together = env.episodes_end_together
        self.cheap_reset = env.cheap_reset
        self.costly_reset = env.costly_reset
        self.all_actions_legal = env.all_actions_legal
        self.random_reset = env.random_reset
        self.observation_info = env.observation_info
        self.social_measures = env.social_measures

    @property
    def default_params(self) -> EnvParams:
        """The wrapped env's default parameters (shared by every env of the batch)."""
        return self.env.default_params

    def observation_space(self, group: str) -> Space:
        """Per-agent observation space, as for the wrapped env."""
        return self.env.observation_space(group)

    def action_space(self, group: str) -> Space:
        """Per-agent action space, as for the wrapped env."""
        return self.env.action_space(group)

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[State, TimeStep]:
        """Reset all B envs; env ``i`` uses ``jax.random.split(key, B)[i]``."""
        params = self.default_params if params is None else params
        keys = threefry.split_keys(key, self.num_envs)  # jax.random.split's keys, fused on CPU
        if isinstance(self.env, BatchNativeEnv) and self.batch_native:
            state, timestep = self.env.reset_batch(keys, params)
            return state, _batch_last_to_first(timestep)
        return jax.vmap(self.env.reset, in_axes=(0, None))(keys, params)

    def step(
        self, key: Array, state: State, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[State, TimeStep]:
        """Step all B envs with ``actions[group]`` of shape ``[B, n, *action_shape]``."""
        params = self.default_params if params is None else params
        keys = threefry.split_keys(key, self.num_envs)  # jax.random.split's keys, fused on CPU
        if isinstance(self.env, BatchNativeEnv) and self.batch_native:
            state, timestep = self.env.step_batch(keys, state, _batch_first_to_last(actions), params)
            return state, _batch_last_to_first(timestep)
        return jax.vmap(self.env.step, in_axes=(0, 0, 0, None))(keys, state, actions, params)

    def reset_at(self, key: Array, index: Array, params: EnvParams | None = None) -> tuple[State, TimeStep]:
        """Start only the envs at ``index`` (``int[K]``), each exactly as ``reset(key)`` starts it: a state
        and TimeStep of ``K`` envs (indices past the batch are clamped; ``put`` skips them)."""
        params = self.default_params if params is None else params
        keys = threefry.split_keys_at(key, self.num_envs, index)
        if isinstance(self.env, BatchNativeEnv) and self.batch_native:
            state, timestep = self.env.reset_batch(keys, params)
            return state, _batch_last_to_first(timestep)
        return jax.vmap(self.env.reset, in_axes=(0, None))(keys, params)

    def put(self, state: State, index: Array, part: State) -> State:
        """``state`` with env ``index[k]`` replaced by env ``k`` of ``part`` (a ``K``-env state); indices
        past the batch are skipped, so a padded ``index`` writes nothing for its padding."""
        if self.batch_native:
            return jax.tree.map(lambda x, p: x.at[..., index].set(p, mode="drop"), state, part)
        return jax.tree.map(lambda x, p: x.at[index].set(p, mode="drop"), state, part)

    def select(self, pick_first: Array, first: State, second: State) -> State:
        """Per env, ``first`` where ``pick_first[i]`` else ``second``; knows where the batch axis lies."""

        def pick(a: Array, b: Array) -> Array:
            if self.batch_native:
                return jnp.where(pick_first, a, b)
            return jnp.where(pick_first.reshape(-1, *([1] * (a.ndim - 1))), a, b)

        return jax.tree.map(pick, first, second)

    def env_state(self, state: State, index: int) -> State:
        """The per-env state of env ``index``."""
        if self.batch_native:
            return jax.tree.map(lambda x: x[..., index], state)
        return jax.tree.map(lambda x: x[index], state)

    def render(self, state: State, params: EnvParams | None = None, index: int = 0) -> Array:
        """Render env ``index`` of the batch."""
        return self.env.render(self.env_state(state, index), params)

    @property
    def renders(self) -> bool:
        """Whether the wrapped env renders."""
        return self.env.renders

    def sample_actions(self, key: Array, action_mask: GroupDict | None = None) -> GroupDict:
        """Random legal actions for every env, ``{group: [B, n, *action_shape]}``.

        One draw covers the whole batch (per-env keys would cost a hash per env for nothing here).
        """
        keys = jax.random.split(key, len(self.groups))
        actions = {}
        for group_key, group in zip(keys, self.groups, strict=True):
            space = self.action_space(group)
            mask = None
            if action_mask is not None and isinstance(space, Discrete):
                mask = action_mask.get(group)
            actions[group] = space.sample(group_key, (self.num_envs, self.group_size(group)), mask)
        return actions

    def __repr__(self) -> str:
        return f"VecEnv({self.env!r}, num_envs={self.num_envs}, batch_native={self.batch_native})"
