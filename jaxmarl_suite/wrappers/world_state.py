"""``WorldState``: a global state vector for centralised critics, in ``info["world_state"]``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.env import MultiAgentEnv, State
from jaxmarl_suite.core.spaces import Box
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.wrappers.base import Wrapper

Array = jax.Array


class WorldState(Wrapper):
    """Adds ``info["world_state"]``: ``[*batch, state_dim]`` float32, every agent's observation
    flattened and concatenated group by group (mpe2's ``state()``). Envs that define
    ``world_state_space()`` (SMAX) report their own world state, which is passed through (``AutoReset``
    restarts it, as one of the env's ``observation_info``, and keeps the ended episode's in
    ``info["final_world_state"]``). Otherwise, when
    ``info`` has ``final_obs`` (from ``AutoReset``), ``info["final_world_state"]`` is built from it the
    same way, so a critic can bootstrap on truncation.
    """

    def __init__(self, env: MultiAgentEnv) -> None:
        super().__init__(env)
        native = getattr(self.unwrapped, "world_state_space", None)
        self.native = callable(native)
        """The env reports its own ``info["world_state"]`` (SMAX); it is passed through unchanged."""
        if callable(native):
            space = native()
            assert isinstance(space, Box), "world_state_space() must return a Box"
            self.state_dim = int(np.prod(space.shape))
        else:
            self.state_dim = sum(
                len(names) * int(np.prod(env.observation_space(group).shape))
                for group, names in env.groups.items()
            )
            # an AutoReset above this wrapper then restarts it with the observations
            self.observation_info = (*env.observation_info, "world_state")

    def world_state_space(self) -> Box:
        """``Box(-inf, inf, (state_dim,))``."""
        return Box(-np.inf, np.inf, (self.state_dim,))

    def from_observations(self, obs: GroupDict) -> Array:
        """The world state of a non-native env from its observations ``{group: [*batch, n, *shape]}``: what
        ``info["world_state"]`` holds, so a runner can rebuild it rather than carry both."""
        if self.native:
            raise ValueError("this env reports its own world state; read info['world_state'] instead")
        parts = []
        for group in self.groups:
            x = obs[group]
            obs_ndim = len(self.observation_space(group).shape)
            batch_shape = x.shape[: x.ndim - obs_ndim - 1]
            parts.append(x.reshape(*batch_shape, -1).astype(jnp.float32))
        return jnp.concatenate(parts, axis=-1)

    def _add(self, timestep: TimeStep) -> TimeStep:
        if self.native:
            return timestep
        info = {**timestep.info, "world_state": self.from_observations(timestep.obs)}
        if "final_obs" in timestep.info:
            info["final_world_state"] = self.from_observations(timestep.info["final_obs"])
        return timestep._replace(info=info)

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[State, TimeStep]:
        """Reset and add the world state."""
        state, timestep = self.env.reset(key, params)
        return state, self._add(timestep)

    def step(
        self, key: Array, state: State, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[State, TimeStep]:
        """Step and add the world state."""
        state, timestep = self.env.step(key, state, actions, params)
        return state, self._add(timestep)
