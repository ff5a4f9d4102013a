"""The benchmarked rollouts: ours (batch-native or ``jax.vmap``), JaxMARL's counterpart env where one exists
(``jaxmarl_id``, ``jaxmarl_kwargs``) and the reference package's, each a jitted ``lax.scan`` of random
actions whose rewards and observations stay live."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.bench.actions import _masked_group_actions, sample_group_actions
from jaxmarl_suite.bench.kernels import KernelCounts, gpu_kernel_counts
from jaxmarl_suite.bench.timing import PreparedRollout, Timing, _leaf_sum, time_interleaved
from jaxmarl_suite.compat.jaxmarl_scripts import stdout_to_stderr
from jaxmarl_suite.core.registry import EnvSpec, env_spec, make
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers.auto_reset import AutoReset

Array = jax.Array
Carry = Any

OBS_WEIGHT = 1e-9
"""Observations enter the returned scalar with this weight: enough to keep them live, not to matter."""



def bench_ours(
    env_id: str,
    num_envs: int,
    steps: int,
    repeats: int,
    use_vmap: bool = False,
    masked_actions: bool = False,
    min_repeat_s: float = 0.2,
    reset_mode: str = "auto",
    **env_kwargs: Any,
) -> Timing:
    """Compile time, env steps/s and kernels per step of ``AutoReset(VecEnv(env, B))`` with random
    actions."""
    prepared = prepare_ours(env_id, num_envs, steps, use_vmap, masked_actions, min_repeat_s, reset_mode,
                            **env_kwargs)
    time_interleaved([prepared], repeats)
    return Timing(prepared.compile_s, num_envs * steps / prepared.best_s, prepared.kernels)


def prepare_ours(
    env_id: str,
    num_envs: int,
    steps: int,
    use_vmap: bool = False,
    masked_actions: bool = False,
    min_repeat_s: float = 0.2,
    reset_mode: str = "auto",
    **env_kwargs: Any,
) -> PreparedRollout:
    """``bench_ours``'s rollout, compiled and warmed up, not yet timed."""
    init, rollout = ours_rollout(env_id, num_envs, steps, use_vmap, masked_actions, reset_mode, **env_kwargs)
    return PreparedRollout(init, rollout, min_repeat_s)


def ours_rollout(
    env_id: str,
    num_envs: int,
    steps: int,
    use_vmap: bool = False,
    masked_actions: bool = False,
    reset_mode: str = "auto",
    **env_kwargs: Any,
) -> tuple[Callable[[Array], Carry], Callable[[Carry], tuple[Carry, Array]]]:
    """``(init, rollout)`` of ``bench_ours``: ``init(key)`` makes the carry, ``rollout(carry)`` runs
    ``steps`` steps of ``AutoReset(VecEnv(env, num_envs))`` under random actions."""
    env = AutoReset(VecEnv(make(env_id, **env_kwargs), num_envs, use_vmap=use_vmap), reset_mode)

    def init(key: Array) -> Carry:
        state, timestep = env.reset(key)
        mask = timestep.action_mask if masked_actions else None
        return state, mask, key

    def body(carry: Carry, _: None) -> tuple[Carry, Array]:
        state, mask, key = carry
        key, action_key, step_key = jax.random.split(key, 3)
        if masked_actions:
            actions = _masked_group_actions(action_key, env, num_envs, mask)
        else:
            actions = sample_group_actions(action_key, env, num_envs)
        state, timestep = env.step(step_key, state, actions)
        mask = timestep.action_mask if masked_actions else None
        value = _leaf_sum(timestep.reward) + OBS_WEIGHT * _leaf_sum(timestep.obs)
        return (state, mask, key), value

    def rollout(carry: Carry) -> tuple[Carry, Array]:
        carry, values = jax.lax.scan(body, carry, None, length=steps)
        return carry, jnp.sum(values)

    return init, rollout


def _import_jaxmarl() -> Any:
    """``jaxmarl``, or None when it is not installed. Its import-time chatter goes to stderr."""
    try:
        with stdout_to_stderr():
            import jaxmarl
    except ImportError:
        return None
    return jaxmarl


def jaxmarl_id(env_id: str, env_kwargs: dict[str, Any] | None = None) -> str | None:
    """The JaxMARL id of our env ``env_id`` (canonical id or an alias registered in JaxMARL), if any.

    SMAX maps map to JaxMARL's ``HeuristicEnemySMAX`` (our default heuristic enemy) or, with
    ``enemy="agents"``, to its two-team ``SMAX``; ``jaxmarl_kwargs`` gives the scenario argument.
    """
    jaxmarl = _import_jaxmarl()
    if jaxmarl is None:
        return None
    spec = env_spec(env_id)
    if spec.family == "smax":
        if _jaxmarl_smax_scenario(spec, env_kwargs or {}) is None:
            return None
        return "SMAX" if (env_kwargs or {}).get("enemy") == "agents" else "HeuristicEnemySMAX"
    if spec.family in ("overcooked", "overcooked_v2"):
        return spec.family  # one JaxMARL id each; the layout is an argument (``jaxmarl_kwargs``)
    known = set(jaxmarl.registered_envs)
    return next((name for name in (spec.env_id, *spec.aliases) if name in known), None)


def _jaxmarl_smax_scenario(spec: EnvSpec, env_kwargs: dict[str, Any]) -> Any:
    from jaxmarl.environments.smax import smax_env

    name = env_kwargs.get("scenario", spec.kwargs.get("scenario", "3m"))
    if not isinstance(name, str) or name not in smax_env.MAP_NAME_TO_SCENARIO:
        return None
    return smax_env.map_name_to_scenario(name)


def jaxmarl_kwargs(env_id: str, env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Constructor arguments of JaxMARL's counterpart (the scenario object for SMAX maps)."""
    spec = env_spec(env_id)
    if spec.family == "smax":
        return {"scenario": _jaxmarl_smax_scenario(spec, env_kwargs or {})}
    if spec.family == "overcooked":
        from jaxmarl.environments.overcooked import overcooked_layouts

        name = str((env_kwargs or {}).get("layout", spec.kwargs.get("layout", "cramped_room")))
        jaxmarl_names = {"asymmetric_advantages": "asymm_advantages", "coordination_ring": "coord_ring",
                         "forced_coordination": "forced_coord"}
        return {"layout": overcooked_layouts[jaxmarl_names.get(name, name)]}
    if spec.family == "overcooked_v2":  # JaxMARL's overcooked_v2 takes our arguments by name, layout included
        return {**spec.kwargs, **(env_kwargs or {})}
    if spec.family == "hanabi":  # the same game: JaxMARL's Hanabi takes our size arguments by name
        sizes = ("num_agents", "num_colors", "num_ranks", "hand_size", "max_info_tokens", "max_life_tokens")
        return {k: v for k, v in (env_kwargs or {}).items() if k in sizes}
    return {}


def _jaxmarl_space_key(space: Any) -> tuple[Any, ...]:
    if hasattr(space, "n"):
        return ("discrete", int(space.n), str(np.dtype(space.dtype)))
    return (
        "box",
        tuple(space.shape),
        np.asarray(space.low).tobytes(),
        np.asarray(space.high).tobytes(),
        str(np.dtype(space.dtype)),
    )


def bench_jaxmarl(
    jaxmarl_env_id: str,
    num_envs: int,
    steps: int,
    repeats: int,
    min_repeat_s: float = 0.2,
    masked_actions: bool = False,
    **jaxmarl_env_kwargs: Any,
) -> Timing:
    """``prepare_jaxmarl``'s rollout, timed: compile seconds, env steps/s and kernels per step."""
    prepared = prepare_jaxmarl(jaxmarl_env_id, num_envs, steps, min_repeat_s, masked_actions,
                               **jaxmarl_env_kwargs)
    time_interleaved([prepared], repeats)
    return Timing(prepared.compile_s, num_envs * steps / prepared.best_s, prepared.kernels)


def prepare_jaxmarl(
    jaxmarl_env_id: str,
    num_envs: int,
    steps: int,
    min_repeat_s: float = 0.2,
    masked_actions: bool = False,
    **jaxmarl_env_kwargs: Any,
) -> PreparedRollout:
    """JaxMARL's env as its users run it, compiled and warmed up, not yet timed.

    ``jax.vmap(env.reset)`` / ``jax.vmap(env.step)`` (JaxMARL's step auto-resets) in ``lax.scan`` under
    jit. Actions are drawn as for our env: one ``randint``/``uniform`` of shape ``[B, k]`` per set of ``k``
    agents with identical action spaces, then split into JaxMARL's per-agent dict; with
    ``masked_actions``, uniformly over the legal moves its env reports (``get_legal_moves``, else
    ``get_avail_actions``), as ours draws over its action mask.
    """
    init, rollout = jaxmarl_rollout(jaxmarl_env_id, num_envs, steps, masked_actions, **jaxmarl_env_kwargs)
    return PreparedRollout(init, rollout, min_repeat_s)


def jaxmarl_rollout(
    jaxmarl_env_id: str,
    num_envs: int,
    steps: int,
    masked_actions: bool = False,
    **jaxmarl_env_kwargs: Any,
) -> tuple[Callable[[Array], Carry], Callable[[Carry], tuple[Carry, Array]]]:
    """``(init, rollout)`` of ``prepare_jaxmarl``."""
    env = _import_jaxmarl().make(jaxmarl_env_id, **jaxmarl_env_kwargs)
    agent_sets: dict[tuple[Any, ...], list[str]] = {}
    for agent in env.agents:
        agent_sets.setdefault(_jaxmarl_space_key(env.action_space(agent)), []).append(agent)

    def draw(key: Array) -> dict[str, Array]:
        keys = [key] if len(agent_sets) == 1 else list(jax.random.split(key, len(agent_sets)))
        actions = {}
        for set_key, agents in zip(keys, agent_sets.values(), strict=True):
            space = env.action_space(agents[0])
            if hasattr(space, "n"):
                values = jax.random.randint(set_key, (num_envs, len(agents)), 0, space.n, dtype=space.dtype)
            else:
                shape = (num_envs, len(agents), *space.shape)
                values = jax.random.uniform(set_key, shape, space.dtype, space.low, space.high)
            actions.update({agent: values[:, i] for i, agent in enumerate(agents)})
        return actions

    legal_moves = getattr(env, "get_legal_moves", None) or env.get_avail_actions

    def draw_legal(key: Array, state: Any) -> dict[str, Array]:
        masks = jax.vmap(legal_moves)(state)
        keys = jax.random.split(key, len(env.agents))
        return {agent: jnp.argmax(
                    jnp.where(masks[agent] > 0, jax.random.uniform(k, masks[agent].shape), -1.0), axis=-1)
                for k, agent in zip(keys, env.agents, strict=True)}

    def init(key: Array) -> Carry:
        _, state = jax.vmap(env.reset)(jax.random.split(key, num_envs))
        return state, key

    def body(carry: Carry, _: None) -> tuple[Carry, Array]:
        state, key = carry
        key, action_key, step_key = jax.random.split(key, 3)
        actions = draw_legal(action_key, state) if masked_actions else draw(action_key)
        obs, state, reward, _, _ = jax.vmap(env.step)(
            jax.random.split(step_key, num_envs), state, actions
        )
        value = _leaf_sum({a: reward[a] for a in env.agents}) + OBS_WEIGHT * _leaf_sum(obs)
        return (state, key), value

    def rollout(carry: Carry) -> tuple[Carry, Array]:
        carry, values = jax.lax.scan(body, carry, None, length=steps)
        return carry, jnp.sum(values)

    return init, rollout


def gpu_rollout_kernels(init: Callable[[Array], Carry], rollout: Callable[[Carry], tuple[Carry, Array]],
                        target: str = "h200") -> KernelCounts:
    """The kernels of ``rollout`` compiled for the GPU ``target`` (``compile_for_gpu``), from the shapes of
    ``init``'s carry: nothing runs."""
    carry = jax.eval_shape(init, jax.ShapeDtypeStruct((2,), jnp.uint32))
    return gpu_kernel_counts(rollout, carry, target=target)




def bench_reference(env_id: str, steps: int = 2000, seed: int = 0) -> float | None:
    """Env steps/s of the reference implementation stepping **one** env with random actions, as its users
    do (a Python loop over a PettingZoo parallel env). None when the env has no mpe2 reference or mpe2 is
    not installed."""
    reference = env_spec(env_id).reference or ""
    if not reference.startswith("mpe2."):
        return None
    try:
        module = __import__(reference, fromlist=["parallel_env"])
    except ImportError:
        return None
    ref = module.parallel_env()
    ref.reset(seed=seed)
    for agent in ref.possible_agents:
        ref.action_space(agent).seed(seed)
    taken = 0
    start = time.perf_counter()
    while taken < steps:
        if not ref.agents:
            ref.reset()
        ref.step({agent: ref.action_space(agent).sample() for agent in ref.agents})
        taken += 1
    rate = taken / (time.perf_counter() - start)
    ref.close()
    return rate
