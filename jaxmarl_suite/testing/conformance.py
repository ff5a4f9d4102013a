"""Conformance checks every environment must pass; usable on your own envs.

``collect_rollout(env)`` compiles **one** program that runs ``AutoReset(VecEnv(env, batch_size))`` on
random legal actions and records, for every step and env, what the checks need; each ``check_*`` then
inspects that rollout. ``check_env`` collects once and runs every check on it; a check called without
``rollout=`` collects its own.

Each check raises ``ConformanceError`` (an ``AssertionError``) describing the first violation and returns
None on success, so a forgotten result can never hide a failure. Pass a *per-env* ``MultiAgentEnv`` (not a
``VecEnv``): the checks batch it themselves.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NoReturn

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.env import BatchNativeEnv, MultiAgentEnv
from jaxmarl_suite.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers.auto_reset import AutoReset
from jaxmarl_suite.wrappers.base import episode_done
from jaxmarl_suite.wrappers.checked import Checked, CheckedState, InvalidActionError

Array = jax.Array

BATCH_TOLERANCE = 1e-5
"""rtol and atol between the batch-native and the ``jax.vmap`` path. Both step from the native path's
state at every step: over a long free run, float32 rounding differences between the two compiled paths
are amplified by contacts in crowded worlds, while one step at a time stays this tight."""

_TIMESTEP_FIELDS = ("obs", "reward", "terminated", "truncated", "action_mask")


class ConformanceError(AssertionError):
    """An environment broke the API contract (docs/api.md)."""


def _fail(check: str, message: str) -> NoReturn:
    raise ConformanceError(f"[{check}] {message}")


@dataclasses.dataclass(frozen=True)
class Rollout:
    """One compiled run of ``AutoReset(VecEnv(env, batch_size))`` under random legal actions.

    Arrays are NumPy. ``record`` holds ``[num_steps, batch_size]`` arrays computed inside the compiled
    program (per group or per leaf path where a message names one), so a long run of a big env stays
    small. The run is two calls of one jitted half, the second fed the first's output, so that a step
    whose state differs from reset's in dtype or weak type shows as a retrace.
    """

    env: MultiAgentEnv
    batch_size: int
    num_steps: int
    first: TimeStep
    """The auto-reset batch's first TimeStep, ``[B, ...]``."""
    first_states: Any
    """The reset states with the batch leading (``[B, ...]``), whichever layout the env keeps inside."""
    mapped_first: TimeStep | None
    """For a ``BatchNativeEnv``: the ``jax.vmap`` path's first TimeStep from the same key; else None."""
    mapped_first_states: Any
    """For a ``BatchNativeEnv``: the ``jax.vmap`` path's reset states; else None."""
    record: dict[str, Any]
    """Per step and env (``[num_steps, batch_size]``): ``done``; ``obs_in_space``, ``final_obs_in_space``,
    ``mask_has_legal``, ``sample_legal`` and ``ended_both_flags`` per group; ``final_obs_is_raw``,
    ``continues``, ``restarts``, ``truncated`` (any agent); ``transition_is_raw`` per field; ``finite``,
    ``digest`` and ``matches_vmap`` per leaf path."""
    halfway: Any
    """The carry (state, action mask, key) after the first half."""
    replay: dict[str, Any]
    """``record`` of the first half, run again from the same carry (for determinism)."""
    replay_halfway: Any
    """The carry after that replay."""
    retrace: str | None
    """Why a jitted step would be traced again when fed its own output, or None."""


def collect_rollout(
    env: MultiAgentEnv, batch_size: int = 16, num_steps: int = 1000, seed: int = 0,
    compiler_options: dict[str, Any] | None = None,
) -> Rollout:
    """Compile and run one rollout of ``batch_size`` auto-reset copies of ``env`` for ``num_steps`` steps.

    Per step it records, inside the compiled program: the auto-reset step, the same step without the
    reset (``final_obs`` and the flags must be its own), a fresh reset from the key ``AutoReset``
    documents (where an episode ended), and, for a ``BatchNativeEnv``, the ``jax.vmap`` path stepped from
    the same state. Shapes and dtypes are checked while tracing; a violation raises ``ConformanceError``.
    ``compiler_options`` go to XLA with each of its programs (``jax.jit``'s), as
    ``{"xla_backend_optimization_level": 3}``.
    """
    if isinstance(env, VecEnv):
        raise TypeError("collect_rollout takes a per-env env; pass env.env instead of the VecEnv")
    if batch_size < 2 or num_steps < 2 or num_steps % 2:
        raise ValueError(f"need batch_size >= 2 and an even num_steps >= 2, got {batch_size}, {num_steps}")
    check_spaces(env)
    vec = VecEnv(env, batch_size)
    auto = AutoReset(vec)
    mapped = AutoReset(VecEnv(env, batch_size, use_vmap=True)) if vec.batch_native else None
    reset_key, run_key = jax.random.split(jax.random.PRNGKey(seed))

    _check_timestep_shapes(env, jax.eval_shape(env.reset, reset_key)[1], (), "jit_vmap/single reset")

    def start(key: Array) -> tuple[Any, Any]:
        return auto.reset(key), None if mapped is None else mapped.reset(key)

    jit = functools.partial(jax.jit, compiler_options=compiler_options)
    (state, first), mapped_reset = jit(start)(reset_key)
    _check_timestep_shapes(env, first, (batch_size,), "jit_vmap/reset")
    if mapped_reset is not None:
        _check_timestep_shapes(env, mapped_reset[1], (batch_size,), "jit_vmap/vmap reset")

    weak_types: list[str] = []
    record_step = _step_recorder(env, batch_size)

    def rollout_half(carry: tuple[Any, Any, Array]) -> tuple[tuple[Any, Any, Array], dict[str, Any]]:
        def body(carry: tuple[Any, Any, Array], _: None) -> tuple[tuple[Any, Any, Array], dict[str, Any]]:
            state, mask, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            actions = vec.sample_actions(action_key, mask)
            raw_key, fresh_key = jax.random.split(step_key)  # the split AutoReset documents
            raw_state, raw = vec.step(raw_key, state, actions)
            _check_timestep_shapes(env, raw, (batch_size,), "jit_vmap/step")
            weak_types.extend(_check_step_like_reset(first, raw, state, raw_state))
            next_state, timestep = auto.step(step_key, state, actions)
            done = episode_done(raw)
            restart = jax.lax.cond(
                jnp.any(done),
                lambda: _restart(vec.reset(fresh_key)[1]),
                lambda: jax.tree.map(jnp.zeros_like, _restart(first)),
            )
            record = record_step(mask, actions, raw, timestep, restart, done)
            if mapped is not None:
                native = {"state": _batch_first(next_state), "timestep": timestep._asdict()}
                mapped_state, mapped_timestep = mapped.step(step_key, _batch_first(state), actions)
                other = {"state": mapped_state, "timestep": mapped_timestep._asdict()}
                record["matches_vmap"] = _per_leaf_close(native, other, batch_size)
            return (next_state, timestep.action_mask, key), record

        return jax.lax.scan(body, carry, None, length=num_steps // 2)

    # chex counts traces per code object, so forget counts left by earlier envs.
    chex.clear_trace_counter()
    guarded = jit(chex.assert_max_traces(n=1)(rollout_half))
    start_carry = (state, first.action_mask, run_key)
    halfway, first_half = guarded(start_carry)
    retrace = None
    try:
        _, second_half = guarded(halfway)
    except AssertionError as error:
        if isinstance(error, ConformanceError):
            raise
        retrace = f"the jitted rollout was traced again when fed its own output ({error})"
        _, second_half = jit(rollout_half)(halfway)
    if weak_types:
        retrace = "; ".join(sorted(set(weak_types))) + (f"; {retrace}" if retrace else "")
    replay_halfway, replay = guarded(start_carry)

    def concatenate(a: Any, b: Any) -> np.ndarray:
        return np.concatenate([np.asarray(a), np.asarray(b)])

    states = _batch_first(state) if vec.batch_native else state
    return Rollout(
        env=env,
        batch_size=batch_size,
        num_steps=num_steps,
        first=jax.tree.map(np.asarray, first),
        first_states=jax.tree.map(np.asarray, states),
        mapped_first=None if mapped_reset is None else jax.tree.map(np.asarray, mapped_reset[1]),
        mapped_first_states=None if mapped_reset is None else jax.tree.map(np.asarray, mapped_reset[0]),
        record=jax.tree.map(concatenate, first_half, second_half),
        halfway=jax.tree.map(np.asarray, halfway),
        replay=jax.tree.map(np.asarray, replay),
        replay_halfway=jax.tree.map(np.asarray, replay_halfway),
        retrace=retrace,
    )


def _restart(timestep: TimeStep) -> tuple[Any, Any]:
    """What ``AutoReset`` puts into the TimeStep where an episode ended."""
    return timestep.obs, timestep.action_mask


def _step_recorder(env: MultiAgentEnv, batch: int) -> Callable[..., dict[str, Any]]:
    """The per-step record (see ``Rollout.record``), as a function traced inside the rollout."""
    discrete = [g for g in env.groups if isinstance(env.action_space(g), Discrete)]

    def record(
        mask: Any, actions: Any, raw: TimeStep, timestep: TimeStep, restart: Any, done: Array
    ) -> dict[str, Any]:
        def in_space(obs: Any) -> dict[str, Array]:
            return {g: _per_env_all(env.observation_space(g).contains(obs[g]), batch) for g in env.groups}

        def legal(group: str) -> Array:
            taken = jnp.take_along_axis(mask[group], actions[group][..., None].astype(jnp.int32), axis=-1)
            return _per_env_all(taken, batch)

        continues = _per_env_equal(_restart(timestep), _restart(raw), batch)
        floats = {"obs": timestep.obs, "reward": timestep.reward, "info": timestep.info}
        return {
            "done": done,
            "obs_in_space": in_space(timestep.obs),
            "final_obs_in_space": in_space(raw.obs),
            "mask_has_legal": {
                g: _per_env_all(jnp.any(timestep.action_mask[g], axis=-1), batch) for g in discrete
            },
            "mask_all_legal": {g: _per_env_all(timestep.action_mask[g], batch) for g in discrete},
            "sample_legal": {g: legal(g) for g in discrete},
            "final_obs_is_raw": _per_env_equal(timestep.info["final_obs"], raw.obs, batch),
            "transition_is_raw": {
                f: _per_env_equal(getattr(timestep, f), getattr(raw, f), batch)
                for f in ("reward", "terminated", "truncated")
            },
            "continues": done | continues,
            "restarts": ~done | _per_env_equal(_restart(timestep), restart, batch),
            "truncated": jnp.any(jnp.stack([_per_env_any(raw.truncated[g], batch) for g in env.groups]), 0),
            "ended_both_flags": {
                g: done & jnp.any(raw.terminated[g] & raw.truncated[g], axis=-1) for g in env.groups
            },
            "finite": {
                path: _per_env_all(jnp.isfinite(leaf), batch)
                for path, leaf in _leaves(floats)
                if jnp.issubdtype(leaf.dtype, jnp.floating)
            },
            "digest": {path: _digest(leaf, batch) for path, leaf in _leaves(timestep._asdict())},
        }

    return record


def _leaves(tree: Any) -> list[tuple[str, Any]]:
    """``(name, leaf)`` pairs, named like ``obs['agents']`` or ``state.pos`` (the first key bare)."""
    return [(_name(path), leaf) for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]]


def _name(path: tuple[Any, ...]) -> str:
    if not path:
        return ""
    head = path[0].key if isinstance(path[0], jax.tree_util.DictKey) else jax.tree_util.keystr(path[:1])
    return f"{head}{jax.tree_util.keystr(tuple(path[1:]))}"


def _per_env_all(x: Array, batch: int) -> Array:
    return jnp.all(jnp.reshape(x, (batch, -1)), axis=1)


def _per_env_any(x: Array, batch: int) -> Array:
    return jnp.any(x.reshape(batch, -1), axis=1)


def _per_env_equal(a: Any, b: Any, batch: int) -> Array:
    """``[B]``: for each env, every leaf of ``a`` equals the same leaf of ``b``."""
    equal = jnp.ones((batch,), bool)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        equal = equal & _per_env_all(x == y, batch)
    return equal


def _per_leaf_close(a: Any, b: Any, batch: int) -> dict[str, Array]:
    """``{path: [B]}``: each leaf of ``a`` within ``BATCH_TOLERANCE`` of ``b`` (equal if not a float)."""

    def close(x: Array, y: Array) -> Array:
        if x.shape != y.shape:
            return jnp.zeros((batch,), bool)
        if jnp.issubdtype(x.dtype, jnp.inexact):
            return _per_env_all(jnp.abs(x - y) <= BATCH_TOLERANCE * (1 + jnp.abs(y)), batch)
        return _per_env_all(x == y, batch)

    return {path: close(x, y) for (path, x), y in zip(_leaves(a), jax.tree.leaves(b), strict=True)}


def _digest(x: Array, batch: int) -> Array:
    """``[B]`` uint32 fingerprint of each env's values: bit patterns weighted by position, so a changed
    or permuted value changes it. Two runs from the same key must give the same fingerprints."""
    x = jnp.reshape(x, (batch, -1))
    if jnp.issubdtype(x.dtype, jnp.floating):
        bits = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.uint32)
    else:
        bits = x.astype(jnp.uint32)
    weights = 2 * jnp.arange(x.shape[1], dtype=jnp.uint32) + 1
    return jnp.sum(bits * weights[None], axis=1, dtype=jnp.uint32)


def _batch_first(tree: Any) -> Any:
    return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), tree)


def _aval(leaf: Any) -> tuple[tuple[int, ...], Any, bool]:
    aval = jax.typeof(leaf) if hasattr(jax, "typeof") else leaf.aval  # older jax: .aval
    return tuple(aval.shape), aval.dtype, bool(getattr(aval, "weak_type", False))


def _check_step_like_reset(first: TimeStep, step: TimeStep, first_state: Any, state: Any) -> list[str]:
    """While tracing the step: raise if its TimeStep or state differ in structure, shape or dtype from
    reset's; return the state leaves that differ only in weak type (a jitted step fed its own state would
    be traced again for them)."""
    for field in _TIMESTEP_FIELDS:
        if jax.tree.structure(getattr(first, field)) != jax.tree.structure(getattr(step, field)):
            _fail("jit_vmap", f"TimeStep.{field} pytree structure differs between reset and step")
    # AutoReset adds final_obs to reset's info; every key the step reports must be there too.
    missing = sorted(set(step.info) - set(first.info))
    if missing:
        _fail("jit_vmap", f"TimeStep.info keys {missing} appear after step but not after reset")
    after_reset = {
        **{f: getattr(first, f) for f in _TIMESTEP_FIELDS},
        "info": {k: first.info[k] for k in step.info},
    }
    after_step = {**{f: getattr(step, f) for f in _TIMESTEP_FIELDS}, "info": step.info}
    for (path, a), b in zip(_leaves(after_reset), jax.tree.leaves(after_step), strict=True):
        if _aval(a)[:2] != _aval(b)[:2]:
            _fail("jit_vmap", f"TimeStep{path} is {_describe(b)} after step but {_describe(a)} after reset")
    if jax.tree.structure(first_state) != jax.tree.structure(state):
        _fail("jit_vmap", "the state's pytree structure differs between reset and step")
    weak = []
    for (path, a), b in zip(_leaves(first_state), jax.tree.leaves(state), strict=True):
        if _aval(a)[:2] != _aval(b)[:2]:
            _fail("jit_vmap", f"state{path} is {_describe(b)} after step but {_describe(a)} after reset")
        if _aval(a)[2] != _aval(b)[2]:
            kind = "weakly" if _aval(b)[2] else "strongly"
            weak.append(
                f"state{path} is {kind} typed after step but not after reset (a jitted step retraces)"
            )
    return weak


def _describe(leaf: Any) -> str:
    shape, dtype, _ = _aval(leaf)
    return f"{dtype}{list(shape)}"


def _record_items(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """``record``'s arrays named for messages: ``digest of reward['agents']``, ``obs_in_space of red``."""
    items = []
    for key, value in record.items():
        if isinstance(value, dict):
            items += [(f"{key} of {name}", leaf) for name, leaf in value.items()]
        else:
            items.append((key, value))
    return items


def _first_failure(flags: Any) -> tuple[int, int] | None:
    """``(step, env)`` of the first False in a ``[num_steps, batch]`` record (steps counted from 1)."""
    bad = np.argwhere(~np.asarray(flags, bool))
    return None if bad.size == 0 else (int(bad[0][0]) + 1, int(bad[0][1]))


def _expect(flags: Any, check: str, message: str) -> None:
    where = _first_failure(flags)
    if where is not None:
        _fail(check, f"{message} (step {where[0]}, env {where[1]})")


def _rollout(env: MultiAgentEnv, rollout: Rollout | None) -> Rollout:
    if rollout is None:
        return collect_rollout(env)
    if rollout.env is not env:
        raise ValueError("the rollout was collected from another env object")
    return rollout


def check_spaces(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """Groups are non-empty, agent names unique, and every group has a Space for obs and actions.

    Static: ``rollout`` is accepted for a uniform signature and not needed."""
    del rollout
    if not env.groups:
        _fail("spaces", "env.groups is empty")
    if len(set(env.agents)) != len(env.agents):
        _fail("spaces", f"agent names are not unique: {env.agents}")
    for group, names in env.groups.items():
        if not names:
            _fail("spaces", f"group {group!r} has no agents")
        for kind, space in (
            ("observation", env.observation_space(group)),
            ("action", env.action_space(group)),
        ):
            if not isinstance(space, Space):
                _fail("spaces", f"{kind}_space({group!r}) is {type(space).__name__}, not a Space")
        action_space = env.action_space(group)
        if not isinstance(action_space, Discrete | MultiDiscrete | Box):
            _fail("spaces", f"action_space({group!r}) must be Discrete, MultiDiscrete or Box")


def _check_timestep_shapes(
    env: MultiAgentEnv, timestep: TimeStep, batch: tuple[int, ...], where: str
) -> None:
    for group in env.groups:
        n = env.group_size(group)
        expected = {
            "obs": (*batch, n, *env.observation_space(group).shape),
            "reward": (*batch, n),
            "terminated": (*batch, n),
            "truncated": (*batch, n),
        }
        for field, shape in expected.items():
            value = getattr(timestep, field).get(group)
            if value is None:
                _fail(where, f"TimeStep.{field} has no entry for group {group!r}")
            if tuple(value.shape) != shape:
                _fail(where, f"TimeStep.{field}[{group!r}] has shape {tuple(value.shape)}, expected {shape}")
        for flag in ("terminated", "truncated"):
            if getattr(timestep, flag)[group].dtype != jnp.bool_:
                _fail(where, f"TimeStep.{flag}[{group!r}] must be bool")
        space = env.action_space(group)
        if isinstance(space, Discrete):
            mask = timestep.action_mask.get(group)
            if mask is None or tuple(mask.shape) != (*batch, n, space.n) or mask.dtype != jnp.bool_:
                got = None if mask is None else (tuple(mask.shape), mask.dtype)
                _fail(where, f"action_mask[{group!r}] must be bool {(*batch, n, space.n)}, got {got}")


def check_jit_vmap(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """reset and step work under ``jit`` and ``vmap`` (a single reset too), shapes follow the spaces, the
    TimeStep structure and dtypes are the same after reset and step, and the jitted rollout fed its own
    output is not traced again (``chex.assert_max_traces``)."""
    rollout = _rollout(env, rollout)  # shapes and structure are checked while it is traced
    _check_timestep_shapes(env, rollout.first, (rollout.batch_size,), "jit_vmap/reset")
    if rollout.retrace is not None:
        _fail("jit_vmap", rollout.retrace)


def check_determinism(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """The same key gives an identical run; envs reset with different keys do not all start alike."""
    rollout = _rollout(env, rollout)
    half = rollout.num_steps // 2
    for (name, replayed), (_, recorded) in zip(
        _record_items(rollout.replay), _record_items(rollout.record), strict=True
    ):
        differs = np.asarray(replayed) != np.asarray(recorded)[:half]
        _expect(~differs, "determinism", f"same key, different {name}")
    names = ("state", "action_mask", "key")
    for (name, replayed), (_, recorded) in zip(
        _leaves(dict(zip(names, rollout.replay_halfway, strict=True))),
        _leaves(dict(zip(names, rollout.halfway, strict=True))),
        strict=True,
    ):
        if not np.array_equal(np.asarray(replayed), np.asarray(recorded)):
            _fail("determinism", f"same key, different {name} after {half} steps")
    # A reset may have few distinct outcomes (simple_crypto has four), so two envs can match by chance;
    # the reset ignores its key only if every env of the batch starts alike.
    for label, first in (("", rollout.first), (" (jax.vmap path)", rollout.mapped_first)):
        if first is None or not env.random_reset:
            continue
        leaves = [np.asarray(leaf) for leaf in jax.tree.leaves(first.obs)]
        if all(
            all(np.array_equal(leaf[b], leaf[0]) for leaf in leaves) for b in range(1, rollout.batch_size)
        ):
            _fail(
                "determinism",
                f"all {rollout.batch_size} envs, reset with different keys, gave the same initial "
                f"observations{label}",
            )


def check_observations_in_space(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """Every observation from reset, from the random steps and of every ended episode (``final_obs``) lies
    in its group's observation space, with its dtype."""
    rollout = _rollout(env, rollout)
    for group in env.groups:
        space = env.observation_space(group)
        obs = rollout.first.obs[group]
        if obs.dtype != space.dtype:
            _fail("obs_in_space", f"obs[{group!r}] dtype {obs.dtype}, space says {space.dtype}")
        if not bool(np.all(space.contains(obs))):
            _fail("obs_in_space", f"reset obs[{group!r}] leaves {space}")
        _expect(rollout.record["obs_in_space"][group], "obs_in_space", f"step obs[{group!r}] leaves {space}")
        _expect(
            rollout.record["final_obs_in_space"][group],
            "obs_in_space",
            f"the last obs[{group!r}] of an episode leaves {space}",
        )


def check_action_masks(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """Masks leave each agent at least one legal action, sampling with a mask stays legal, only
    ``Discrete`` groups have a mask, and an env that declares ``all_actions_legal`` masks nothing."""
    rollout = _rollout(env, rollout)
    for group in env.groups:
        space = env.action_space(group)
        if not isinstance(space, Discrete):
            if group in rollout.first.action_mask:
                _fail("action_masks", f"group {group!r} has {space} actions but an action_mask entry")
            continue
        if not np.all(np.any(rollout.first.action_mask[group], axis=-1)):
            _fail("action_masks", f"some agent of {group!r} has no legal action after reset")
        _expect(
            rollout.record["mask_has_legal"][group],
            "action_masks",
            f"some agent of {group!r} has no legal action",
        )
        _expect(
            rollout.record["sample_legal"][group],
            "action_masks",
            f"Discrete.sample picked masked actions for {group!r}",
        )
        if env.all_actions_legal:
            if not np.all(rollout.first.action_mask[group]):
                _fail("action_masks", f"all_actions_legal is set but {group!r} masks an action at reset")
            _expect(
                rollout.record["mask_all_legal"][group],
                "action_masks",
                f"all_actions_legal is set but {group!r} has an illegal action",
            )


def check_auto_reset(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """With ``AutoReset``: on the step an episode ends, ``info["final_obs"]`` is the raw step's obs,
    ``obs`` and the action mask are a fresh reset's (from the documented reset key), flags and reward
    describe the ended episode, and no agent is both terminated and truncated; elsewhere ``obs`` and the
    mask are the raw step's. At least one episode must end within the rollout."""
    rollout = _rollout(env, rollout)
    record = rollout.record
    _expect(record["final_obs_is_raw"], "auto_reset", "final_obs vs the raw step's obs: values differ")
    for field, same in record["transition_is_raw"].items():
        _expect(same, "auto_reset", f"{field} differs from the raw step's")
    _expect(record["continues"], "auto_reset", "obs or action mask mid-episode differ from the raw step's")
    _expect(
        record["restarts"], "auto_reset", "obs or action mask after the episode ended are not a fresh reset's"
    )
    for group, both in record["ended_both_flags"].items():
        _expect(~np.asarray(both), "auto_reset", f"an agent of {group!r} is both terminated and truncated")
    if not np.any(record["done"]):
        _fail("auto_reset", f"no episode ended within {rollout.num_steps} random steps")


def check_time_limit(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """Agents are truncated only on an episode's ``params.max_steps``-th step (the time limit), so
    truncations come at least ``max_steps`` steps apart: value learners size their bootstrap passes by it
    (``training.kit.q.final_obs_rows``)."""
    rollout = _rollout(env, rollout)
    limit = int(env.default_params.max_steps)
    done = np.asarray(rollout.record["done"])
    truncated = np.asarray(rollout.record["truncated"])
    length = np.zeros(done.shape[1], np.int64)
    for step in range(done.shape[0]):
        length += 1
        early = truncated[step] & (length != limit)
        if early.any():
            env_index = int(np.argmax(early))
            _fail("time_limit", f"agents truncated on step {int(length[env_index])} of an episode "
                  f"(step {step}, env {env_index}); truncation belongs to the time limit, "
                  f"params.max_steps = {limit}")
        length = np.where(done[step], 0, length)


def check_finite(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """The whole rollout (``batch_size`` auto-reset envs, ``num_steps`` random steps) has no NaN or inf
    in its observations, rewards or info."""
    rollout = _rollout(env, rollout)
    first = {"obs": rollout.first.obs, "reward": rollout.first.reward, "info": rollout.first.info}
    for path, leaf in _leaves(first):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.floating) and not np.all(np.isfinite(leaf)):
            _fail("finite", f"non-finite values in reset {path}")
    for path, finite in rollout.record["finite"].items():
        _expect(finite, "finite", f"non-finite values in step {path}")


def check_checked_errors(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """``Checked`` rejects wrong structure, shapes, dtypes, out-of-range, NaN and masked-out values,
    naming the group, and a rejected call leaves the state usable and unchanged.

    Uses the rollout's first reset state; without a rollout it resets by itself."""
    checked = Checked(env)
    key = jax.random.PRNGKey(0)
    if rollout is None:
        state, timestep = jax.jit(checked.reset)(key)
    else:
        env_state, timestep = jax.tree.map(lambda x: jnp.asarray(x[0]), (rollout.first_states, rollout.first))
        masks = {g: m for g, m in timestep.action_mask.items() if isinstance(env.action_space(g), Discrete)}
        state = CheckedState(env_state, masks)
    before = jax.tree.map(np.asarray, state)
    good = env.sample_actions(key, timestep.action_mask)

    def expect_error(actions: Any, what: str, name: str | None) -> None:
        try:
            checked.step(key, state, actions)
        except InvalidActionError as error:
            if name is not None and repr(name) not in str(error):
                _fail("checked", f"error for {what} does not name group {name!r}: {error}")
        else:
            _fail("checked", f"Checked accepted {what}")

    expect_error([good[g] for g in env.groups], "a list instead of a dict", None)
    expect_error({**good, "no_such_group": good[next(iter(env.groups))]}, "an extra group", None)
    for group in env.groups:
        space = env.action_space(group)
        value = np.asarray(good[group])
        expect_error({**good, group: value[:-1]}, f"a short action array for {group!r}", group)
        wrong_dtype = (
            value.astype(np.float32)
            if isinstance(space, Discrete | MultiDiscrete)
            else value.astype(np.int32)
        )
        expect_error({**good, group: wrong_dtype}, f"a {wrong_dtype.dtype} action for {group!r}", group)
        out_of_range = _out_of_range(space, value)
        if out_of_range is not None:
            expect_error({**good, group: out_of_range}, f"an out-of-range action for {group!r}", group)
        if isinstance(space, Box):
            with_nan = value.copy()
            with_nan.reshape(-1)[0] = np.nan
            expect_error({**good, group: with_nan}, f"a NaN action for {group!r}", group)
        if isinstance(space, Discrete):
            mask = np.asarray(timestep.action_mask[group]).reshape(-1, space.n)
            forbidden = np.argwhere(~mask)
            if forbidden.size:  # the first agent with a masked-out action takes it
                agent, action = forbidden[0]
                masked = value.copy()
                masked.reshape(-1)[agent] = action
                expect_error({**good, group: masked}, f"a masked-out action for {group!r}", group)
    after = jax.tree.map(np.asarray, state)
    _assert_tree_equal("checked", before, after, "state after rejected calls")
    # The state is still usable: the good actions pass the eager check and step, checked on the device,
    # under jit (compiling the step is several times quicker than running it op by op).
    checked.validate(good, state.action_mask)
    jax.block_until_ready(jax.jit(checked.step)(key, state, good))


def _out_of_range(space: Space, value: np.ndarray) -> np.ndarray | None:
    bad = value.copy()
    if isinstance(space, Discrete):
        bad.flat[0] = space.n
    elif isinstance(space, MultiDiscrete):
        bad.reshape(-1, len(space.nvec))[0, 0] = space.nvec[0]
    elif isinstance(space, Box):
        if not np.isfinite(space.high).any():
            return None
        index = int(np.flatnonzero(np.isfinite(space.high))[0])
        bad.reshape(-1, int(np.prod(space.shape)))[0, index] = space.high.flat[index] + 1.0
    return bad


def check_render(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """If the env renders: ``render`` traces under ``jit`` to ``uint8[H, W, 3]``, and a jitted ``vmap``
    renders two of the rollout's reset states into ``[2, H, W, 3]`` frames that are not a flat colour."""
    if not env.renders:
        return
    rollout = _rollout(env, rollout)
    states = jax.tree.map(lambda x: jnp.asarray(x[:2]), rollout.first_states)
    frame = jax.eval_shape(env.render, jax.tree.map(lambda x: x[0], states))
    if frame.dtype != jnp.uint8 or len(frame.shape) != 3 or frame.shape[-1] != 3:
        _fail("render", f"render returned {frame.dtype} {tuple(frame.shape)}, expected uint8 [H, W, 3]")
    frames = np.asarray(jax.jit(jax.vmap(env.render))(states))
    if tuple(frames.shape) != (2, *frame.shape):
        _fail("render", f"vmapped render gave shape {tuple(frames.shape)}")
    if int(frames[0].min()) == int(frames[0].max()):
        _fail("render", "frame is a single flat colour")


def check_batched_matches_vmap(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """For a ``BatchNativeEnv``, the batch-native path and the ``jax.vmap`` path agree: the same resets,
    and at every step of the native rollout, the vmap path stepped from the same state gives the same
    state and TimeStep (within ``BATCH_TOLERANCE``)."""
    if not isinstance(env, BatchNativeEnv):
        return
    rollout = _rollout(env, rollout)
    assert rollout.mapped_first is not None  # collected for every BatchNativeEnv
    native = {"state": rollout.first_states, "timestep": rollout.first._asdict()}
    mapped = {"state": rollout.mapped_first_states, "timestep": rollout.mapped_first._asdict()}
    for (path, a), b in zip(_leaves(native), jax.tree.leaves(mapped), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or not np.allclose(a, b, rtol=BATCH_TOLERANCE, atol=BATCH_TOLERANCE):
            _fail("batched_vs_vmap", f"paths disagree after reset at {path}")
    for path, close in rollout.record["matches_vmap"].items():
        _expect(close, "batched_vs_vmap", f"paths disagree at {path}")


def _assert_tree_equal(check: str, expected: Any, actual: Any, what: str) -> None:
    if jax.tree.structure(expected) != jax.tree.structure(actual):
        _fail(check, f"{what}: structure {jax.tree.structure(actual)} != {jax.tree.structure(expected)}")
    for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(actual), strict=True):
        if not np.array_equal(np.asarray(a), np.asarray(b)):
            _fail(check, f"{what}: values differ")


ALL_CHECKS: tuple[Callable[[MultiAgentEnv, Rollout | None], None], ...] = (
    check_spaces,
    check_jit_vmap,
    check_determinism,
    check_observations_in_space,
    check_action_masks,
    check_auto_reset,
    check_time_limit,
    check_finite,
    check_checked_errors,
    check_render,
    check_batched_matches_vmap,
)
"""Every check, in order; each takes ``(env, rollout=None)``."""


def check_env(env: MultiAgentEnv, rollout: Rollout | None = None) -> None:
    """Run every conformance check on a per-env ``env`` over one rollout (collected here unless given);
    raises ``ConformanceError`` on the first failure."""
    if isinstance(env, VecEnv):
        raise TypeError("check_env takes a per-env env; pass env.env instead of the VecEnv")
    check_spaces(env)
    rollout = _rollout(env, rollout)
    for check in ALL_CHECKS:
        check(env, rollout)
