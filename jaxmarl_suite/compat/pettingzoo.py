"""``to_pettingzoo``: a suite env as a PettingZoo ``ParallelEnv``, with numpy at the boundary.

The env's ``reset``, ``step`` and ``render`` are jitted with the env as a static argument, so every adapter
built on the same env object shares one compilation; each call then makes one compiled call and one
device-to-host transfer. Randomness follows a key sequence held by the adapter:

- ``reset(seed=s)`` restarts the sequence at ``jax.random.PRNGKey(s)``; ``reset()`` continues it.
- Every ``reset`` and ``step`` splits the current key into ``(next_key, call_key)`` and passes
  ``call_key`` to the env's ``reset``/``step``. Replaying that sequence on the env gives the same
  episode, which is what makes ``reset(seed=s)`` reproducible.

PettingZoo's AEC API is one call away: ``pettingzoo.utils.conversions.parallel_to_aec(adapter)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxmarl_suite.compat.jaxmarl import require_single_env
from jaxmarl_suite.core import spaces as core_spaces
from jaxmarl_suite.core.env import MultiAgentEnv, State
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.wrappers.checked import checked_errors

try:
    import gymnasium
    from pettingzoo import ParallelEnv
except ImportError as error:  # the core package does not depend on them: say which extra does
    raise ImportError(f"to_pettingzoo and make_pettingzoo need {error.name or 'pettingzoo and gymnasium'}, "
                      'which is not installed: pip install "jaxmarl-suite[pettingzoo]"') from error

INSTALL = 'pip install "jaxmarl-suite[pettingzoo]"'
"""What installs this adapter's optional dependencies: gymnasium, pettingzoo, and pygame for human mode."""

Array = jax.Array

RENDER_MODES = ("human", "rgb_array")
"""The render modes of an env that renders, in mpe2's order."""


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


def _render(env: MultiAgentEnv, state: State, params: EnvParams) -> Array:
    return env.render(state, params)


# The env is static (hashed by identity unless it defines __hash__), so adapters on one env share code.
_jit_reset = jax.jit(_reset_with_key_sequence, static_argnums=0)
_jit_step = jax.jit(_step_with_key_sequence, static_argnums=0)
_jit_render = jax.jit(_render, static_argnums=0)


def _compiled(env: MultiAgentEnv) -> tuple[Callable[..., Any], ...]:
    """Jitted ``(reset, step, render)`` bound to ``env``. Shared through jit's cache where ``env`` hashes;
    compiled for this adapter alone where it cannot (an env that defines ``__eq__`` without ``__hash__``)."""
    functions = (_reset_with_key_sequence, _step_with_key_sequence, _render)
    try:
        hash(env)
    except TypeError:
        return tuple(jax.jit(functools.partial(function, env)) for function in functions)
    return tuple(functools.partial(jitted, env) for jitted in (_jit_reset, _jit_step, _jit_render))


class PettingZooEnv(ParallelEnv):
    """A single suite env as a PettingZoo ``ParallelEnv`` (see the module docstring for seeding).

    - ``observation_space(agent)``/``action_space(agent)`` are Gymnasium spaces, one cached object per
      agent. Observations are numpy arrays of their space's dtype (float32, and uint8 for Overcooked's
      lossless encoding).
    - Discrete actions may be Python or numpy ints. Agents that finished before the episode did are
      removed from ``agents``, take no action and get no entries; when the episode ends ``agents`` is
      empty and ``step`` raises until ``reset``.
    - ``infos[agent]`` holds ``action_mask`` (int8, Gymnasium's mask format) for ``Discrete`` groups.
    - ``state()`` is every agent's observation, flattened and concatenated in ``possible_agents``
      order (mpe2's global state), as float32; ``state_space`` is the matching ``Box``, whose bounds are
      the observation spaces' bounds laid end to end.
    - ``render_mode="rgb_array"``: ``render()`` returns ``uint8[H, W, 3]``. ``render_mode="human"``:
      every ``reset`` and ``step`` draws the frame into a pygame window at ``metadata["render_fps"]``
      (as mpe2 does), ``render()`` redraws it and returns None, and ``close()`` closes the window.
    - ``metadata``: ``name`` (the reference's env name, such as ``simple_spread_v3``), ``render_modes``,
      ``render_fps`` (the env's ``render_fps``) and ``is_parallelizable``.
    """

    def __init__(
        self,
        env: MultiAgentEnv,
        seed: int | None = None,
        render_mode: str | None = None,
        params: EnvParams | None = None,
        name: str | None = None,
    ) -> None:
        require_single_env(env, "to_pettingzoo")
        self.env = env
        self.params = env.default_params if params is None else params
        render_modes = list(RENDER_MODES) if env.renders else []
        if render_mode is not None and render_mode not in render_modes:
            raise ValueError(
                f"render_mode {render_mode!r} is not supported by {_env_name(env)}; "
                f"choose from {render_modes or [None]}"
            )
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"name must be a non-empty string or None, got {name!r}")
        # Fail at construction, not at the first frame, when the window cannot be drawn.
        self._pygame: Any = _import_pygame() if render_mode == "human" else None
        self.render_mode = render_mode
        self.metadata = {
            "name": name or _env_name(env),
            "render_modes": render_modes,
            "render_fps": int(env.render_fps),
            "is_parallelizable": True,
        }

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
        bounds = [_flat_bounds(self.observation_spaces[name]) for name in self.possible_agents]
        self.state_space = gymnasium.spaces.Box(
            np.concatenate([low for low, _ in bounds]).astype(np.float32),
            np.concatenate([high for _, high in bounds]).astype(np.float32),
            dtype=np.float32,
        )

        self._reset_fn, self._step_fn, self._render_fn = _compiled(env)
        self._key = jax.random.PRNGKey(_check_seed(seed) if seed is not None else _os_seed())
        self._env_state: State | None = None
        self._obs: dict[str, np.ndarray] = {}
        self._clock: Any = None

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
        """Start an episode: ``(observations, infos)`` for every agent. ``seed`` (a non-negative int)
        restarts the key sequence; ``options`` is accepted and unused."""
        del options
        if seed is not None:
            self._key = jax.random.PRNGKey(_check_seed(seed))
        self._key, self._env_state, timestep = self._reset_fn(self._key, self.params)
        host = jax.device_get(timestep)
        self.agents = list(self.possible_agents)
        self._obs = self._per_agent_obs(host.obs)
        if self.render_mode == "human":
            self._show_frame()
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
        with checked_errors():  # a Checked env's mask check fails inside the program: its message first
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
        if self.render_mode == "human":
            self._show_frame()
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
        # The space's dtype (float32, uint8 for Overcooked's image), so Gymnasium's contains() accepts it.
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
        flat = [self._obs[name].reshape(-1) for name in self.possible_agents]
        return np.concatenate(flat).astype(np.float32, copy=False)

    def render(self) -> np.ndarray | None:
        """The current frame: ``uint8[H, W, 3]`` when ``render_mode="rgb_array"``; drawn into the window
        (returning None) when ``"human"``; None with a warning when no render mode was chosen."""
        if self.render_mode is None:
            modes = self.metadata["render_modes"]
            gymnasium.logger.warn(f"render() called without a render_mode; pass render_mode= one of {modes}")
            return None
        if self._env_state is None:
            raise RuntimeError("render() needs an episode: call reset() first")
        if self.render_mode == "human":
            self._show_frame()
            return None
        return self._frame()

    def _frame(self) -> np.ndarray:
        return np.asarray(self._render_fn(self._env_state, self.params))

    def _show_frame(self) -> None:
        pygame = self._pygame
        frame = self._frame()
        height, width = frame.shape[:2]
        window = pygame.display.get_surface() if pygame.display.get_init() else None
        # (Re)open when there is no window yet, another adapter closed it, or the frame size changed.
        if window is None or window.get_size() != (width, height):
            pygame.display.init()
            pygame.display.set_caption(self.metadata["name"])
            window = pygame.display.set_mode((width, height))
            self._clock = pygame.time.Clock()
        elif self._clock is None:
            self._clock = pygame.time.Clock()
        # surfarray indexes pixels [x, y]; the frame is [row, column].
        window.blit(pygame.surfarray.make_surface(frame.transpose(1, 0, 2)), (0, 0))
        pygame.event.pump()  # keeps the OS from marking the window unresponsive
        pygame.display.flip()
        self._clock.tick(self.metadata["render_fps"])

    def close(self) -> None:
        """Drop the episode and close the pygame window if ``render_mode="human"`` opened one."""
        self._env_state = None
        self._obs = {}
        self.agents = []
        if self._pygame is not None and self._clock is not None:
            self._pygame.display.quit()
            self._clock = None

    def __repr__(self) -> str:
        return f"PettingZooEnv({self.env!r})"


def _import_pygame() -> Any:
    try:
        import pygame
    except ImportError as error:
        raise ImportError(
            f"render_mode='human' draws into a pygame window, and pygame is not installed: {INSTALL} "
            "(or pip install pygame; or use render_mode='rgb_array')"
        ) from error
    return pygame


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    return int(seed)


def _os_seed() -> int:
    return int(np.random.SeedSequence().generate_state(1)[0])


def _flat_bounds(space: gymnasium.spaces.Space) -> tuple[np.ndarray, np.ndarray]:
    """Per-element bounds of a flattened observation from ``space``."""
    if isinstance(space, gymnasium.spaces.Box):
        return space.low.reshape(-1), space.high.reshape(-1)
    if isinstance(space, gymnasium.spaces.Discrete):
        return np.array([space.start]), np.array([space.start + space.n - 1])
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        return space.start.reshape(-1), (space.start + space.nvec - 1).reshape(-1)
    size = int(np.prod(space.shape or ()))
    return np.full(size, -np.inf), np.full(size, np.inf)


def _env_name(env: MultiAgentEnv) -> str:
    """The reference's env name (``mpe2.simple_spread_v3`` gives ``simple_spread_v3``), else the class's."""
    if env.reference:
        return env.reference.rsplit(".", 1)[-1]
    inner: Any = env
    while isinstance(getattr(inner, "env", None), MultiAgentEnv):
        inner = inner.env
    return type(inner).__name__


def to_pettingzoo(
    env: MultiAgentEnv,
    seed: int | None = None,
    render_mode: str | None = None,
    params: EnvParams | None = None,
    name: str | None = None,
) -> PettingZooEnv:
    """Wrap a single suite env as a PettingZoo ``ParallelEnv``.

    Args:
        env: a single (not batched) suite env, without ``AutoReset``.
        seed: the start of the key sequence used until ``reset(seed=...)``; drawn from the OS when None.
        render_mode: ``"human"`` (a pygame window; needs pygame) or ``"rgb_array"``, for envs that
            render; or None.
        params: the ``EnvParams`` every call uses; the env's defaults when None.
        name: ``metadata["name"]``; when None, the name of the env's reference (``simple_spread_v3``),
            or its class name if it has none. ``make_pettingzoo`` uses the env id there instead.
    """
    return PettingZooEnv(env, seed=seed, render_mode=render_mode, params=params, name=name)


def make_pettingzoo(
    env_id: str,
    seed: int | None = None,
    render_mode: str | None = None,
    params: EnvParams | None = None,
    **env_kwargs: Any,
) -> PettingZooEnv:
    """``to_pettingzoo(make(env_id, **env_kwargs))``, named after the env's reference (``simple_spread_v3``
    for ``mpe2.simple_spread_v3``) or, for envs without one, the canonical env id (``SMAX_3m``).

    Each call builds a new env, so its first reset and step compile anew; to build many adapters of one
    env (vectorised PettingZoo, seed tests), call ``to_pettingzoo`` on one env object instead.
    """
    from jaxmarl_suite.core.registry import env_spec, make

    spec = env_spec(env_id)
    name = spec.reference.rsplit(".", 1)[-1] if spec.reference else spec.env_id
    env = make(env_id, **env_kwargs)
    return PettingZooEnv(env, seed=seed, render_mode=render_mode, params=params, name=name)
