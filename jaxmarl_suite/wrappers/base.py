"""``Wrapper``: forwards everything to the wrapped env unless a subclass overrides it."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_suite.core.env import MultiAgentEnv, State
from jaxmarl_suite.core.spaces import Space
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep

Array = jax.Array


class Wrapper(MultiAgentEnv):
    """Base for wrappers. Works over a single env (vmap it yourself) or a ``VecEnv``."""

    def __init__(self, env: MultiAgentEnv) -> None:
        self.env = env
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
        """The wrapped env's default parameters."""
        return self.env.default_params

    @property
    def num_envs(self) -> int | None:
        """The batch size if a ``VecEnv`` is inside, else None."""
        return getattr(self.env, "num_envs", None)

    @property
    def batch_ndim(self) -> int:
        """Number of leading batch axes at this env's boundary (1 over a ``VecEnv``, else 0)."""
        return 0 if self.num_envs is None else 1

    @property
    def unwrapped(self) -> MultiAgentEnv:
        """The innermost env (through wrappers and ``VecEnv``)."""
        env: Any = self.env
        while hasattr(env, "env"):
            env = env.env
        return env

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[State, TimeStep]:
        """Forwarded."""
        return self.env.reset(key, params)

    def step(
        self, key: Array, state: State, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[State, TimeStep]:
        """Forwarded."""
        return self.env.step(key, state, actions, params)

    def observation_space(self, group: str) -> Space:
        """Forwarded."""
        return self.env.observation_space(group)

    def action_space(self, group: str) -> Space:
        """Forwarded."""
        return self.env.action_space(group)

    def render(self, state: State, params: EnvParams | None = None, **kwargs: Any) -> Array:
        """Forwarded."""
        return self.env.render(state, params, **kwargs)

    @property
    def renders(self) -> bool:
        """Whether the wrapped env renders."""
        return self.env.renders

    def select(self, pick_first: Array, first: State, second: State) -> State:
        """Forwarded (the wrapped env knows where its batch axis is)."""
        return self.env.select(pick_first, first, second)

    def sample_actions(self, key: Array, action_mask: GroupDict | None = None) -> GroupDict:
        """Forwarded."""
        return self.env.sample_actions(key, action_mask)

    def __getattr__(self, name: str) -> Any:
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env!r})"


def episode_done(timestep: TimeStep) -> Array:
    """True where every agent of every group is terminated or truncated; shape is the batch shape."""
    flags = [jnp.all(timestep.terminated[g] | timestep.truncated[g], axis=-1) for g in timestep.terminated]
    done = flags[0]
    for flag in flags[1:]:
        done = done & flag
    return done


def broadcast_to_leaf(flag: Array, leaf: Array) -> Array:
    """Reshape a batch-shaped ``flag`` to broadcast against ``leaf`` (batch axes leading)."""
    return flag.reshape(flag.shape + (1,) * (leaf.ndim - flag.ndim))
