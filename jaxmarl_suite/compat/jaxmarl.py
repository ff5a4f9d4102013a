"""``to_jaxmarl``: JaxMARL 0.2's dict-per-agent ``MultiAgentEnv`` interface over a suite env.

JaxMARL scripts and wrappers (``LogWrapper``, ``MPELogWrapper``, the IPPO/MAPPO loops) talk to one env
at a time through per-agent dicts and vmap it themselves. This adapter gives them that view:

- ``reset(key) -> (obs, state)`` and an auto-resetting ``step(key, state, actions) -> (obs, state,
  reward, dones, info)``, with ``dones[agent] = terminated | truncated`` and ``dones["__all__"]`` True
  when every agent is done. On that step ``obs`` is the new episode's first observation (as in
  JaxMARL); the ended episode's last one is in ``info["final_obs"]`` when ``extra_info=True``.
- Agent ``i`` of group ``g`` reads ``obs[g][i]``; actions are stacked back into group arrays.
- Spaces are small JaxMARL-shaped objects (``n``, ``shape``, ``dtype``, ``low``/``high``,
  ``sample(key)``, ``contains(x)``), so jaxmarl itself is never imported.

Everything is pure and jittable; nothing here holds dynamic state.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core import spaces as core_spaces
from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.wrappers.base import episode_done

Array = jax.Array
AgentDict = dict[str, Array]


# ---------------------------------------------------------------------------------------------------
# Spaces
# ---------------------------------------------------------------------------------------------------


class JaxMARLSpace:
    """One agent's space with JaxMARL's interface: ``sample(key)`` draws a single value and
    ``contains(x)`` answers with a scalar bool. Backed by the suite's space of the same kind."""

    def __init__(self, space: core_spaces.Space) -> None:
        self.space = space
        self.shape: tuple[int, ...] = space.shape
        self.dtype: np.dtype = space.dtype

    def sample(self, rng: Array) -> Array:
        """One uniformly random value (JaxMARL's signature: a key and nothing else)."""
        return self.space.sample(rng)

    def contains(self, x: Any) -> Array:
        """Scalar bool: whether ``x`` is a value of this space."""
        return jnp.all(self.space.contains(x))

    def __repr__(self) -> str:
        return f"jaxmarl-compatible {self.space!r}"


class Discrete(JaxMARLSpace):
    """``Discrete(n)``: integers ``0 .. n-1``; ``.n`` as JaxMARL's networks read it."""

    space: core_spaces.Discrete

    def __init__(self, space: core_spaces.Discrete) -> None:
        super().__init__(space)
        self.n = space.n


class MultiDiscrete(JaxMARLSpace):
    """A vector of integers; ``.num_categories`` (JaxMARL's name) and ``.nvec`` give the sizes."""

    space: core_spaces.MultiDiscrete

    def __init__(self, space: core_spaces.MultiDiscrete) -> None:
        super().__init__(space)
        self.nvec = space.nvec
        self.num_categories = np.asarray(space.nvec)


class Box(JaxMARLSpace):
    """Real arrays within ``[low, high]`` (numpy arrays of ``shape``, possibly infinite)."""

    space: core_spaces.Box

    def __init__(self, space: core_spaces.Box) -> None:
        super().__init__(space)
        self.low = space.low
        self.high = space.high


def jaxmarl_space(space: core_spaces.Space) -> JaxMARLSpace:
    """The JaxMARL-compatible view of a suite space."""
    if isinstance(space, core_spaces.Discrete):
        return Discrete(space)
    if isinstance(space, core_spaces.MultiDiscrete):
        return MultiDiscrete(space)
    if isinstance(space, core_spaces.Box):
        return Box(space)
    raise TypeError(f"no JaxMARL equivalent for space {space!r}")


# ---------------------------------------------------------------------------------------------------
# The adapter
# ---------------------------------------------------------------------------------------------------


@struct.dataclass
class JaxMARLState:
    """The wrapped env's state plus what JaxMARL reads from a state alone: ``get_obs`` needs the
    observations and ``get_avail_actions`` the action masks, which suite envs return only in TimeSteps."""

    env_state: Any
    obs: GroupDict
    action_mask: GroupDict


def require_single_env(env: MultiAgentEnv, adapter: str) -> None:
    """Raise ``TypeError`` if ``env`` is batched or already auto-resets; adapters need a plain single env."""
    from jaxmarl_suite.core.vec import VecEnv
    from jaxmarl_suite.wrappers.auto_reset import AutoReset

    if not isinstance(env, MultiAgentEnv):
        raise TypeError(f"{adapter} needs a jaxmarl_suite MultiAgentEnv, got {type(env).__name__}")
    inner: Any = env
    while isinstance(inner, MultiAgentEnv):
        if isinstance(inner, VecEnv):
            raise TypeError(
                f"{adapter} needs a single env, got a batch of {inner.num_envs}: build it with "
                "make(env_id) (no num_envs) and vmap the adapter's reset/step as JaxMARL scripts do"
            )
        if isinstance(inner, AutoReset):
            raise TypeError(f"{adapter} resets finished episodes itself; pass the env without AutoReset")
        inner = getattr(inner, "env", None)


class JaxMARLEnv:
    """A suite env seen through JaxMARL 0.2's ``MultiAgentEnv`` interface (see the module docstring).

    Args:
        env: a single (not batched) suite env, without ``AutoReset``.
        params: the ``EnvParams`` every call uses; the env's defaults when None. Fixed at construction:
            the jitted methods bake them in, as JaxMARL envs hold their parameters on the object.
        extra_info: add ``final_obs``, ``terminated`` and ``truncated`` (per-agent dicts) and the env's
            own info to ``info``. Off by default because JaxMARL's scripts reshape every info leaf to
            ``[num_envs * num_agents]``, which only per-agent scalars survive (JaxMARL's MPE gives ``{}``).

    Key use: ``step`` splits its key into ``(step_key, reset_key)``; ``step_env(step_key, ...)`` makes
    the transition and ``reset(reset_key)`` the new episode where one ended.
    """

    def __init__(self, env: MultiAgentEnv, params: EnvParams | None = None, extra_info: bool = False) -> None:
        require_single_env(env, "to_jaxmarl")
        self.env = env
        self.params = env.default_params if params is None else params
        self.extra_info = bool(extra_info)
        self.agents: list[str] = list(env.agents)
        self.num_agents = len(self.agents)
        self._slots = {
            name: (group, index) for group, names in env.groups.items() for index, name in enumerate(names)
        }
        # One space object per group: JaxMARL spaces are stateless, so agents of a group may share it.
        obs_spaces = {group: jaxmarl_space(env.observation_space(group)) for group in env.groups}
        act_spaces = {group: jaxmarl_space(env.action_space(group)) for group in env.groups}
        self.observation_spaces = {name: obs_spaces[group] for name, (group, _) in self._slots.items()}
        self.action_spaces = {name: act_spaces[group] for name, (group, _) in self._slots.items()}

    # -- static structure ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The wrapped env's class name (JaxMARL scripts match on it, e.g. ``"smax" in env.name``)."""
        inner: Any = self.env
        while isinstance(getattr(inner, "env", None), MultiAgentEnv):
            inner = inner.env
        return type(inner).__name__

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        """The env's groups: ``{group: [agent names]}``."""
        return {group: list(names) for group, names in self.env.groups.items()}

    def observation_space(self, agent: str) -> JaxMARLSpace:
        """Observation space of ``agent``."""
        return self.observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> JaxMARLSpace:
        """Action space of ``agent``."""
        return self.action_spaces[self._check_agent(agent)]

    def _check_agent(self, agent: str) -> str:
        if agent not in self._slots:
            raise KeyError(f"unknown agent {agent!r}; this env has {self.agents}")
        return agent

    # -- conversions between group arrays and per-agent dicts -------------------------------------------

    def _per_agent(self, values: GroupDict) -> AgentDict:
        return {name: values[group][index] for name, (group, index) in self._slots.items()}

    def _to_groups(self, actions: Mapping[str, Any]) -> GroupDict:
        missing = [name for name in self.agents if name not in actions]
        if missing:
            raise KeyError(f"actions are missing agents {missing}; expected a dict keyed by {self.agents}")
        grouped = {}
        for group, names in self.env.groups.items():
            space = self.env.action_space(group)
            stacked = jnp.stack([self._agent_action(name, space, actions[name]) for name in names])
            integral = isinstance(space, core_spaces.Discrete | core_spaces.MultiDiscrete)
            if integral and not jnp.issubdtype(stacked.dtype, jnp.integer):
                raise TypeError(f"group {group!r} has {space} actions; got dtype {stacked.dtype}")
            grouped[group] = stacked.astype(space.dtype)
        return grouped

    @staticmethod
    def _agent_action(agent: str, space: core_spaces.Space, action: Any) -> Array:
        value = jnp.asarray(action)
        if value.size != int(np.prod(space.shape)):
            raise ValueError(
                f"action of {agent!r} has shape {value.shape}; {space} needs shape {space.shape}"
            )
        # Reshape, as JaxMARL does: its IPPO scripts' unbatchify hands each agent a [1]-shaped action.
        return value.reshape(space.shape)

    def _dones(self, timestep: TimeStep) -> dict[str, Array]:
        done = {
            group: timestep.terminated[group] | timestep.truncated[group] for group in timestep.terminated
        }
        dones = self._per_agent(done)
        dones["__all__"] = episode_done(timestep)
        return dones

    def _info(self, timestep: TimeStep) -> dict[str, Any]:
        if not self.extra_info:
            return {}
        return {
            **timestep.info,
            "final_obs": self._per_agent(timestep.obs),
            "terminated": self._per_agent(timestep.terminated),
            "truncated": self._per_agent(timestep.truncated),
        }

    # -- the JaxMARL API -----------------------------------------------------------------------------------

    def _fresh_state(self, key: Array) -> JaxMARLState:
        env_state, timestep = self.env.reset(key, self.params)
        return JaxMARLState(env_state, timestep.obs, timestep.action_mask)

    @functools.partial(jax.jit, static_argnums=0)
    def reset(self, key: Array) -> tuple[AgentDict, JaxMARLState]:
        """Start an episode: ``(obs, state)`` with ``obs`` keyed by agent."""
        state = self._fresh_state(key)
        return self.get_obs(state), state

    def step_env(
        self, key: Array, state: JaxMARLState, actions: Mapping[str, Array]
    ) -> tuple[AgentDict, JaxMARLState, AgentDict, dict[str, Array], dict[str, Any]]:
        """One transition without auto-reset, with ``key`` passed to the env's ``step`` unchanged."""
        env_state, timestep = self.env.step(key, state.env_state, self._to_groups(actions), self.params)
        next_state = JaxMARLState(env_state, timestep.obs, timestep.action_mask)
        return (
            self._per_agent(timestep.obs),
            next_state,
            self._per_agent(timestep.reward),
            self._dones(timestep),
            self._info(timestep),
        )

    @functools.partial(jax.jit, static_argnums=0)
    def step(
        self,
        key: Array,
        state: JaxMARLState,
        actions: Mapping[str, Array],
        reset_state: JaxMARLState | None = None,
    ) -> tuple[AgentDict, JaxMARLState, AgentDict, dict[str, Array], dict[str, Any]]:
        """Step, and where the episode ended start a new one (``reset_state`` if given, else a reset).

        ``reward`` and ``dones`` describe the transition just made; ``obs`` and the returned state
        belong to the new episode on the step where ``dones["__all__"]`` is True.
        """
        step_key, reset_key = jax.random.split(key)
        _, stepped, reward, dones, info = self.step_env(step_key, state, actions)
        done = dones["__all__"]
        if reset_state is None:
            # cond, not select: a single env skips the reset on most steps (under vmap it becomes a select).
            next_state = jax.lax.cond(done, lambda: self._fresh_state(reset_key), lambda: stepped)
        else:
            next_state = jax.tree.map(lambda fresh, old: jnp.where(done, fresh, old), reset_state, stepped)
        return self.get_obs(next_state), next_state, reward, dones, info

    def get_obs(self, state: JaxMARLState) -> AgentDict:
        """The observations of ``state``, keyed by agent."""
        return self._per_agent(state.obs)

    @functools.partial(jax.jit, static_argnums=0)
    def get_avail_actions(self, state: JaxMARLState) -> AgentDict:
        """Boolean masks of legal actions ``[num_actions]``, keyed by agent.

        Only groups with ``Discrete`` actions have masks; for others this raises ``NotImplementedError``,
        as JaxMARL's continuous envs do.
        """
        unmasked = [group for group in self.env.groups if group not in state.action_mask]
        if unmasked:
            raise NotImplementedError(
                f"groups {unmasked} have no action mask (their actions are not Discrete)"
            )
        return self._per_agent(state.action_mask)

    def __repr__(self) -> str:
        return f"JaxMARLEnv({self.env!r})"


def to_jaxmarl(env: MultiAgentEnv, params: EnvParams | None = None, extra_info: bool = False) -> JaxMARLEnv:
    """Wrap a single suite env in JaxMARL 0.2's dict-per-agent API, so JaxMARL scripts and wrappers run
    on it unchanged. See ``JaxMARLEnv`` for the arguments and semantics."""
    return JaxMARLEnv(env, params=params, extra_info=extra_info)
