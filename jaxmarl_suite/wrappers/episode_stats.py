"""``EpisodeStats``: running and completed-episode returns and lengths, reported in ``info``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_suite.core.env import State
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.wrappers.base import Wrapper, broadcast_to_leaf, episode_done

Array = jax.Array


@struct.dataclass
class EpisodeStatsState:
    """The wrapped env's state plus running and last-completed episode statistics."""

    env_state: State
    running_return: GroupDict
    running_length: Array
    episode_return: GroupDict
    episode_length: Array


class EpisodeStats(Wrapper):
    """Adds to ``info`` the statistics of the most recently *completed* episode of each env:

    - ``episode_return``: ``{group: [*batch, n]}`` undiscounted return of each agent;
    - ``episode_group_return``: ``{group: [*batch]}`` the team return, summed over the group's agents;
    - ``episode_length``: ``[*batch]`` steps in that episode;
    - ``episode_done``: ``[*batch]`` True on the step where an episode ended.

    Before the first episode ends the statistics are zero; average them where ``episode_done``.
    Place it outside ``AutoReset`` (``EpisodeStats(AutoReset(env))``). ``episode_return`` is per
    agent, not scaled by the number of agents (JaxMARL's ``MPELogWrapper`` multiplies by it).
    """

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[EpisodeStatsState, TimeStep]:
        """Reset the env and zero the statistics."""
        env_state, timestep = self.env.reset(key, params)
        zeros = jax.tree.map(jnp.zeros_like, timestep.reward)
        length = jnp.zeros(episode_done(timestep).shape, jnp.int32)
        state = EpisodeStatsState(env_state, zeros, length, zeros, length)
        return state, self._report(timestep, state, jnp.zeros_like(length, bool))

    def step(
        self, key: Array, state: EpisodeStatsState, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[EpisodeStatsState, TimeStep]:
        """Step and update the statistics."""
        env_state, timestep = self.env.step(key, state.env_state, actions, params)
        done = episode_done(timestep)
        running_return = jax.tree.map(jnp.add, state.running_return, timestep.reward)
        running_length = state.running_length + 1

        def on_done(new: Array, old: Array) -> Array:
            return jnp.where(broadcast_to_leaf(done, old), new, old)

        state = EpisodeStatsState(
            env_state=env_state,
            running_return=jax.tree.map(lambda r: on_done(jnp.zeros_like(r), r), running_return),
            running_length=on_done(jnp.zeros_like(running_length), running_length),
            episode_return=jax.tree.map(on_done, running_return, state.episode_return),
            episode_length=on_done(running_length, state.episode_length),
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
        return timestep._replace(info=info)

    def select(self, pick_first: Array, first: EpisodeStatsState, second: EpisodeStatsState) -> State:
        """Per-env selection of the inner state; statistics are selected alongside it."""
        del pick_first, first, second
        raise TypeError("EpisodeStats must be the outer wrapper: put AutoReset inside it")

    def render(self, state: EpisodeStatsState, params: EnvParams | None = None, **kwargs: Any) -> Array:
        """Render the wrapped env's state (the statistics are not drawn)."""
        return self.env.render(state.env_state, params, **kwargs)
