"""A small per-env (not batch-native) user env with two heterogeneous groups, used by several tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep


@struct.dataclass
class ToyParams(EnvParams):
    max_steps: int = 7
    target: float = 0.25


@struct.dataclass
class ToyState:
    red: jax.Array  # [2, 3]
    blue: jax.Array  # [1, 5]
    step: jax.Array


class TwoTeams(MultiAgentEnv):
    """Red (2 agents, obs 3, Discrete(3)) and blue (1 agent, obs 5, Discrete(4), action 3 illegal on odd
    steps). Red terminates when its summed obs passes ``target``; everyone truncates at ``max_steps``."""

    def __init__(self) -> None:
        self.groups = {"red": ("red_0", "red_1"), "blue": ("blue_0",)}

    @property
    def default_params(self) -> ToyParams:
        return ToyParams()

    def observation_space(self, group: str) -> Space:
        return Box(-np.inf, np.inf, (3,) if group == "red" else (5,))

    def action_space(self, group: str) -> Space:
        return Discrete(3 if group == "red" else 4)

    def _timestep(self, state: ToyState, reward: GroupDict, params: ToyParams) -> TimeStep:
        truncated = state.step >= params.max_steps
        red_done = jnp.sum(state.red, axis=-1) > params.target * 10
        blue_mask = jnp.array([True, True, True, False]) | (state.step % 2 == 0)
        return TimeStep(
            obs={"red": state.red, "blue": state.blue},
            reward=reward,
            terminated={"red": red_done, "blue": jnp.zeros((1,), bool)},
            truncated={"red": truncated & ~red_done, "blue": jnp.broadcast_to(truncated, (1,))},
            action_mask={"red": jnp.ones((2, 3), bool), "blue": blue_mask[None]},
            info={"step": state.step},
        )

    def reset(self, key: jax.Array, params: ToyParams | None = None) -> tuple[ToyState, TimeStep]:
        params = self.default_params if params is None else params
        red_key, blue_key = jax.random.split(key)
        state = ToyState(
            red=jax.random.uniform(red_key, (2, 3)),
            blue=jax.random.normal(blue_key, (1, 5)),
            step=jnp.zeros((), jnp.int32),
        )
        zero = {"red": jnp.zeros((2,)), "blue": jnp.zeros((1,))}
        return state, self._timestep(state, zero, params)

    def step(
        self, key: jax.Array, state: ToyState, actions: GroupDict, params: ToyParams | None = None
    ) -> tuple[ToyState, TimeStep]:
        params = self.default_params if params is None else params
        noise = jax.random.uniform(key, (2, 3)) * 0.1
        red = state.red + actions["red"][:, None].astype(jnp.float32) * 0.2 + noise
        blue = state.blue + actions["blue"][:, None].astype(jnp.float32)
        state = ToyState(red=red, blue=blue, step=state.step + 1)
        reward = {"red": jnp.sum(red, axis=-1), "blue": -jnp.abs(blue).sum(-1)}
        return state, self._timestep(state, reward, params)
