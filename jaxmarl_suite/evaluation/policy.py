"""Rollouts of a trained policy: ``evaluate_policy`` (returns and a 95% CI) and ``render_policy`` (a GIF).

Both take a baseline module (``ippo``, ``mappo``, ...), its ``Config`` and one run's policy parameters.
The policy acts through ``module.make_policy(config)`` on the same wrapped env layout it trained on.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

# Two-sided 97.5% quantiles of Student's t for small samples; beyond 30 the normal's 1.96 is within 2%.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}


def mean_ci(values: np.ndarray) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean and its two-sided 95% Student-t confidence interval."""
    values = np.asarray(values, np.float64)
    n = values.size
    mean = float(values.mean())
    if n < 2:
        return mean, math.nan, math.nan
    dof = n - 1
    quantile = next((q for d, q in sorted(_T975.items()) if d >= dof), 1.96)
    half = quantile * float(values.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


class EvalReport(NamedTuple):
    """Per-episode mean per-agent returns and their summary."""

    returns: np.ndarray
    mean: float
    ci_low: float
    ci_high: float

    def __str__(self) -> str:
        return (f"{self.returns.size} episodes: mean per-agent return {self.mean:.3f} "
                f"(95% CI {self.ci_low:.3f} .. {self.ci_high:.3f})")


def evaluate_policy(
    module: ModuleType, config: Any, params: Any, num_episodes: int, key: Array, deterministic: bool = False
) -> EvalReport:
    """Run ``num_episodes`` envs in parallel until each finishes its first episode, in one compiled scan,
    and return each episode's mean per-agent return."""
    from jaxmarl_suite.training.envs import make_training_env

    if num_episodes < 1:
        raise ValueError(f"episodes: must be >= 1, got {num_episodes}")
    env = make_training_env(config.env_id, num_episodes, config.env_kwargs, config.param_sharing)
    policy = module.make_policy(config)
    max_steps = int(env.default_params.max_steps)

    def run(key: Array) -> tuple[Array, Array]:
        reset_key, key = jax.random.split(key)
        env_state, timestep = env.reset(reset_key)
        hidden = policy.init_hidden(num_episodes)
        starts = jnp.ones((num_episodes,), bool)
        first_return = jnp.zeros((num_episodes,))
        finished = jnp.zeros((num_episodes,), bool)

        def step(carry: Any, step_key: Array) -> tuple[Any, None]:
            env_state, timestep, hidden, starts, first_return, finished = carry
            act_key, env_key = jax.random.split(step_key)
            hidden, actions = policy.act(params, hidden, timestep, starts, act_key, deterministic)
            env_state, timestep = env.step(env_key, env_state, actions)
            done = timestep.info["episode_done"]
            per_agent = jnp.concatenate(list(timestep.info["episode_return"].values()), axis=-1).mean(-1)
            record = done & ~finished
            first_return = jnp.where(record, per_agent, first_return)
            return (env_state, timestep, hidden, done, first_return, finished | done), None

        carry = (env_state, timestep, hidden, starts, first_return, finished)
        carry, _ = jax.lax.scan(step, carry, jax.random.split(key, max_steps + 1))
        return carry[4], carry[5]

    returns, finished = jax.device_get(jax.jit(run)(key))
    if not finished.all():
        raise RuntimeError(f"{int((~finished).sum())} of {num_episodes} episodes did not end within "
                           f"max_steps + 1 = {max_steps + 1} steps")
    mean, low, high = mean_ci(returns)
    return EvalReport(np.asarray(returns), mean, low, high)


def render_policy(
    module: ModuleType, config: Any, params: Any, path: str | Path, key: Array, deterministic: bool = False,
    num_steps: int | None = None,
) -> Path:
    """Render one episode of the policy to a GIF (``episode_frames``) and return its path."""
    from jaxmarl_suite.render.gif import write_gif

    return write_gif(path, episode_frames(module, config, params, key, deterministic, num_steps))


def episode_frames(
    module: ModuleType, config: Any, params: Any, key: Array, deterministic: bool = False,
    num_steps: int | None = None,
) -> np.ndarray:
    """``uint8[T, H, W, 3]`` frames of one episode of the policy, all from one jitted call.

    The rollout has a fixed length (``num_steps``, default the env's ``max_steps``); frames after every
    agent's episode has ended are dropped, so a game that ends early (a SMAX win) does not play on.
    """
    from jaxmarl_suite.core.registry import make
    from jaxmarl_suite.wrappers import FlattenGroups

    env: Any = make(config.env_id, **config.env_kwargs)
    if not env.renders:
        raise ValueError(f"{config.env_id} does not render")
    if config.param_sharing == "all":
        env = FlattenGroups(env)
    policy = module.make_policy(config)
    length = int(num_steps or env.default_params.max_steps)

    def episode(key: Array) -> tuple[Array, Array]:
        reset_key, key = jax.random.split(key)
        env_state, timestep = env.reset(reset_key)

        def step(carry: Any, step_key: Array) -> tuple[Any, Any]:
            env_state, timestep, hidden, starts = carry
            act_key, env_key = jax.random.split(step_key)
            batched = jax.tree.map(lambda x: x[None], timestep)  # the policy expects an env batch axis
            hidden, actions = policy.act(params, hidden, batched, starts, act_key, deterministic)
            env_state, timestep = env.step(env_key, env_state, jax.tree.map(lambda a: a[0], actions))
            ended = jnp.all(jnp.stack([jnp.all(timestep.terminated[g] | timestep.truncated[g])
                                       for g in timestep.terminated]))
            return (env_state, timestep, hidden, jnp.zeros((1,), bool)), (env_state, ended)

        carry = (env_state, timestep, policy.init_hidden(1), jnp.ones((1,), bool))
        _, (states, ended) = jax.lax.scan(step, carry, jax.random.split(key, length))
        states = jax.tree.map(lambda first, rest: jnp.concatenate([first[None], rest]), env_state, states)
        return jax.vmap(env.render)(states), ended

    frames, ended = jax.jit(episode)(key)
    ended = np.asarray(ended)
    # Frame t + 1 shows the state after step t: keep up to the first step that ends the episode.
    last = int(np.argmax(ended)) + 1 if ended.any() else len(ended)
    return np.asarray(frames)[: last + 1]
