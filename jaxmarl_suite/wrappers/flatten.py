"""``FlattenGroups``: every agent on one axis, in one group, for algorithms that want a single tensor."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.env import MultiAgentEnv, State
from jaxmarl_suite.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.wrappers.base import Wrapper

Array = jax.Array

FLAT_GROUP = "agents"


class FlattenGroups(Wrapper):
    """One group, ``agents``, holding every agent in ``env.agents`` order.

    - Observations are flattened per agent, zero-padded to the largest group's size, and followed by a
      one-hot group id: ``[*batch, num_agents, max_obs_dim + num_groups]``.
    - Discrete groups become ``Discrete(max actions)``; actions a group does not have are masked out
      in ``action_mask`` (and act as that group's action 0 if sent anyway). Box and MultiDiscrete
      groups must have identical spaces. Mixing kinds raises ``TypeError`` here, at construction.
    - ``info["final_obs"]`` (from ``AutoReset``) is flattened the same way.
    """

    def __init__(self, env: MultiAgentEnv) -> None:
        super().__init__(env)
        self.inner_groups = dict(env.groups)
        self.groups = {FLAT_GROUP: env.agents}
        spaces = {g: env.action_space(g) for g in self.inner_groups}
        kinds = {type(s) for s in spaces.values()}
        if len(kinds) != 1:
            raise TypeError(f"FlattenGroups needs one kind of action space across groups, got {spaces}")
        first = next(iter(spaces.values()))
        if isinstance(first, Discrete):
            self._action_space: Space = Discrete(max(s.n for s in spaces.values() if isinstance(s, Discrete)))
            if any(isinstance(s, Discrete) and s.n < self._action_space.n for s in spaces.values()):
                self.all_actions_legal = False  # the padded actions of the smaller groups are masked
        elif all(s == first for s in spaces.values()) and isinstance(first, Box | MultiDiscrete):
            self._action_space = first
        else:
            raise TypeError(f"FlattenGroups needs identical Box/MultiDiscrete action spaces, got {spaces}")
        self._obs_dims = {g: int(np.prod(env.observation_space(g).shape)) for g in self.inner_groups}
        self._obs_ndims = {g: len(env.observation_space(g).shape) for g in self.inner_groups}
        self.obs_dim = max(self._obs_dims.values()) + len(self.inner_groups)

    def observation_space(self, group: str) -> Space:
        """``Box(-inf, inf, (max_obs_dim + num_groups,))``; the last entries are the one-hot group id."""
        return Box(-np.inf, np.inf, (self.obs_dim,))

    def action_space(self, group: str) -> Space:
        """The shared action space (see the class docstring)."""
        return self._action_space

    def _flat_obs(self, obs: GroupDict) -> Array:
        pad_to = self.obs_dim - len(self.inner_groups)
        parts = []
        for index, group in enumerate(self.inner_groups):
            x = obs[group]
            lead = x.shape[: x.ndim - self._obs_ndims[group]]  # [*batch, n]
            x = x.reshape(*lead, -1).astype(jnp.float32)
            x = jnp.pad(x, [(0, 0)] * len(lead) + [(0, pad_to - x.shape[-1])])
            group_id = jnp.broadcast_to(
                jax.nn.one_hot(index, len(self.inner_groups)), (*lead, len(self.inner_groups))
            )
            parts.append(jnp.concatenate([x, group_id], axis=-1))
        return jnp.concatenate(parts, axis=-2)

    def _flat_agents(self, values: GroupDict) -> Array:
        return jnp.concatenate([values[g] for g in self.inner_groups], axis=-1)

    def _flat_mask(self, timestep: TimeStep) -> GroupDict:
        if not isinstance(self._action_space, Discrete):
            return {}
        width = self._action_space.n
        parts = []
        for group in self.inner_groups:
            mask = timestep.action_mask[group]
            parts.append(jnp.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, width - mask.shape[-1])]))
        return {FLAT_GROUP: jnp.concatenate(parts, axis=-2)}

    def _flatten(self, timestep: TimeStep) -> TimeStep:
        info = dict(timestep.info)
        if "final_obs" in info:
            info["final_obs"] = {FLAT_GROUP: self._flat_obs(info["final_obs"])}
        return TimeStep(
            obs={FLAT_GROUP: self._flat_obs(timestep.obs)},
            reward={FLAT_GROUP: self._flat_agents(timestep.reward)},
            terminated={FLAT_GROUP: self._flat_agents(timestep.terminated)},
            truncated={FLAT_GROUP: self._flat_agents(timestep.truncated)},
            action_mask=self._flat_mask(timestep),
            info=info,
        )

    def _split_actions(self, actions: GroupDict) -> GroupDict:
        flat = actions[FLAT_GROUP]
        action_ndim = len(self._action_space.shape)
        agent_axis = flat.ndim - action_ndim - 1
        split, start = {}, 0
        for group, names in self.inner_groups.items():
            part = jax.lax.slice_in_dim(flat, start, start + len(names), axis=agent_axis)
            space = self.env.action_space(group)
            if isinstance(space, Discrete):
                part = jnp.where(part < space.n, part, 0)
            split[group] = part
            start += len(names)
        return split

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[State, TimeStep]:
        """Reset and flatten."""
        state, timestep = self.env.reset(key, params)
        return state, self._flatten(timestep)

    def step(
        self, key: Array, state: State, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[State, TimeStep]:
        """Split the flat actions back into groups, step and flatten."""
        state, timestep = self.env.step(key, state, self._split_actions(actions), params)
        return state, self._flatten(timestep)

    def sample_actions(self, key: Array, action_mask: GroupDict | None = None) -> GroupDict:
        """Random legal actions ``{"agents": [*batch, num_agents, ...]}``."""
        batch = () if self.num_envs is None else (self.num_envs,)
        mask = None if action_mask is None else action_mask.get(FLAT_GROUP)
        return {FLAT_GROUP: self._action_space.sample(key, (*batch, self.num_agents), mask)}
