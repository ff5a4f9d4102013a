"""Building the env a baseline trains on, with the wrappers every baseline needs."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.registry import env_spec, make
from jaxmarl_suite.core.types import GroupDict, TimeStep
from jaxmarl_suite.errors import ConfigError, IncompatibleEnvError
from jaxmarl_suite.wrappers import AutoReset, EpisodeStats, FlattenGroups, WorldState
from jaxmarl_suite.wrappers.base import Wrapper

Array = jax.Array

PARAM_SHARING = ("group", "agent", "all")
"""``group``: one set per group (default); ``agent``: one per agent; ``all``: one for every agent,
on padded observations with a one-hot group id (``FlattenGroups``)."""


def check_env_id(env_id: str) -> None:
    """Fail at config time, without building anything, when the env id is unknown (naming the closest)."""
    try:
        env_spec(env_id)
    except ValueError as error:
        raise ConfigError(f"env_id: {error}") from error


def make_training_env(
    env_id: str, num_envs: int, env_kwargs: dict[str, Any], param_sharing: str, world_state: bool = False,
    auto_reset: bool = True,
) -> MultiAgentEnv:
    """``EpisodeStats(AutoReset(make(env_id, num_envs), vmapped=True))``, flattened to one group for
    ``param_sharing="all"`` and with ``info["world_state"]`` when ``world_state`` is set.

    The one env stack of training, evaluation and rendering (``auto_reset=False`` for watching one
    episode to its last state). An unknown id raises ``ConfigError`` naming ``env_id``, and an argument
    the env refuses one naming ``env_kwargs`` (then the env's own message, which names the argument); an
    env whose groups ``FlattenGroups`` cannot merge raises ``IncompatibleEnvError``.
    """
    check_env_id(env_id)
    try:
        env: MultiAgentEnv = make(env_id, num_envs=num_envs, **env_kwargs)
    except (ValueError, TypeError) as error:
        raise ConfigError(f"env_kwargs: {error}") from error
    if auto_reset:
        env = AutoReset(env, vmapped=True)  # the runner vmaps every program over its runs
    try:
        if param_sharing == "all":
            env = FlattenGroups(env)
        if world_state:
            env = WorldState(env)
    except TypeError as error:  # these wrappers cannot take this env: a pairing, not a bad argument
        raise IncompatibleEnvError(str(error)) from error
    return EpisodeStats(env)


def completed_episode_stats(timestep: TimeStep, envs: Array | None = None) -> dict[str, Array]:
    """Per-step sums over the batch for episodes that ended on this step (from ``EpisodeStats``):
    ``return_sum`` (of the per-agent mean return), ``length_sum`` and ``episodes``; only over the envs
    ``envs`` (``[B]`` bool) marks, when given."""
    done = timestep.info["episode_done"]
    if envs is not None:
        done = done & envs
    per_agent = jnp.concatenate(list(timestep.info["episode_return"].values()), axis=-1).mean(-1)
    stats = {
        "return_sum": jnp.sum(jnp.where(done, per_agent, 0.0)),
        "length_sum": jnp.sum(jnp.where(done, timestep.info["episode_length"], 0)).astype(jnp.float32),
        "episodes": jnp.sum(done).astype(jnp.float32),
    }
    if "won" in timestep.info:  # envs with a winner (SMAX) report it on the episode's last step
        stats["won_sum"] = jnp.sum(done & timestep.info["won"]).astype(jnp.float32)
    if "episode_collective_return" in timestep.info:  # social dilemmas (``env.social_measures``)
        info = timestep.info
        stats["collective_return_sum"] = jnp.sum(jnp.where(done, info["episode_collective_return"], 0.0))
        defined = done & jnp.isfinite(info["episode_equality"])
        stats["equality_sum"] = jnp.sum(jnp.where(defined, info["episode_equality"], 0.0))
        stats["equality_episodes"] = jnp.sum(defined).astype(jnp.float32)
        for kind in ("cooperative", "defecting"):
            if f"episode_{kind}_pickups" in info:
                per_agent = info[f"episode_{kind}_pickups"].mean(-1)
                stats[f"{kind}_pickups_sum"] = jnp.sum(jnp.where(done, per_agent, 0.0))
    return stats


def episode_metrics(stats: dict[str, Array]) -> dict[str, Array]:
    """``return_mean`` (mean per-agent episode return), ``episode_length`` and, for envs that report
    ``info["won"]``, ``win_rate`` over a rollout's completed episodes, NaN when none completed;
    ``stats`` holds ``completed_episode_stats`` per step.

    Social dilemmas (``env.social_measures``) add ``collective_return`` (all agents' return summed, per
    episode), ``equality`` (one minus the Gini coefficient of the agents' returns, averaged over episodes
    where it is defined) and, for envs that count pick-ups, ``cooperative_pickups`` and
    ``defecting_pickups`` (per agent per episode) and ``cooperative_share`` (cooperative over all pick-ups).
    """
    episodes = stats["episodes"].sum()
    safe = jnp.maximum(episodes, 1.0)
    nan = jnp.float32(jnp.nan)
    metrics = {
        "return_mean": jnp.where(episodes > 0, stats["return_sum"].sum() / safe, nan),
        "episode_length": jnp.where(episodes > 0, stats["length_sum"].sum() / safe, nan),
        "episodes": episodes,
    }
    if "won_sum" in stats:
        metrics["win_rate"] = jnp.where(episodes > 0, stats["won_sum"].sum() / safe, nan)
    if "collective_return_sum" in stats:
        collective = stats["collective_return_sum"].sum()
        metrics["collective_return"] = jnp.where(episodes > 0, collective / safe, nan)
        defined = stats["equality_episodes"].sum()
        equal = stats["equality_sum"].sum()
        metrics["equality"] = jnp.where(defined > 0, equal / jnp.maximum(defined, 1.0), nan)
    if "cooperative_pickups_sum" in stats and "defecting_pickups_sum" in stats:
        cooperative, defecting = stats["cooperative_pickups_sum"].sum(), stats["defecting_pickups_sum"].sum()
        metrics["cooperative_pickups"] = jnp.where(episodes > 0, cooperative / safe, nan)
        metrics["defecting_pickups"] = jnp.where(episodes > 0, defecting / safe, nan)
        both = cooperative + defecting
        metrics["cooperative_share"] = jnp.where(both > 0, cooperative / jnp.maximum(both, 1e-9), nan)
    return metrics


def shaped_reward_weight(env_steps: Array, shaping_steps: int) -> Array:
    """Weight of the env's shaped reward after ``env_steps`` of training: 1 falling linearly to 0 over
    ``shaping_steps`` (JaxMARL's ``REW_SHAPING_HORIZON``); 0 throughout when ``shaping_steps`` is 0."""
    if shaping_steps <= 0:
        return jnp.float32(0.0)
    return jnp.clip(1.0 - env_steps / shaping_steps, 0.0, 1.0).astype(jnp.float32)


def training_reward(timestep: TimeStep, group: str, weight: Array) -> Array:
    """``timestep.reward[group]`` plus ``weight`` times the env's per-agent ``info["shaped_reward"]``
    (Overcooked's), which must then have the group's shape; the reward alone for envs without one."""
    reward = timestep.reward[group]
    shaped = timestep.info.get("shaped_reward")
    if shaped is None:
        return reward
    if shaped.shape != reward.shape:
        raise IncompatibleEnvError(
            f"info['shaped_reward'] has shape {shaped.shape}, group {group!r}'s reward {reward.shape}: "
            "reward shaping needs one shaped reward per agent of the group"
        )
    return reward + weight * shaped


def action_masks(env: MultiAgentEnv, timestep: TimeStep | Observation) -> GroupDict:
    """The action masks a trainer stores and applies: ``timestep.action_mask``, or none for an env whose
    every action is always legal (``all_actions_legal``), where a mask of all True would change no
    probability and only cost a store a step (2 of IPPO's 43 kernels a rollout step on MPE spread,
    compiled for an H200)."""
    return {} if env.all_actions_legal else timestep.action_mask


class Observation(NamedTuple):
    """The part of a ``TimeStep`` that the next rollout step acts on, which is all a runner carries from
    one step to the next (``observation``). Its fields keep ``TimeStep``'s names, so code that reads
    ``obs`` or a group's mask by ``action_mask.get(group)`` takes either, and a checkpoint's leaves keep
    their paths. Read the world state of either with ``world_state(env, ...)``."""

    obs: GroupDict
    action_mask: GroupDict
    """Empty for an env whose every action is always legal (``action_masks``)."""
    info: dict[str, Array]
    """``world_state`` when the env stack adds one that the observations cannot rebuild (``observation``);
    nothing else. Read it with ``world_state``."""


def observation(env: MultiAgentEnv, timestep: TimeStep) -> Observation:
    """What a runner carries of ``timestep`` to the next step: observations, action masks where some
    action can be illegal, and the world state where the env stack adds one (``WorldState``) that cannot
    be rebuilt from the observations (``world_state``).

    Rewards, done flags, final observations and the episode statistics are read on the step that
    produced them. A loop-carried value is written out every step, and the statistics are also in
    ``EpisodeStats``'s state, so carrying the whole ``TimeStep`` cost IPPO 8 of its 42 kernels a rollout
    step on MPE spread, compiled for an H200 (``bench.compile_for_gpu``). A world state built from the
    observations, carried beside them, was copied every step (1 of MAPPO's 33 kernels a step on MPE
    spread), and one that no critic reads (SMAX's, under IPPO) is not carried.
    """
    wrapper = _world_state_wrapper(env)
    carried = wrapper is not None and wrapper.native and "world_state" in timestep.info
    info = {"world_state": timestep.info["world_state"]} if carried else {}
    return Observation(timestep.obs, action_masks(env, timestep), info)


def world_state(env: MultiAgentEnv, carried: Observation | TimeStep, final: bool = False) -> Array:
    """The world state a critic or mixer reads, for an env stack built with ``world_state=True``: that of
    the current observation of what a runner carries (``observation``) or of a ``TimeStep``, or with
    ``final`` that of the observation the step led to before any reset (``info["final_obs"]``, the one
    to bootstrap from on truncation; a ``TimeStep`` from ``AutoReset`` only).

    The one path from the env to a centralised critic: rebuilt from the observations where ``WorldState``
    builds it from them, read from ``info`` (``world_state``, ``final_world_state``) where the env reports
    its own. The rebuilt one equals the wrapper's because the only wrappers ``make_training_env`` puts
    above ``WorldState`` (``EpisodeStats``, and ``Checked`` when asked) leave observations as they are."""
    wrapper = _world_state_wrapper(env)
    if wrapper is None:
        raise IncompatibleEnvError("this env stack has no world state: build it with world_state=True")
    if wrapper.native:
        return carried.info["final_world_state" if final else "world_state"]
    obs: GroupDict = carried.info["final_obs"] if final else carried.obs  # type: ignore[assignment]
    return wrapper.from_observations(obs)


def _world_state_wrapper(env: MultiAgentEnv) -> WorldState | None:
    while isinstance(env, Wrapper):
        if isinstance(env, WorldState):
            return env
        env = env.env
    return None


def agent_done(timestep: TimeStep) -> GroupDict:
    """Per agent, whether its episode ended on this step (terminated or truncated)."""
    return {g: timestep.terminated[g] | timestep.truncated[g] for g in timestep.terminated}
