"""Generalised advantage estimation that tells termination from truncation.

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
