"""Random-policy rollouts: throughput measurement and a rendered episode, shared by the CLI and notebooks."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_suite.core.registry import make
from jaxmarl_suite.render.episode import render_episode
from jaxmarl_suite.render.gif import check_gif_options, write_gif
from jaxmarl_suite.wrappers.auto_reset import AutoReset
from jaxmarl_suite.wrappers.episode_stats import EpisodeStats

Array = jax.Array


@dataclass(frozen=True)
class RolloutReport:
    """What a random rollout measured."""

    env_id: str
    num_envs: int
    num_steps: int
    compile_s: float
    run_s: float
    mean_episode_return: float
    """Mean per-agent return over the episodes that finished."""
    episodes: int
    gif: Path | None

    @property
    def steps_per_second(self) -> float:
        """Env steps per second (one env step = every agent acting once), compile excluded."""
        return self.num_envs * self.num_steps / self.run_s


def random_rollout(
    env_id: str, num_envs: int, num_steps: int, seed: int = 0, **env_kwargs: Any
) -> RolloutReport:
    """Run ``num_envs`` auto-resetting envs for ``num_steps`` random legal steps in one compiled scan."""
    env = EpisodeStats(AutoReset(make(env_id, num_envs=num_envs, **env_kwargs)))

    def run(key: Array) -> tuple[Array, Array]:
        state, timestep = env.reset(key)

        def body(carry: Any, step_key: Array) -> tuple[Any, tuple[Array, Array]]:
            state, timestep = carry
            action_key, env_key = jax.random.split(step_key)
            state, timestep = env.step(env_key, state, env.sample_actions(action_key, timestep.action_mask))
            per_agent = jnp.concatenate([r for r in timestep.info["episode_return"].values()], axis=-1)
            done = timestep.info["episode_done"]
            return (state, timestep), (jnp.sum(jnp.where(done, per_agent.mean(-1), 0.0)), jnp.sum(done))

        _, (returns, dones) = jax.lax.scan(body, (state, timestep), jax.random.split(key, num_steps))
        return returns.sum(), dones.sum()

    compiled_start = time.perf_counter()
    runner = jax.jit(run).lower(jax.random.PRNGKey(seed)).compile()
    compile_s = time.perf_counter() - compiled_start
    start = time.perf_counter()
    total_return, episodes = jax.block_until_ready(runner(jax.random.PRNGKey(seed)))
    run_s = time.perf_counter() - start
    episodes_n = int(episodes)
    mean_return = float(total_return) / max(episodes_n, 1)
    return RolloutReport(env_id, num_envs, num_steps, compile_s, run_s, mean_return, episodes_n, None)


def render_random_episode(
    env_id: str, path: str | Path, num_steps: int | None = None, seed: int = 0, fps: float | None = None,
    size: int | None = None,
) -> Path:
    """Render one random-policy episode to a GIF, its frames captioned with the step and the running
    per-agent mean return. All frames come from one jitted call; the GIF stops where the episode ends.

    ``fps`` defaults to the env's ``render_fps``, so the GIF plays at the family's stated speed; ``size``
    (the frame's shorter side in pixels) to ``write_gif``'s legible default.
    """
    env = make(env_id)
    frame_rate = float(env.render_fps if fps is None else fps)
    check_gif_options(size, frame_rate)  # before compiling anything

    def act(carry: None, timestep: Any, starts: Array, key: Array) -> tuple[None, Any]:
        return carry, env.sample_actions(key, timestep.action_mask)

    episode = render_episode(env, act, None, jax.random.PRNGKey(seed), num_steps)
    return write_gif(path, episode.frames, frame_rate, size=size, returns=episode.returns)
