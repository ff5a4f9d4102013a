"""One episode played and rendered in one jitted call, with the running return each frame's caption shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


class RenderedEpisode(NamedTuple):
    """The frames of one episode and, per frame, the return so far."""

    frames: np.ndarray
    """``uint8[T, H, W, 3]``: frame 0 is the reset state, frame ``t`` the state after step ``t``."""
    returns: np.ndarray
    """``float32[T]``: the per-agent mean of the rewards of steps ``1..t`` (0 at the reset), so the last
    frame's value is the episode's return as training's ``return_mean`` counts it."""


def render_episode(
    env: Any, act: Callable[[Any, Any, Array, Array], tuple[Any, Any]], carry: Any, key: Array,
    num_steps: int | None = None,
) -> RenderedEpisode:
    """Play one episode of ``env`` (no auto-reset; one env, batched as a batch of 1 or not) for at most
    ``num_steps`` steps (default the env's ``max_steps``) and render it, all in one jitted call.

    ``act(carry, timestep, starts, key) -> (carry, actions)`` picks the actions (``starts``: ``bool[1]``,
    True on the first step only). Frames after the step that ends every agent's episode are dropped, so a
    game that ends early (a SMAX win) does not play on; they are not rendered either, since each frame is
    drawn inside the loop only while the episode runs.
    """
    length = int(num_steps or env.default_params.max_steps)

    def episode(key: Array) -> tuple[Array, Array, Array]:
        reset_key, key = jax.random.split(key)
        env_state, timestep = env.reset(reset_key)
        first = env.render(env_state)

        def step(carry: Any, step_key: Array) -> tuple[Any, tuple[Array, Array, Array]]:
            env_state, timestep, act_carry, starts, over = carry
            act_key, env_key = jax.random.split(step_key)
            act_carry, actions = act(act_carry, timestep, starts, act_key)
            env_state, timestep = env.step(env_key, env_state, actions)
            ended = jnp.all(jnp.stack([jnp.all(timestep.terminated[g] | timestep.truncated[g])
                                       for g in timestep.terminated]))
            reward = jnp.concatenate([r.reshape(-1) for r in timestep.reward.values()]).mean()
            frame = jax.lax.cond(over, lambda: jnp.zeros_like(first), lambda: env.render(env_state))
            carry = (env_state, timestep, act_carry, jnp.zeros((1,), bool), over | ended)
            return carry, (frame, reward, ended)

        init = (env_state, timestep, carry, jnp.ones((1,), bool), jnp.array(False))
        _, (frames, rewards, ended) = jax.lax.scan(step, init, jax.random.split(key, length))
        returns = jnp.concatenate([jnp.zeros((1,)), jnp.cumsum(rewards)])
        return jnp.concatenate([first[None], frames]), returns, ended

    frames, returns, ended = jax.device_get(jax.jit(episode)(key))
    # Frame t + 1 shows the state after step t: keep up to the first step that ends the episode.
    last = int(np.argmax(ended)) + 1 if ended.any() else len(ended)
    return RenderedEpisode(np.asarray(frames)[: last + 1], np.asarray(returns, np.float32)[: last + 1])
