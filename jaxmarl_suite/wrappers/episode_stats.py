"""``EpisodeStats``: running and completed-episode returns and lengths, reported in ``info``, and for
social dilemmas (``env.social_measures``) the measures those fields report."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_suite.core.env import State
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.wrappers.base import Wrapper, broadcast_to_leaf, episode_done

Array = jax.Array

PICKUP_KEYS = ("cooperative_pickups", "defecting_pickups")
"""Per-step, per-agent counts a social-dilemma env may put in ``info``; summed over each episode."""


@struct.dataclass
class EpisodeStatsState:
    """The wrapped env's state plus running and last-completed episode statistics."""

    env_state: State
    running_return: GroupDict
    running_length: Array
    episode_return: GroupDict
    episode_length: Array
    running_pickups: dict[str, Array] = struct.field(default_factory=dict)
    episode_pickups: dict[str, Array] = struct.field(default_factory=dict)


class EpisodeStats(Wrapper):
    """Adds to ``info`` the statistics of the most recently *completed* episode of each env:

    - ``episode_return``: ``{group: [*batch, n]}`` undiscounted return of each agent;
    - ``episode_group_return``: ``{group: [*batch]}`` the team return, summed over the group's agents;
    - ``episode_length``: ``[*batch]`` steps in that episode;
    - ``episode_done``: ``[*batch]`` True on the step where an episode ended.

    For envs with ``social_measures`` (matrix games, Coin Game, STORM) also:

    - ``episode_collective_return``: ``[*batch]`` the sum of every agent's return;
    - ``episode_equality``: ``[*batch]`` one minus the Gini coefficient of the agents' returns,
      ``1 - sum_ij |R_i - R_j| / (2 n sum_i R_i)`` (Perolat et al., 2017); NaN when the returns sum to zero
      or less, where the coefficient means nothing;
    - ``episode_cooperative_pickups`` / ``episode_defecting_pickups``: ``[*batch, n]`` each agent's pick-ups
      of each kind over the episode, summed from the env's per-step ``info`` counts of those names.

    Before the first episode ends the statistics are zero; average them where ``episode_done``.
    Place it outside ``AutoReset`` (``EpisodeStats(AutoReset(env))``). ``episode_return`` is per
    agent, not scaled by the number of agents (JaxMARL's ``MPELogWrapper`` multiplies by it).
    """

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[EpisodeStatsState, TimeStep]:
        """Reset the env and zero the statistics."""
        env_state, timestep = self.env.reset(key, params)
        zeros = jax.tree.map(jnp.zeros_like, timestep.reward)
        length = jnp.zeros(episode_done(timestep).shape, jnp.int32)
        pickups = {k: jnp.zeros_like(timestep.info[k], jnp.float32) for k in self._pickup_keys(timestep)}
        state = EpisodeStatsState(env_state, zeros, length, zeros, length, pickups, pickups)
        return state, self._report(timestep, state, jnp.zeros_like(length, bool))

    def step(
        self, key: Array, state: EpisodeStatsState, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[EpisodeStatsState, TimeStep]:
        """Step and update the statistics."""
        env_state, timestep = self.env.step(key, state.env_state, actions, params)
        done = episode_done(timestep)
        running_return = jax.tree.map(jnp.add, state.running_return, timestep.reward)
        running_length = state.running_length + 1
        running_pickups = {k: v + timestep.info[k] for k, v in state.running_pickups.items()}

        def on_done(new: Array, old: Array) -> Array:
            return jnp.where(broadcast_to_leaf(done, old), new, old)

        state = EpisodeStatsState(
            env_state=env_state,
            running_return=jax.tree.map(lambda r: on_done(jnp.zeros_like(r), r), running_return),
            running_length=on_done(jnp.zeros_like(running_length), running_length),
            episode_return=jax.tree.map(on_done, running_return, state.episode_return),
            episode_length=on_done(running_length, state.episode_length),
            running_pickups={k: on_done(jnp.zeros_like(v), v) for k, v in running_pickups.items()},
            episode_pickups=jax.tree.map(on_done, running_pickups, state.episode_pickups),
        )
        return state, self._report(timestep, state, done)

    def _report(self, timestep: TimeStep, state: EpisodeStatsState, done: Array) -> TimeStep:
        info = {
            **timestep.info,
            "episode_return": state.episode_return,
            "episode_group_return": {g: jnp.sum(r, axis=-1) for g, r in state.episode_return.items()},
            "episode_length": state.episode_length,
            "episode_done": done,
        }
        if self.env.social_measures:
            returns = jnp.concatenate(list(state.episode_return.values()), axis=-1)
            info["episode_collective_return"] = returns.sum(-1)
            info["episode_equality"] = equality(returns)
            info.update({f"episode_{k}": v for k, v in state.episode_pickups.items()})
        return timestep._replace(info=info)

    def _pickup_keys(self, timestep: TimeStep) -> tuple[str, ...]:
        return tuple(k for k in PICKUP_KEYS if k in timestep.info) if self.env.social_measures else ()

    def select(self, pick_first: Array, first: EpisodeStatsState, second: EpisodeStatsState) -> State:
        """Per-env selection of the inner state; statistics are selected alongside it."""
        del pick_first, first, second
        raise TypeError("EpisodeStats must be the outer wrapper: put AutoReset inside it")

    def render(self, state: EpisodeStatsState, params: EnvParams | None = None, **kwargs: Any) -> Array:
        """Render the wrapped env's state (the statistics are not drawn)."""
        return self.env.render(state.env_state, params, **kwargs)


def equality(returns: Array) -> Array:
    """One minus the Gini coefficient of ``returns`` (``[..., n]`` per agent): 1 when all are equal, towards 0
    when one agent takes everything; NaN where the returns sum to zero or less."""
    total = returns.sum(-1)
    spread = jnp.abs(returns[..., :, None] - returns[..., None, :]).sum((-2, -1))
    gini = spread / (2 * returns.shape[-1] * jnp.where(total > 0, total, 1.0))
    return jnp.where(total > 0, 1.0 - gini, jnp.nan)
