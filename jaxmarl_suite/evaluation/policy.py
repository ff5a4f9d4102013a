"""Rollouts of a trained policy: ``evaluate_policy`` (returns and a 95% CI) and ``render_policy`` (a GIF).

Both take a baseline module (``ippo``, ``mappo``, ...), its ``Config`` and one run's policy parameters.
The policy acts through ``module.make_policy(config, env)`` on ``module.make_env(config, n)``: the env
stack it trained on (without resets for a GIF, so the last frame is the episode's last state).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.evaluation.stats import Interval, wilson_interval
from jaxmarl_suite.render.episode import RenderedEpisode, render_episode

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
    """Per-episode mean per-agent returns (and wins, where the env has a winner) and their summary."""

    returns: np.ndarray
    mean: float
    ci_low: float
    ci_high: float
    wins: np.ndarray | None = None
    """Per episode, whether the team won (``info["won"]``); None for envs without a winner (MPE)."""

    @property
    def win_rate(self) -> Interval | None:
        """The fraction of episodes won with its 95% Wilson interval; None for envs without a winner."""
        if self.wins is None:
            return None
        return wilson_interval(int(np.sum(self.wins)), int(np.size(self.wins)))

    def __str__(self) -> str:
        text = (f"{self.returns.size} episodes: mean per-agent return {self.mean:.3f} "
                f"(95% CI {self.ci_low:.3f} .. {self.ci_high:.3f}, Student t)")
        wins = self.win_rate
        if wins is not None:
            text += f"; win rate {wins.point:.3f} (95% CI {wins.low:.3f} .. {wins.high:.3f}, Wilson)"
        return text


def _first_episodes_program(env: Any, num_episodes: int) -> Callable[..., tuple[Array, Array, Array]]:
    """``run(act, carry, key) -> (returns, won, finished)``: ``num_episodes`` auto-resetting envs stepped
    until each has finished its first episode, as one scan (``first_episodes`` describes it)."""
    max_steps = int(env.default_params.max_steps)

    def run(act: Callable[[Any, Any, Array, Array], tuple[Any, Any]], carry: Any,
            key: Array) -> tuple[Array, Array, Array]:
        reset_key, key = jax.random.split(key)
        env_state, timestep = env.reset(reset_key)
        starts = jnp.ones((num_episodes,), bool)
        first_return = jnp.zeros((num_episodes,))
        first_won = jnp.zeros((num_episodes,), bool)
        finished = jnp.zeros((num_episodes,), bool)

        def step(state: Any, step_key: Array) -> tuple[Any, None]:
            env_state, timestep, carry, starts, first_return, first_won, finished = state
            act_key, env_key = jax.random.split(step_key)
            carry, actions = act(carry, timestep, starts, act_key)
            env_state, timestep = env.step(env_key, env_state, actions)
            done = timestep.info["episode_done"]
            per_agent = jnp.concatenate(list(timestep.info["episode_return"].values()), axis=-1).mean(-1)
            record = done & ~finished
            first_return = jnp.where(record, per_agent, first_return)
            if "won" in timestep.info:
                first_won = jnp.where(record, timestep.info["won"], first_won)
            return (env_state, timestep, carry, done, first_return, first_won, finished | done), None

        state = (env_state, timestep, carry, starts, first_return, first_won, finished)
        state, _ = jax.lax.scan(step, state, jax.random.split(key, max_steps + 1))
        return state[4], state[5], state[6]

    return run


def _check_finished(finished: np.ndarray, env: Any) -> None:
    if not finished.all():
        raise RuntimeError(f"{int((~finished).sum())} of {finished.size} episodes did not end within "
                           f"max_steps + 1 = {int(env.default_params.max_steps) + 1} steps")


def first_episodes(
    env: Any, act: Callable[[Any, Any, Array, Array], tuple[Any, Any]], carry: Any, num_episodes: int,
    key: Array,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Step a batch of ``num_episodes`` auto-resetting envs (an ``EpisodeStats`` stack, as training uses)
    until each has finished its first episode, in one compiled scan.

    ``act(carry, timestep, starts, key) -> (carry, actions)`` picks the actions (``starts``: ``bool[B]``,
    where an episode begins). Returns each episode's mean per-agent return (the definition of training's
    ``return_mean``) and, for envs that report ``info["won"]``, whether it was won (else None). Taking only
    the first episode of each env keeps short episodes from being over-counted, as they would be by
    averaging every episode that ends within a fixed number of steps."""
    run = _first_episodes_program(env, num_episodes)
    has_winner = "won" in jax.eval_shape(env.reset, key)[1].info
    returns, won, finished = jax.device_get(jax.jit(lambda k: run(act, carry, k))(key))
    _check_finished(np.asarray(finished), env)
    return np.asarray(returns), (np.asarray(won) if has_winner else None)


def evaluate_policy(
    module: ModuleType, config: Any, params: Any, num_episodes: int, key: Array, deterministic: bool = False
) -> EvalReport:
    """Run ``num_episodes`` envs in parallel until each finishes its first episode, in one compiled scan,
    and return each episode's mean per-agent return and, for envs with a winner (SMAX), whether it was
    won."""
    if num_episodes < 1:
        raise ValueError(f"episodes: must be >= 1, got {num_episodes}")
    env = module.make_env(config, num_episodes)  # the training stack, one env per episode
    policy = module.make_policy(config, env)

    def act(hidden: Any, timestep: Any, starts: Array, act_key: Array) -> tuple[Any, Any]:
        return policy.act(params, hidden, timestep, starts, act_key, deterministic)

    returns, wins = first_episodes(env, act, policy.init_hidden(num_episodes), num_episodes, key)
    mean, low, high = mean_ci(returns)
    return EvalReport(returns, mean, low, high, wins)


def evaluate_runs(
    module: ModuleType, config: Any, params: Any, num_episodes: int, key: Array, deterministic: bool = False
) -> list[EvalReport]:
    """``evaluate_policy`` for every run of a run folder at once: ``params`` has a leading run axis
    (``[grid * seeds, ...]``, ``module.policy_params`` of the runner state) and one compiled program, vmapped
    over it, plays ``num_episodes`` first episodes per run. Every run sees the same ``key`` (the same env
    draws), as ``evaluate_policy`` with that key would give it; one report per run, in run order."""
    if num_episodes < 1:
        raise ValueError(f"episodes: must be >= 1, got {num_episodes}")
    env = module.make_env(config, num_episodes)
    policy = module.make_policy(config, env)
    run = _first_episodes_program(env, num_episodes)

    def one_run(run_params: Any) -> tuple[Array, Array, Array]:
        def act(hidden: Any, timestep: Any, starts: Array, act_key: Array) -> tuple[Any, Any]:
            return policy.act(run_params, hidden, timestep, starts, act_key, deterministic)

        return run(act, policy.init_hidden(num_episodes), key)

    has_winner = "won" in jax.eval_shape(env.reset, key)[1].info
    returns, won, finished = (np.asarray(a) for a in jax.device_get(jax.jit(jax.vmap(one_run))(params)))
    _check_finished(finished, env)
    reports = []
    for index in range(returns.shape[0]):
        mean, low, high = mean_ci(returns[index])
        reports.append(EvalReport(returns[index], mean, low, high, won[index] if has_winner else None))
    return reports


def eval_lines(labels: list[str], runs: list[tuple[int, int, EvalReport]]) -> list[str]:
    """``eval``'s table: one line per ``(grid point, seed, report)`` of ``runs``, and after each grid point
    with several seeds their mean with a 95% Student-t interval over the seeds' means (and the mean win
    rate where the env has a winner). ``labels`` names each grid point by what differs between them
    (``plots.grid_labels``; empty for one point)."""
    lines = []
    for g in dict.fromkeys(g for g, _, _ in runs):
        name = f"grid point {g}" + (f" ({labels[g]})" if labels[g] else "")
        mine = [(s, report) for point, s, report in runs if point == g]
        lines += [f"  {name}, seed {s}: {report}" for s, report in mine]
        if len(mine) > 1:
            mean, low, high = mean_ci(np.array([r.mean for _, r in mine]))
            text = (f"  {name}: mean over {len(mine)} seeds {mean:.3f} (95% CI {low:.3f} .. {high:.3f}, "
                    "Student t over the seeds' means)")
            rates = [r.win_rate for _, r in mine]
            if all(rate is not None for rate in rates):
                win, win_low, win_high = mean_ci(np.array([rate.point for rate in rates if rate is not None]))
                text += f"; win rate {win:.3f} ({win_low:.3f} .. {win_high:.3f})"
            lines.append(text)
    return lines


def render_policy(
    module: ModuleType, config: Any, params: Any, path: str | Path, key: Array, deterministic: bool = False,
    num_steps: int | None = None, fps: float | None = None, size: int | None = None,
) -> Path:
    """Render one episode of the policy to a GIF (``episode_frames``) and return its path.

    ``fps`` defaults to the env's ``render_fps``, so the GIF plays at the family's stated speed; ``size``
    (the frame's shorter side in pixels) to ``write_gif``'s legible default. Each frame is captioned with
    its step and the running per-agent mean return.
    """
    from jaxmarl_suite.render.gif import check_gif_options, write_gif

    env = _render_env(module, config)
    frame_rate = float(env.render_fps if fps is None else fps)
    check_gif_options(size, frame_rate)  # before compiling anything
    episode = _episode(env, module.make_policy(config, env), params, key, deterministic, num_steps)
    return write_gif(path, episode.frames, frame_rate, size=size, returns=episode.returns)


def _render_env(module: ModuleType, config: Any) -> Any:
    """The training env stack for one env, without resets, so an episode's last state is drawn."""
    env = module.make_env(config, 1, auto_reset=False)
    if not env.renders:
        raise ValueError(f"{config.env_id} does not render")
    return env


def episode_frames(
    module: ModuleType, config: Any, params: Any, key: Array, deterministic: bool = False,
    num_steps: int | None = None,
) -> RenderedEpisode:
    """The frames of one episode of the policy (``uint8[T, H, W, 3]``) and the running per-agent mean return
    at each, all from one jitted call, on the env stack the policy trained on (``module.make_env``).

    The rollout has a fixed length (``num_steps``, default the env's ``max_steps``); frames after every
    agent's episode has ended are dropped, so a game that ends early (a SMAX win) does not play on.
    """
    env = _render_env(module, config)
    return _episode(env, module.make_policy(config, env), params, key, deterministic, num_steps)


def _episode(env: Any, policy: Any, params: Any, key: Array, deterministic: bool,
             num_steps: int | None) -> RenderedEpisode:
    def act(hidden: Any, timestep: Any, starts: Array, act_key: Array) -> tuple[Any, Any]:
        return policy.act(params, hidden, timestep, starts, act_key, deterministic)

    return render_episode(env, act, policy.init_hidden(1), key, num_steps)
