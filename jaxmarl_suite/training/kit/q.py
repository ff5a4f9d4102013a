"""The value-based pieces the Q-learning baselines share: acting by masked epsilon-greedy, masked maxima
for targets, Q(lambda) returns over a rollout (PQN), target-network updates, and a flashbax replay buffer
whose memory is checked before anything is allocated.

Written once here, as GAE is, and tested against plain Python (tests/training/test_q.py).
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.training.kit.gae import reverse_scan

Array = jax.Array


def linear_epsilon(step: Array | int, start: float | Array, end: float | Array, decay_steps: int) -> Array:
    """Exploration rate after ``step`` env steps: ``start`` falling linearly to ``end`` over ``decay_steps``,
    then ``end``."""
    progress = jnp.clip(jnp.asarray(step, jnp.float32) / max(decay_steps, 1), 0.0, 1.0)
    return jnp.asarray(start + (end - start) * progress, jnp.float32)


def masked_q(q: Array, mask: Array | None) -> Array:
    """``q`` with illegal actions (``mask`` False) at the dtype's lowest finite value: never the max, and
    finite, so no NaN reaches a gradient. ``mask`` None means every action is legal."""
    if mask is None:
        return q
    return jnp.where(mask, q, jnp.finfo(q.dtype).min)


def greedy_actions(q: Array, mask: Array | None) -> Array:
    """``argmax`` over the last axis among legal actions."""
    return jnp.argmax(masked_q(q, mask), axis=-1)


def max_q(q: Array, mask: Array | None) -> Array:
    """``max`` over the last axis among legal actions (a target's bootstrap)."""
    return jnp.max(masked_q(q, mask), axis=-1)


def epsilon_greedy(key: Array, q: Array, mask: Array | None, epsilon: float | Array) -> Array:
    """Per agent: with probability ``epsilon`` a uniformly random legal action, otherwise the greedy one."""
    explore_key, action_key = jax.random.split(key)
    legal = jnp.ones(q.shape, bool) if mask is None else mask
    random_actions = jax.random.categorical(action_key, jnp.where(legal, 0.0, -jnp.inf), axis=-1)
    explore = jax.random.uniform(explore_key, q.shape[:-1]) < epsilon
    return jnp.where(explore, random_actions, greedy_actions(q, mask))


def q_lambda_returns(
    rewards: Array,
    next_max_q: Array,
    terminated: Array,
    episode_end: Array,
    gamma: float | Array,
    q_lambda: float | Array,
) -> Array:
    """Q(lambda) targets for a rollout, time on the leading axis (``[T, ...]`` everywhere), as PQN uses:

    ``G_t = r_t + gamma * (1 - terminated_t) * ((1 - lambda) * M_t + lambda * (G_{t+1} if the episode goes
    on else M_t))``, where ``M_t`` (``next_max_q``) is the max Q of the observation the transition led to,
    before any auto-reset (``info["final_obs"]``), so truncation bootstraps and termination does not. The
    last step of the rollout bootstraps from its own ``M``. ``lambda = 0`` is the one-step target.
    """
    not_terminated = 1.0 - terminated.astype(next_max_q.dtype)
    continues = 1.0 - episode_end.astype(next_max_q.dtype)

    def backwards(next_return: Array, step: tuple[Array, Array, Array, Array]) -> tuple[Array, Array]:
        reward, bootstrap, alive, carry_on = step
        ahead = carry_on * next_return + (1.0 - carry_on) * bootstrap
        target = reward + gamma * alive * ((1.0 - q_lambda) * bootstrap + q_lambda * ahead)
        return target, target

    return reverse_scan(backwards, next_max_q[-1], (rewards, next_max_q, not_terminated, continues))


def soft_update(target: Any, online: Any, tau: float | Array) -> Any:
    """``tau * online + (1 - tau) * target`` leaf by leaf; ``tau = 1`` copies (a hard update)."""
    return jax.tree.map(lambda t, o: tau * o + (1.0 - tau) * t, target, online)


# ------------------------------------------------------------------------------------------------ replay
def replay_bytes(item: Any, capacity: int) -> int:
    """Bytes a buffer of ``capacity`` items like ``item`` (arrays or ``ShapeDtypeStruct``) holds."""
    per_item = sum(int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(item))
    return per_item * int(capacity)


def free_memory_bytes(device: Any = None) -> int | None:
    """Free memory of ``device`` (default: the first device): the accelerator's allocator limit minus what
    is in use, or the host's available RAM for a CPU. None when neither can be read."""
    device = device or jax.devices()[0]
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_replay_fits(num_bytes: int, flag: str = "buffer_size", device: Any = None,
                      free_bytes: int | None = None, share: float = 0.8) -> None:
    """Raise ``ConfigError`` naming ``flag`` when a buffer of ``num_bytes`` exceeds ``share`` of the
    device's free memory (``free_bytes`` overrides the measurement), before anything compiles: a buffer
    that does not fit would otherwise crash the run partway through."""
    free = free_memory_bytes(device) if free_bytes is None else free_bytes
    if free is None:
        return
    if num_bytes > share * free:
        gib = 2.0**30
        raise ConfigError(
            f"{flag}: the replay buffer needs {num_bytes / gib:.2f} GiB, more than {share:.0%} of the "
            f"{free / gib:.2f} GiB free on {device or jax.devices()[0]}; lower --{flag.replace('_', '-')}")


def make_replay(item: Any, capacity: int, sample_batch_size: int, add_batch_size: int, *,
                min_length: int | None = None, flag: str = "buffer_size",
                free_bytes: int | None = None) -> Any:
    """A flashbax flat buffer of ``capacity`` transitions like ``item``, added ``add_batch_size`` at a time
    (one per env), after ``check_replay_fits``. Returns flashbax's buffer (``init``, ``add``, ``sample``,
    ``can_sample``)."""
    import flashbax as fbx

    check_replay_fits(replay_bytes(item, capacity), flag, free_bytes=free_bytes)
    if capacity < add_batch_size or capacity % add_batch_size:
        raise ConfigError(f"{flag}: must be a positive multiple of the {add_batch_size} envs adding to it, "
                          f"got {capacity}")
    return fbx.make_flat_buffer(max_length=capacity, min_length=min_length or sample_batch_size,
                                sample_batch_size=sample_batch_size, add_batch_size=add_batch_size)
