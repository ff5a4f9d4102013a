"""``to_pettingzoo``: a suite env as a PettingZoo ``ParallelEnv``, with numpy at the boundary.

The env's ``reset`` and ``step`` are jitted once, at construction; each call then makes one compiled
call and one device-to-host transfer. Randomness follows a key sequence held by the adapter:

- ``reset(seed=s)`` restarts the sequence at ``jax.random.PRNGKey(s)``; ``reset()`` continues it.
- Every ``reset`` and ``step`` splits the current key into ``(next_key, call_key)`` and passes
  ``call_key`` to the env's ``reset``/``step``. Replaying that sequence on the env gives the same
  episode, which is what makes ``reset(seed=s)`` reproducible.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import numpy as np
from pettingzoo import ParallelEnv

from jaxmarl_suite.compat.jaxmarl import require_single_env
from jaxmarl_suite.core import spaces as core_spaces
from jaxmarl_suite.core.env import MultiAgentEnv, State
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep

Array = jax.Array


def _reset_with_key_sequence(
    env: MultiAgentEnv, key: Array, params: EnvParams
) -> tuple[Array, State, TimeStep]:
    key, reset_key = jax.random.split(key)
    state, timestep = env.reset(reset_key, params)
    return key, state, timestep


def _step_with_key_sequence(
    env: MultiAgentEnv, key: Array, state: State, actions: GroupDict, params: EnvParams
) -> tuple[Array, State, TimeStep]:
    key, step_key = jax.random.split(key)
    state, timestep = env.step(step_key, state, actions, params)
    return key, state, timestep


class PettingZooEnv(ParallelEnv):
    """A single suite env as a PettingZoo ``ParallelEnv`` (see the module docstring for seeding).

    - ``observation_space(agent)``/``action_space(agent)`` are Gymnasium spaces, one cached object per
      agent. Observations are float32 numpy arrays inside them.
    - Discrete actions may be Python or numpy ints. Agents that finished before the episode did are
      removed from ``agents``, take no action and get no entries; when the episode ends ``agents`` is
      empty and ``step`` raises until ``reset``.
    - ``infos[agent]`` holds ``action_mask`` (int8, Gymnasium's mask format) for ``Discrete`` groups.
    - ``state()`` is every agent's observation, flattened and concatenated in ``possible_agents``
      order (mpe2's global state); ``state_space`` describes it.
    """

    def __init__(
        self,
        env: MultiAgentEnv,
        seed: int | None = None,
        render_mode: str | None = None,
        params: EnvParams | None = None,
    ) -> None:
        require_single_env(env, "to_pettingzoo")
        self.env = env
        self.params = env.default_params if params is None else params
        render_modes = ["rgb_array"] if env.renders else []
        if render_mode is not None and render_mode not in render_modes:
            raise ValueError(
                f"render_mode {render_mode!r} is not supported; choose from {render_modes or [None]}"
            )
        self.render_mode = render_mode
        self.metadata = {"render_modes": render_modes, "name": _env_name(env), "is_parallelizable": True}

        self.possible_agents: list[str] = list(env.agents)
        self.agents: list[str] = []
        self._slots = {
            name: (group, index) for group, names in env.groups.items() for index, name in enumerate(names)
        }
        self._group_spaces = {group: env.action_space(group) for group in env.groups}
        # A separate Gymnasium object per agent: each then seeds and samples independently.
        self.observation_spaces = {
            name: env.observation_space(group).to_gymnasium() for name, (group, _) in self._slots.items()
        }
        self.action_spaces = {
            name: env.action_space(group).to_gymnasium() for name, (group, _) in self._slots.items()
        }
        state_dim = sum(
            int(np.prod(env.observation_space(group).shape)) * len(names)
            for group, names in env.groups.items()
        )
        self.state_space = gymnasium.spaces.Box(-np.inf, np.inf, (state_dim,), np.float32)

        self._reset_fn = jax.jit(lambda key, params: _reset_with_key_sequence(env, key, params))
        self._step_fn = jax.jit(
            lambda key, state, actions, params: _step_with_key_sequence(env, key, state, actions, params)
        )
        self._render_fn = jax.jit(env.render) if env.renders else None

        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        self._key = jax.random.PRNGKey(seed)
        self._env_state: State | None = None
        self._obs: dict[str, np.ndarray] = {}

    # -- spaces ------------------------------------------------------------------------------------------

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        """The Gymnasium observation space of ``agent`` (the same object on every call)."""
        return self.observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        """The Gymnasium action space of ``agent`` (the same object on every call)."""
        return self.action_spaces[self._check_agent(agent)]

    def _check_agent(self, agent: str) -> str:
        if agent not in self._slots:
            raise KeyError(f"unknown agent {agent!r}; this env has {self.possible_agents}")
        return agent

    # -- episode -----------------------------------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start an episode: ``(observations, infos)`` for every agent. ``options`` is accepted and unused."""
        del options
        if seed is not None:
            self._key = jax.random.PRNGKey(seed)
        self._key, self._env_state, timestep = self._reset_fn(self._key, self.params)
        host = jax.device_get(timestep)
        self.agents = list(self.possible_agents)
        self._obs = self._per_agent_obs(host.obs)
        return dict(self._obs), {name: self._agent_info(host, name) for name in self.agents}

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Step every live agent: ``(observations, rewards, terminations, truncations, infos)``, keyed by
        the agents that were live before this step."""
        if self._env_state is None or not self.agents:
            raise RuntimeError(
                "step() called with no episode running (the last one ended, or reset() was never called); "
                "call reset() first"
            )
        group_actions = self._group_actions(actions)
        self._key, self._env_state, timestep = self._step_fn(
            self._key, self._env_state, group_actions, self.params
        )
        host = jax.device_get(timestep)
        self._obs = self._per_agent_obs(host.obs)
        live = self.agents
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for name in live:
            group, index = self._slots[name]
            observations[name] = self._obs[name]
            rewards[name] = float(host.reward[group][index])
            terminations[name] = bool(host.terminated[group][index])
            truncations[name] = bool(host.truncated[group][index])
            infos[name] = self._agent_info(host, name)
        self.agents = [name for name in live if not (terminations[name] or truncations[name])]
        return observations, rewards, terminations, truncations, infos

    def _group_actions(self, actions: dict[str, Any]) -> dict[str, np.ndarray]:
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict keyed by agent name, got {type(actions).__name__}")
        missing = [name for name in self.agents if name not in actions]
        unexpected = [name for name in actions if name not in self.agents]
        if missing or unexpected:
            raise ValueError(
                f"actions must be given for exactly the live agents {self.agents}; "
                f"missing {missing}, not live or unknown {unexpected}"
            )
        grouped: dict[str, np.ndarray] = {}
        for group, names in self.env.groups.items():
            space = self._group_spaces[group]
            # Agents that already finished still occupy their slot in the group's array; they act with 0.
            values = np.zeros((len(names), *space.shape), space.dtype)
            for index, name in enumerate(names):
                if name in actions:
                    values[index] = self._check_action(name, space, actions[name])
            grouped[group] = values
        return grouped

    def _check_action(self, agent: str, space: core_spaces.Space, action: Any) -> np.ndarray:
        value = np.asarray(action)
        if value.shape != space.shape:
            raise ValueError(
                f"action of {agent!r} has shape {value.shape}; {space} needs shape {space.shape}"
            )
        if isinstance(space, core_spaces.Discrete | core_spaces.MultiDiscrete):
            if not np.issubdtype(value.dtype, np.integer):
                raise ValueError(f"action of {agent!r} must be an integer for {space}, got {action!r}")
            upper = space.n if isinstance(space, core_spaces.Discrete) else np.asarray(space.nvec)
            if np.any(value < 0) or np.any(value >= upper):
                raise ValueError(f"action of {agent!r} is out of range for {space}: {action!r}")
        elif not np.issubdtype(value.dtype, np.number):
            raise ValueError(f"action of {agent!r} must be numeric for {space}, got {action!r}")
        return value.astype(space.dtype)

    def _per_agent_obs(self, obs: GroupDict) -> dict[str, np.ndarray]:
        # The space's dtype (float32 for every suite env so far), so Gymnasium's contains() accepts it.
        return {
            name: np.asarray(obs[group][index], self.observation_spaces[name].dtype)
            for name, (group, index) in self._slots.items()
        }

    def _agent_info(self, host: TimeStep, name: str) -> dict[str, Any]:
        group, index = self._slots[name]
        if group not in host.action_mask:
            return {}
        return {"action_mask": np.asarray(host.action_mask[group][index], np.int8)}

    # -- global state, rendering ---------------------------------------------------------------------------

    def state(self) -> np.ndarray:
        """Every agent's current observation, flattened and concatenated (float32 ``[state_dim]``)."""
        if self._env_state is None:
            raise RuntimeError("state() needs an episode: call reset() first")
        return np.concatenate([self._obs[name].reshape(-1) for name in self.possible_agents])

    def render(self) -> np.ndarray | None:
        """The current frame, ``uint8[H, W, 3]``, when ``render_mode="rgb_array"``; None (with a warning)
        when no render mode was chosen."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        if self._env_state is None:
            raise RuntimeError("render() needs an episode: call reset() first")
        assert self._render_fn is not None  # render_mode was validated against env.renders
        return np.asarray(self._render_fn(self._env_state, self.params))

    def close(self) -> None:
        """Drop the episode; nothing else is held open."""
        self._env_state = None
        self._obs = {}
        self.agents = []

    def __repr__(self) -> str:
        return f"PettingZooEnv({self.env!r})"


def _env_name(env: MultiAgentEnv) -> str:
    inner: Any = env
    while isinstance(getattr(inner, "env", None), MultiAgentEnv):
        inner = inner.env
    return type(inner).__name__


def to_pettingzoo(
    env: MultiAgentEnv,
    seed: int | None = None,
    render_mode: str | None = None,
    params: EnvParams | None = None,
) -> PettingZooEnv:
    """Wrap a single suite env as a PettingZoo ``ParallelEnv``.

    Args:
        env: a single (not batched) suite env, without ``AutoReset``.
        seed: the start of the key sequence used until ``reset(seed=...)``; drawn from the OS when None.
        render_mode: ``"rgb_array"`` (for envs that render) or None.
        params: the ``EnvParams`` every call uses; the env's defaults when None.
    """
    return PettingZooEnv(env, seed=seed, render_mode=render_mode, params=params)
