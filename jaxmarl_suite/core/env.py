"""The environment base classes.

``MultiAgentEnv`` is the per-env contract every environment satisfies (user envs included).
``BatchNativeEnv`` is how built-in envs are written: once, with the env batch as the trailing axis of
every array, so XLA vectorises across envs. Its per-env ``reset``/``step`` are the batch-of-1 case.
See docs/api.md for the semantics.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_suite.core.spaces import Discrete, Space
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep

Array = jax.Array
State = Any


class MultiAgentEnv(abc.ABC):
    """A multi-agent env with agents in groups of identical spaces.

    Subclasses set ``groups`` (ordered ``{group: (agent names...)}``) in ``__init__`` and implement
    ``reset``, ``step``, ``observation_space``, ``action_space`` and ``default_params``.
    The object holds only static structure; all dynamic values live in the state and ``EnvParams``.
    """

    groups: Mapping[str, tuple[str, ...]]
    """Ordered mapping from group name to the names of its agents, in order."""
    reference: str | None = None
    """The reference implementation this env matches transition for transition, if any."""
    render_fps: int = 10
    """Frames per second at which this env's episodes play (GIFs, PettingZoo's ``metadata``)."""
    episodes_end_together: bool = False
    """A speed hint, never a rule: True when envs of a batch that start together end together (a fixed
    horizon and no early end), so ``AutoReset`` computes resets only on the steps where episodes end."""
    cheap_reset: bool = False
    """A speed hint: True when a batch's reset costs about what its step does, so ``AutoReset`` selects a
    fresh start every step even where episodes end together, rather than branching on the CPU, which copies
    the step's observation through the branch (Overcooked V2 without random starts: 1.2M against 0.64M env
    steps/s on cramped_room at batch 4,096 on 2 CPU cores)."""
    costly_reset: bool = False
    """A speed hint: True when a batch's reset costs several of its steps and episodes end on different steps,
    so ``AutoReset`` on the CPU starts only the envs that ended (a few at a time, with the whole batch as
    the fallback) rather than a fresh start for all of them every step (LBF 8x8-2p-2f at batch 4,096 on one
    CPU core: 4.5M against 1.9M env steps/s)."""
    all_actions_legal: bool = False
    """A speed hint: True when every action is legal on every step (the env's action masks are all True),
    so a trainer need neither store nor apply them. The conformance suite checks it where it is set."""
    observation_info: tuple[str, ...] = ()
    """Keys of ``info`` that describe the current observation rather than the transition (SMAX's and
    MA-MuJoCo's ``world_state``): ``AutoReset`` restarts them with the episode, as it does ``obs``, and
    keeps the ended episode's last value in ``info["final_<key>"]``, as it does ``final_obs``."""
    random_reset: bool = True
    """Whether ``reset`` draws the start from its key. False for envs that always start from one state
    (Overcooked's layouts, by default), so conformance does not expect two keys to start differently."""
    social_measures: bool = False
    """Whether episode statistics report the social-dilemma measures (``EpisodeStats``): collective return,
    equality and, from ``info["cooperative_pickups"]``/``info["defecting_pickups"]``, pick-up counts. True
    for the matrix games, Coin Game and STORM; off elsewhere so other envs' metrics stay as they were."""

    @property
    @abc.abstractmethod
    def default_params(self) -> EnvParams:
        """The parameters used when ``params`` is None."""

    @abc.abstractmethod
    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[State, TimeStep]:
        """Start an episode. Returns the state and a TimeStep with zero reward and all flags False."""

    @abc.abstractmethod
    def step(
        self, key: Array, state: State, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[State, TimeStep]:
        """Advance one step. Never resets: wrap with ``AutoReset`` for that."""

    @abc.abstractmethod
    def observation_space(self, group: str) -> Space:
        """The observation space of one agent of ``group``."""

    @abc.abstractmethod
    def action_space(self, group: str) -> Space:
        """The action space of one agent of ``group``."""

    def render(self, state: State, params: EnvParams | None = None) -> Array:
        """An RGB frame ``uint8[H, W, 3]`` of one env's state. Jittable and vmappable where implemented."""
        raise NotImplementedError(f"{type(self).__name__} does not render")

    @property
    def renders(self) -> bool:
        """Whether ``render`` is implemented."""
        return type(self).render is not MultiAgentEnv.render

    @property
    def agents(self) -> tuple[str, ...]:
        """Every agent name, group by group, in order."""
        return tuple(name for names in self.groups.values() for name in names)

    @property
    def num_agents(self) -> int:
        """Total number of agents over all groups."""
        return len(self.agents)

    def group_size(self, group: str) -> int:
        """Number of agents in ``group``."""
        return len(self.groups[group])

    def select(self, pick_first: Array, first: State, second: State) -> State:
        """``first`` if ``pick_first`` (a scalar bool for one env) else ``second``, leaf by leaf."""
        return jax.tree.map(lambda a, b: jnp.where(pick_first, a, b), first, second)

    def sample_actions(self, key: Array, action_mask: GroupDict | None = None) -> GroupDict:
        """Uniformly random legal actions for one env, ``{group: [n, *action_shape]}``."""
        keys = jax.random.split(key, len(self.groups))
        actions = {}
        for group_key, group in zip(keys, self.groups, strict=True):
            space = self.action_space(group)
            mask = None
            if action_mask is not None and isinstance(space, Discrete):
                mask = action_mask.get(group)
            actions[group] = space.sample(group_key, (self.group_size(group),), mask)
        return actions

    def __repr__(self) -> str:
        groups = ", ".join(f"{g}: {len(n)}" for g, n in self.groups.items())
        return f"{type(self).__name__}({groups})"


def _add_batch_axis(tree: Any) -> Any:
    return jax.tree.map(lambda x: jnp.expand_dims(x, -1), tree)


def _drop_batch_axis(tree: Any) -> Any:
    return jax.tree.map(lambda x: jnp.squeeze(x, -1), tree)


def per_env(keys: Array, draw: Callable[[Array], Any]) -> Any:
    """``draw`` run on every env's key (``keys[i]`` for env ``i``), the batch axis moved last: how a
    ``BatchNativeEnv`` draws per-env randomness so a batch equals the same envs one by one."""
    return jax.tree.map(lambda x: jnp.moveaxis(x, 0, -1), jax.vmap(draw)(keys))


class BatchNativeEnv(MultiAgentEnv):
    """An env written once for a batch of envs, with the batch as the **last** axis of every array.

    Subclasses implement ``reset_batch`` and ``step_batch``. Inside them, state arrays, actions and
    TimeStep fields all end in the batch axis (``obs[group]`` is ``[n, *obs_shape, B]``). Per-env
    randomness is drawn from ``keys[i]`` for env ``i`` (vmap the draw over keys, then move the batch
    axis last), so a batch of envs equals the same envs stepped one by one, bit for bit in intent.
    """

    @abc.abstractmethod
    def reset_batch(self, keys: Array, params: EnvParams) -> tuple[State, TimeStep]:
        """Reset ``B = keys.shape[0]`` envs. Returns batch-minor state and TimeStep."""

    @abc.abstractmethod
    def step_batch(
        self, keys: Array, state: State, actions: GroupDict, params: EnvParams
    ) -> tuple[State, TimeStep]:
        """Step ``B`` envs; ``actions[group]`` is ``[n, *action_shape, B]``."""

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[State, TimeStep]:
        """Per-env reset: the batch-of-1 case of ``reset_batch``."""
        params = self.default_params if params is None else params
        state, timestep = self.reset_batch(key[None], params)
        return _drop_batch_axis(state), _drop_batch_axis(timestep)

    def step(
        self, key: Array, state: State, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[State, TimeStep]:
        """Per-env step: the batch-of-1 case of ``step_batch``."""
        params = self.default_params if params is None else params
        state, timestep = self.step_batch(key[None], _add_batch_axis(state), _add_batch_axis(actions), params)
        return _drop_batch_axis(state), _drop_batch_axis(timestep)
