"""Generalised advantage estimation that tells termination from truncation.

Written once here and tested against a plain Python loop, because copies of GAE drift.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


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

    _, advantages = jax.lax.scan(backwards, jnp.zeros_like(values[-1]), (deltas, continues), reverse=True)
    return advantages, advantages + values
