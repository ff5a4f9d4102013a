"""Plumbing shared by the PPO-family baselines (``ippo.py``, ``mappo.py``): the ``Trainer`` and ``Policy``
interfaces the runner calls, the annealed optimizer, and the divisor hint for config errors.

The algorithm itself (rollout, GAE call, loss, update) stays in each baseline file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

Array = jax.Array


class Policy(NamedTuple):
    """Acting with trained parameters (used by rollouts, ``eval`` and ``render``)."""

    init_hidden: Callable[[int], dict[str, Array]]
    """``num_envs -> {group: [num_envs, n, H]}``."""
    act: Callable[..., tuple[dict[str, Array], dict[str, Array]]]
    """``(params, hidden, timestep, starts, key, deterministic) -> (hidden, env actions)``."""


class Trainer(NamedTuple):
    """``init(key, hparams) -> runner`` and ``update(runner, hparams) -> (runner, metrics)``, both pure.

    The runner state and ``HParams`` types are the baseline's own.
    """

    init: Callable[[Array, Any], Any]
    update: Callable[[Any, Any], tuple[Any, dict[str, Array]]]
    env: Any


def annealed_adam(
    lr: float | Array,
    max_grad_norm: float | Array,
    *,
    anneal_lr: bool,
    num_updates: int,
    steps_per_update: int,
) -> optax.GradientTransformation:
    """Global-norm clipping then Adam (eps 1e-5), the learning rate decaying linearly to zero over
    ``num_updates`` updates of ``steps_per_update`` optimizer steps each when ``anneal_lr``.

    The rate drops once per update, not per minibatch, so every minibatch of an update sees the same one.
    """

    def learning_rate(count: ArrayLike) -> Array:
        progress = (jnp.asarray(count) // steps_per_update) / num_updates
        return jnp.asarray(lr * (1.0 - progress) if anneal_lr else lr)

    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(learning_rate, eps=1e-5))


def divisors(n: int) -> list[int]:
    """The first 12 divisors of ``n``: the allowed values quoted when ``num_minibatches`` does not divide."""
    return [d for d in range(1, n + 1) if n % d == 0][:12]
