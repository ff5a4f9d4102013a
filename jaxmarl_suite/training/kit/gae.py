"""Generalised advantage estimation that tells termination from truncation, and the bootstrap values it (and
Q-learning's targets) needs: each step's value of the observation it led to, computed afresh only where an
episode was truncated or the rollout ends (``final_values``).

Written once here and tested against a plain Python loop, because copies of GAE drift.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_suite.training.kit import loops

Array = jax.Array


def reverse_scan(step: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any,
                 unroll: int | None = None) -> Any:
    """The outputs of ``lax.scan(step, init, xs, reverse=True)``, rolled on the CPU and unrolled
    ``loops.ACCELERATOR_UNROLL`` steps elsewhere (``kit.loops.scan``); an explicit ``unroll`` applies
    everywhere."""
    return loops.scan(step, init, xs, reverse=True, unroll=unroll)[1]


def gae(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    episode_end: Array,
    gamma: float | Array,
    gae_lambda: float | Array,
) -> tuple[Array, Array]:
    """Advantages and value targets for a rollout, time on the leading axis (``[T, ...]`` everywhere).

    Args:
        rewards: ``r_t``, the reward of the transition from step ``t``.
        values: ``V(s_t)``.
        next_values: ``V(s_{t+1})`` where ``s_{t+1}`` is the observation the transition *led to*, before
            any auto-reset (``info["final_obs"]``). On truncation this is the bootstrap value.
        terminated: the transition ended the game; nothing is bootstrapped past it.
        episode_end: terminated or truncated; the advantage recursion stops here.
        gamma: discount.
        gae_lambda: GAE's lambda.

    Returns:
        ``(advantages, targets)`` with ``targets = advantages + values``.
    """
    not_terminated = 1.0 - terminated.astype(values.dtype)
    continues = 1.0 - episode_end.astype(values.dtype)
    deltas = rewards + gamma * next_values * not_terminated - values

    def backwards(next_advantage: Array, step: tuple[Array, Array]) -> tuple[Array, Array]:
        delta, carry_on = step
        advantage = delta + gamma * gae_lambda * carry_on * next_advantage
        return advantage, advantage

    advantages = reverse_scan(backwards, jnp.zeros_like(values[-1]), (deltas, continues))
    return advantages, advantages + values


def team_gae(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    episode_end: Array,
    playing: Array,
    gamma: float | Array,
    gae_lambda: float | Array,
) -> tuple[Array, Array]:
    """One GAE per team on ``[T, ..., n]`` per-agent arrays (last axis the team's agents), handed to
    every agent: each is credited its team's return until the team's last agent is done.

    The team's reward and value are the means over the agents ``playing`` (in the episode when the step
    began); its bootstrap value is the mean over those whose step did not terminate them. The team is
    terminated (ended) when every agent that was playing is. With a shared team reward this is the
    cooperative objective of MAPPO on SMAC, where an agent that dies still counts the win that follows.
    """
    going_on = playing & ~terminated

    def mean(x: Array, weight: Array) -> Array:
        weight = weight.astype(x.dtype)
        return (x * weight).sum(-1) / jnp.maximum(weight.sum(-1), 1.0)

    advantages, targets = gae(mean(rewards, playing), mean(values, playing), mean(next_values, going_on),
                              (terminated | ~playing).all(-1), (episode_end | ~playing).all(-1), gamma,
                              gae_lambda)
    return (jnp.broadcast_to(advantages[..., None], rewards.shape),
            jnp.broadcast_to(targets[..., None], rewards.shape))


def final_obs_rows(num_steps: int, max_steps: int) -> int:
    """At most how many steps of one ``num_steps``-step sequence need their own value of
    ``info["final_obs"]`` (``final_values``): the last, and each step an episode was truncated at.
    Episodes truncate only at ``max_steps`` (a conformance check), so truncations come ``max_steps``
    steps apart."""
    return 1 + -(-(num_steps - 1) // max(int(max_steps), 1))


def final_values(value_fn: Callable[[Any, Array, Array, Array], Array], params: Any, values: Array,
                 hiddens: Array, final_obs: Array, truncated: Array, rows_per_sequence: int) -> Array:
    """The values of the observation each step led to (``info["final_obs"]``), shaped like ``values``.

    ``values`` (``[T, M, ...]``) are the same net's values along the sequence, from the states it carried.
    Where the episode went on, the next observation is the sequence's next one, valued from the same
    recurrent state, so ``values[t + 1]`` is that value already. The net runs once more,
    ``value_fn(params, hidden [R, ...], obs [1, R, ...], starts [1, R, ...]) -> [1, R, ...]`` from
    ``hiddens`` (the state after each step, ``[T, M, ...]``) on ``final_obs`` (``[T, M, ...]``), only where
    that is not so: at the last step and where an episode was truncated (``truncated [T, M]``). Those
    positions are gathered into ``rows_per_sequence * M`` rows (``final_obs_rows``), a small fraction of
    ``T * M`` (on MPE with 128-step rollouts, 7 of 128). Where an episode terminated the value is never
    used (nothing bootstraps there) and is the next episode's first value.
    """
    steps, batch = truncated.shape
    size = rows_per_sequence * batch

    def flat(x: Array) -> Array:
        return x.reshape(steps * batch, *x.shape[2:])

    if size >= steps * batch:  # every step gets its own pass: nothing to gather
        positions = jnp.arange(steps * batch)
    else:
        need = truncated.at[-1].set(True).reshape(-1)
        positions = jnp.flatnonzero(need, size=size, fill_value=steps * batch)  # past the end: dropped
    obs = jnp.take(flat(final_obs), positions, axis=0, mode="clip")[None]
    hidden = jnp.take(flat(hiddens), positions, axis=0, mode="clip")
    fresh = value_fn(params, hidden, obs, jnp.zeros(obs.shape[:2] + values.shape[2:3], bool))
    shifted = jnp.concatenate([values[1:], values[-1:]])
    return flat(shifted).at[positions].set(fresh[0], mode="drop").reshape(values.shape)
