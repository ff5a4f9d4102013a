"""``to_jaxmarl``: JaxMARL 0.2's dict-per-agent ``MultiAgentEnv`` interface over a suite env.

JaxMARL scripts and wrappers (``LogWrapper``, ``MPELogWrapper``, ``SMAXLogWrapper``, ``CTRolloutManager``,
the IPPO/MAPPO/Q-learning loops) talk to one env at a time through per-agent dicts and vmap it
themselves. This adapter gives them that view:

- ``reset(key) -> (obs, state)`` and an auto-resetting ``step(key, state, actions) -> (obs, state,
  reward, dones, info)``, with ``dones[agent] = terminated | truncated`` and ``dones["__all__"]`` True
  when every agent is done. On that step ``obs`` is the new episode's first observation (as in
  JaxMARL); the ended episode's last one is in ``info["final_obs"]`` when ``extra_info=True``.
- Agent ``i`` of group ``g`` reads ``obs[g][i]``; actions are stacked back into group arrays.
- Spaces have JaxMARL's interface (``n``, ``shape``, ``dtype``, ``low``/``high``, ``sample(key)``,
  ``contains(x)``). When ``jaxmarl`` is importable they are also instances of its space classes, which
  its wrappers check with ``isinstance``; without it nothing of JaxMARL is imported.
- Where JaxMARL's own env of a family differs in what its scripts read, the adapter presents JaxMARL's
  convention (``docs/compat.md``):
  - an env that reports ``info["world_state"]`` gets ``obs["world_state"]`` and ``state_size``;
  - SMAX: JaxMARL's reward (each step, the opponents' lost hit points as a fraction of their maximum,
    averaged over the opponents, plus 1 on a win, for every agent of the team, dead or alive), so
    ``SMAXLogWrapper``'s win test (a last reward of at least 1) counts real wins; the world state in
    JaxMARL's layout; ``num_allies``, ``num_enemies``, ``own_features``, ``unit_features``, ``obs_size``;
  - FACMAC: every agent's observation padded with zeros to the longest (JaxMARL's prey see 16 floats);
  - MPE: the state's ``p_pos``/``p_vel`` and the env's ``num_entities``/``num_landmarks``.

Everything is pure and jittable; nothing here holds dynamic state.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
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
        self.shape: Any = space.shape  # a tuple; an int where JaxMARL declares one (Hanabi)
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


@functools.cache
def _with_jaxmarl_base(kind: type[JaxMARLSpace]) -> type[JaxMARLSpace]:
    """``kind``, made a subclass of JaxMARL's space class of the same name too when jaxmarl is importable:
    JaxMARL's ``get_space_dim`` (every Q-learning script) accepts only ``isinstance`` of its own classes."""
    if importlib.util.find_spec("jaxmarl") is None:
        return kind
    try:
        from jaxmarl.environments import spaces as jaxmarl_spaces
    except ImportError:  # installed but broken: the plain classes still serve JaxMARL's duck-typed code
        return kind
    namespace = {"__module__": kind.__module__, "__qualname__": kind.__qualname__, "__doc__": kind.__doc__}
    return type(kind.__name__, (kind, getattr(jaxmarl_spaces, kind.__name__)), namespace)


def jaxmarl_space(space: core_spaces.Space) -> JaxMARLSpace:
    """The JaxMARL-compatible view of a suite space (an instance of JaxMARL's class when jaxmarl imports)."""
    kinds: list[tuple[type[core_spaces.Space], type[JaxMARLSpace]]] = [
        (core_spaces.Discrete, Discrete),
        (core_spaces.MultiDiscrete, MultiDiscrete),
        (core_spaces.Box, Box),
    ]
    for core_kind, kind in kinds:
        if isinstance(space, core_kind):
            return _with_jaxmarl_base(kind)(space)
    raise TypeError(f"no JaxMARL equivalent for space {space!r}")


# ---------------------------------------------------------------------------------------------------
# Family conventions: what JaxMARL's own env of a family hands its scripts
# ---------------------------------------------------------------------------------------------------


_SMAX_MODULE = "jaxmarl_suite.environments.smax.smax"
_OVERCOOKED_MODULE = "jaxmarl_suite.environments.overcooked.overcooked"
_MPE_PACKAGE = "jaxmarl_suite.environments.mpe"
_HANABI_MODULE = "jaxmarl_suite.environments.hanabi.hanabi"


def _innermost(env: MultiAgentEnv) -> MultiAgentEnv:
    inner: Any = env
    while isinstance(getattr(inner, "env", None), MultiAgentEnv):
        inner = inner.env
    return inner


def _defined_in(env: MultiAgentEnv, package: str) -> bool:
    """Whether ``env``'s class or a base comes from ``package``; by name, so no family is imported."""
    return any(cls.__module__.startswith(package) for cls in type(env).__mro__)


def _inner_state(state: Any, has: str) -> Any:
    """The innermost env's state inside a wrapper's state (wrappers keep theirs as ``env_state``): the first
    one with attribute ``has``. Raises AttributeError when there is none."""
    while not hasattr(state, has):
        if not hasattr(state, "env_state"):
            raise AttributeError(f"the wrapped env's state has no {has!r}")
        state = state.env_state
    return state


class Conventions:
    """How ``JaxMARLEnv`` presents an env: by default, exactly as the suite env has it. Subclasses adopt
    JaxMARL's convention for a family where its scripts read something the suite env says differently."""

    def __init__(self, env: MultiAgentEnv) -> None:
        self.env = env

    def attributes(self) -> dict[str, Any]:
        """Extra attributes JaxMARL's env of this family has (``num_allies``, ``num_entities``, ...)."""
        return {}

    def observation_space(self, group: str) -> core_spaces.Space:
        """One agent's observation space, as ``group_obs`` presents it."""
        return self.env.observation_space(group)

    def group_obs(self, obs: GroupDict) -> GroupDict:
        """The observations ``{group: [n, *obs_shape]}`` as presented."""
        return obs

    def obs_space_shape(self, shape: tuple[int, ...]) -> Any:
        """The ``shape`` attribute of the presented observation space (JaxMARL's own type for it)."""
        return shape

    def world_state(self, timestep: TimeStep) -> Array | None:
        """The global state presented as ``obs["world_state"]``: the env's ``info["world_state"]``, if any."""
        return timestep.info.get("world_state")

    def rewards(self, before: Any, after: Any, timestep: TimeStep) -> GroupDict:
        """``{group: [n]}`` rewards of the transition from env state ``before`` to ``after``."""
        del before, after
        return timestep.reward

    def info(self, timestep: TimeStep) -> dict[str, GroupDict]:
        """Info JaxMARL's env of this family always returns, as ``{key: {group: [n]}}`` (made per agent)."""
        del timestep
        return {}


class MPEConventions(Conventions):
    """MPE: JaxMARL's ``num_entities`` and ``num_landmarks`` (TransfQMix builds its own observations from
    them and the state's ``p_pos``/``p_vel``, which ``JaxMARLState`` provides)."""

    def attributes(self) -> dict[str, Any]:
        """``num_entities`` (agents then landmarks, as in ``p_pos``) and ``num_landmarks``."""
        inner: Any = _innermost(self.env)
        num_landmarks = len(inner.landmark_specs)
        return {"num_entities": len(inner.agent_specs) + num_landmarks, "num_landmarks": num_landmarks}


class FacmacConventions(MPEConventions):
    """FACMAC: JaxMARL gives every agent one observation length (its scripts stack all agents' observations
    into one array), so shorter observations get trailing zeros. With one prey that is JaxMARL's layout
    exactly: its prey see two padding zeros where ours see no other prey's velocity (16, not 14)."""

    def __init__(self, env: MultiAgentEnv) -> None:
        super().__init__(env)
        sizes = {group: env.observation_space(group).shape for group in env.groups}
        if any(len(shape) != 1 for shape in sizes.values()):
            raise TypeError(f"FACMAC observations are vectors; got shapes {sizes}")
        self.length = max(shape[0] for shape in sizes.values())

    def observation_space(self, group: str) -> core_spaces.Space:
        """The group's ``Box``, widened with ``[0, 0]`` bounds for the padding zeros."""
        space = self.env.observation_space(group)
        pad = self.length - space.shape[0]
        if not pad:
            return space
        assert isinstance(space, core_spaces.Box)
        return core_spaces.Box(np.pad(space.low, (0, pad)), np.pad(space.high, (0, pad)), (self.length,))

    def group_obs(self, obs: GroupDict) -> GroupDict:
        """Each group's observations padded with zeros to the longest length."""
        return {
            group: jnp.pad(values, [(0, 0)] * (values.ndim - 1) + [(0, self.length - values.shape[-1])])
            for group, values in obs.items()
        }


class SMAXConventions(Conventions):
    """SMAX as JaxMARL's SMAX hands it to its scripts.

    - Reward: each step, every opponent's lost health plus shield as a fraction of its maximum (net of
      heals and shield regeneration, never below zero), averaged over the opponents, plus 1 on a win;
      every agent of the team gets it, dead or alive. ``SMAXLogWrapper`` counts a win when an episode's
      last reward is at least 1, which this makes true exactly on wins (the damage part of one step
      reaches 1 only when every opponent dies from full health in it, which is a win or a draw).
    - World state in JaxMARL's layout: each unit's ``OWN_FEATURES`` (unit by unit), then one row of
      ``num_units`` values per remaining feature (alive, team, last move x/y, last attacked, the elapsed
      fraction of the episode). TransfQMix reshapes it into one row of features per unit.
    - ``num_allies``, ``num_enemies``, ``own_features``, ``unit_features`` and ``obs_size``.
    """

    WIN_BONUS = 1.0
    """JaxMARL's ``won_battle_bonus``."""

    def __init__(self, env: MultiAgentEnv) -> None:
        super().__init__(env)
        smax_module = importlib.import_module(_SMAX_MODULE)
        self.smax: Any = _innermost(env)
        if dict(env.groups) != dict(self.smax.groups):
            raise TypeError(
                "to_jaxmarl presents SMAX with JaxMARL's conventions, which name SMAX's own groups; "
                f"the wrappers around it changed them to {list(env.groups)}"
            )
        features = smax_module.STATE_FEATURES
        self._own = np.array([features.index(name) for name in smax_module.OWN_FEATURES])
        self._rows = np.array(
            [features.index(name) for name in ("alive", *smax_module.LAST_ACTION_FEATURES)]
        )
        self._num_state_features = len(features)
        self._own_features = list(smax_module.OWN_FEATURES)

    def attributes(self) -> dict[str, Any]:
        """JaxMARL's SMAX attributes, with our sizes."""
        smax = self.smax
        return {
            "num_allies": smax.num_allies,
            "num_enemies": smax.num_enemies,
            "own_features": self._own_features,
            "unit_features": list(smax.unit_feature_names),
            "obs_size": smax.obs_dim(0),
        }

    def world_state(self, timestep: TimeStep) -> Array:
        """``[num_units * (len(OWN_FEATURES) + 6)]``: the env's world state in JaxMARL's layout."""
        native = timestep.info["world_state"]
        num_units = self.smax.num_units
        units = native[:-1].reshape(num_units, self._num_state_features)
        team = (jnp.arange(num_units) >= self.smax.num_allies).astype(native.dtype)
        elapsed = jnp.broadcast_to(native[-1], (num_units,))
        alive, *last_action = (units[:, i] for i in self._rows)
        rows = jnp.stack([alive, team, *last_action, elapsed])
        return jnp.concatenate([units[:, self._own].reshape(-1), rows.reshape(-1)])

    def rewards(self, before: Any, after: Any, timestep: TimeStep) -> GroupDict:
        """JaxMARL's team reward (the class docstring) for every agent of each group."""
        before, after = _inner_state(before, "shield"), _inner_state(after, "shield")
        smax = self.smax
        stats = smax.unit_stats(after.unit_type[:, None])
        max_points = jnp.broadcast_to((stats.health + stats.shield)[:, 0], (smax.num_units,))
        lost = jnp.maximum((before.health + before.shield) - (after.health + after.shield), 0.0) / max_points
        won = {"allies": timestep.info["won"], "enemies": timestep.info["lost"]}
        rewards = {}
        for group, names in self.env.groups.items():
            opponents = smax.team_rows[1 if group == "allies" else 0]
            team_reward = jnp.mean(lost[opponents]) + self.WIN_BONUS * won[group].astype(jnp.float32)
            rewards[group] = jnp.full((len(names),), team_reward, jnp.float32)
        return rewards


class OvercookedConventions(Conventions):
    """Overcooked as JaxMARL's scripts read it: observations ``(height, width, 26)`` (JaxMARL returns rows
    first, though its space says ``(width, height, 26)``; ours are overcooked-ai's ``[x, y, c]``), and
    ``info["shaped_reward"]`` always present, one entry per agent (its IPPO anneals it into the reward).
    The featurized observation, which JaxMARL lacks, is left as it is."""

    def __init__(self, env: MultiAgentEnv) -> None:
        super().__init__(env)
        self.image = len(env.observation_space("agents").shape) == 3

    def observation_space(self, group: str) -> core_spaces.Space:
        """The image Box with its first two axes swapped."""
        space = self.env.observation_space(group)
        if not self.image:
            return space
        assert isinstance(space, core_spaces.Box)
        width, height, channels = space.shape
        return core_spaces.Box(np.swapaxes(space.low, 0, 1), np.swapaxes(space.high, 0, 1),
                               (height, width, channels), space.dtype)

    def group_obs(self, obs: GroupDict) -> GroupDict:
        """``[..., x, y, c]`` -> ``[..., y, x, c]`` for images."""
        if not self.image:
            return obs
        return {group: jnp.swapaxes(values, -3, -2) for group, values in obs.items()}

    def info(self, timestep: TimeStep) -> dict[str, GroupDict]:
        """``shaped_reward`` per agent."""
        return {"shaped_reward": {"agents": timestep.info["shaped_reward"]}}


class HanabiConventions(Conventions):
    """JaxMARL's Hanabi: the same observation (658 numbers for 2 players) and actions (HLE's moves, then
    the no-op), plus what its scripts read: ``get_legal_moves(state)`` (float masks per agent, as its IPPO
    turns them into logit penalties) and its size attributes."""

    def attributes(self) -> dict[str, Any]:
        """``num_moves`` (the no-op included, as JaxMARL counts), hand size, colours, ranks, tokens and
        ``get_legal_moves``."""
        inner: Any = _innermost(self.env)
        agents = list(self.env.agents)

        def get_legal_moves(state: Any) -> dict[str, Array]:
            masks = state.action_mask["agents"].astype(jnp.float32)
            return {name: masks[index] for index, name in enumerate(agents)}

        return {"num_moves": inner.num_moves + 1, "hand_size": inner.hand_size,
                "num_colors": inner.num_colors, "num_ranks": inner.num_ranks,
                "max_info_tokens": inner.max_info_tokens,
                "max_life_tokens": inner.max_life_tokens, "deck_size": inner.deck_size,
                "get_legal_moves": get_legal_moves}

    def obs_space_shape(self, shape: tuple[int, ...]) -> Any:
        """An int, as JaxMARL's Hanabi declares it (its IPPO builds ``(1, num_envs, shape)``)."""
        (size,) = shape
        return size


def conventions_for(env: MultiAgentEnv) -> Conventions:
    """The conventions ``to_jaxmarl`` applies to ``env`` (chosen by its innermost env's family)."""
    # The families are imported by name, as the registry does: the library core never imports an env family.
    inner = _innermost(env)
    if _defined_in(inner, _SMAX_MODULE) and isinstance(inner, importlib.import_module(_SMAX_MODULE).SMAX):
        return SMAXConventions(env)
    if _defined_in(inner, _OVERCOOKED_MODULE):
        overcooked = importlib.import_module(_OVERCOOKED_MODULE)
        if isinstance(inner, overcooked.Overcooked):
            return OvercookedConventions(env)
    hanabi = _defined_in(inner, _HANABI_MODULE)
    if hanabi and isinstance(inner, importlib.import_module(_HANABI_MODULE).Hanabi):
        return HanabiConventions(env)
    if _defined_in(inner, _MPE_PACKAGE):
        if isinstance(inner, importlib.import_module(f"{_MPE_PACKAGE}.simple_facmac").SimpleFacmac):
            return FacmacConventions(env)
        if isinstance(inner, importlib.import_module(f"{_MPE_PACKAGE}.base").MPEEnv):
            return MPEConventions(env)
    return Conventions(env)


# ---------------------------------------------------------------------------------------------------
# The adapter
# ---------------------------------------------------------------------------------------------------


@struct.dataclass
class JaxMARLState:
    """The wrapped env's state plus what JaxMARL reads from a state alone: ``get_obs`` needs the
    observations, ``get_avail_actions`` the action masks and SMAX scripts the world state, which suite
    envs return only in TimeSteps. ``obs`` is as presented (see ``Conventions.group_obs``)."""

    env_state: Any
    obs: GroupDict
    action_mask: GroupDict
    world_state: Array | None = None
    """``[state_size]`` as ``obs["world_state"]`` presents it; None for envs without a world state."""

    @property
    def p_pos(self) -> Array:
        """MPE: entity positions ``[num_entities, 2]``, agents then landmarks (JaxMARL's field name)."""
        return _inner_state(self.env_state, "pos").pos

    @property
    def p_vel(self) -> Array:
        """MPE: entity velocities ``[num_entities, 2]`` (JaxMARL's field name)."""
        return _inner_state(self.env_state, "vel").vel


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

    ``conventions`` (chosen from the env's family by ``conventions_for``) says how observations, rewards
    and the world state are presented; its ``attributes()`` (``num_allies``, ``num_entities``, ...) and
    ``max_steps`` read as attributes of the adapter, as they would of JaxMARL's env.
    """

    def __init__(self, env: MultiAgentEnv, params: EnvParams | None = None, extra_info: bool = False) -> None:
        require_single_env(env, "to_jaxmarl")
        self.env = env
        self.params = env.default_params if params is None else params
        self.extra_info = bool(extra_info)
        self.agents: list[str] = list(env.agents)
        self.num_agents = len(self.agents)
        self.conventions = conventions_for(env)
        self._attributes = self.conventions.attributes()
        max_steps = getattr(self.params, "max_steps", None)
        if isinstance(max_steps, int) and not isinstance(max_steps, bool):
            self._attributes.setdefault("max_steps", max_steps)
        self._slots = {
            name: (group, index) for group, names in env.groups.items() for index, name in enumerate(names)
        }
        # One space object per group: JaxMARL spaces are stateless, so agents of a group may share it.
        obs_spaces = {group: jaxmarl_space(self.conventions.observation_space(group)) for group in env.groups}
        for space in obs_spaces.values():
            space.shape = self.conventions.obs_space_shape(space.shape)
        act_spaces = {group: jaxmarl_space(env.action_space(group)) for group in env.groups}
        self.observation_spaces = {name: obs_spaces[group] for name, (group, _) in self._slots.items()}
        self.action_spaces = {name: act_spaces[group] for name, (group, _) in self._slots.items()}

    # -- static structure ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The wrapped env's class name (JaxMARL scripts match on it, e.g. ``"smax" in env.name``)."""
        return type(_innermost(self.env)).__name__

    def __getattr__(self, name: str) -> Any:
        # Reached only for names not found normally: the family's JaxMARL attributes (Conventions). Reads
        # __dict__ directly, so a half-built object (copy, unpickling) cannot recurse into here.
        attributes = self.__dict__.get("_attributes", {})
        if name in attributes:
            return attributes[name]
        inner = self.__dict__.get("env")
        of = "" if inner is None else f" of {type(_innermost(inner)).__name__}"
        raise AttributeError(f"{type(self).__name__}{of} has no attribute {name!r}")

    @functools.cached_property
    def state_size(self) -> int:
        """Length of ``obs["world_state"]`` (JaxMARL's name); AttributeError for an env without one."""
        shape = jax.eval_shape(lambda key: self._fresh_state(key).world_state, jax.random.PRNGKey(0))
        if shape is None:
            raise AttributeError(f"{self.name} has no world state, so no state_size")
        return int(np.prod(shape.shape))

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
        always = {key: self._per_agent(value) for key, value in self.conventions.info(timestep).items()}
        if not self.extra_info:
            return always
        return {
            **timestep.info,
            **always,
            "final_obs": self._per_agent(self.conventions.group_obs(timestep.obs)),
            "terminated": self._per_agent(timestep.terminated),
            "truncated": self._per_agent(timestep.truncated),
        }

    # -- the JaxMARL API -----------------------------------------------------------------------------------

    def _state(self, env_state: Any, timestep: TimeStep) -> JaxMARLState:
        conventions = self.conventions
        obs = conventions.group_obs(timestep.obs)
        return JaxMARLState(env_state, obs, timestep.action_mask, conventions.world_state(timestep))

    def _fresh_state(self, key: Array) -> JaxMARLState:
        return self._state(*self.env.reset(key, self.params))

    def _observe(self, state: JaxMARLState) -> dict[str, Array]:
        obs = dict(self.get_obs(state))
        if state.world_state is not None:
            obs["world_state"] = state.world_state
        return obs

    @functools.partial(jax.jit, static_argnums=0)
    def reset(self, key: Array) -> tuple[AgentDict, JaxMARLState]:
        """Start an episode: ``(obs, state)`` with ``obs`` keyed by agent (plus ``"world_state"`` where the
        env has one, as JaxMARL's SMAX)."""
        state = self._fresh_state(key)
        return self._observe(state), state

    def step_env(
        self, key: Array, state: JaxMARLState, actions: Mapping[str, Array]
    ) -> tuple[AgentDict, JaxMARLState, AgentDict, dict[str, Array], dict[str, Any]]:
        """One transition without auto-reset, with ``key`` passed to the env's ``step`` unchanged."""
        env_state, timestep = self.env.step(key, state.env_state, self._to_groups(actions), self.params)
        next_state = self._state(env_state, timestep)
        reward = self.conventions.rewards(state.env_state, env_state, timestep)
        return (
            self._observe(next_state),
            next_state,
            self._per_agent(reward),
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
        return self._observe(next_state), next_state, reward, dones, info

    def get_obs(self, state: JaxMARLState) -> AgentDict:
        """The observations of ``state``, keyed by agent (``reset`` and ``step`` add the world state)."""
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
