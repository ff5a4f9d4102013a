"""Conformance checks every environment must pass; usable on your own envs.

Each ``check_*`` function raises ``ConformanceError`` (an ``AssertionError``) describing the first
violation and returns None on success, so a forgotten result can never hide a failure. ``check_env``
runs them all. Pass a *per-env* ``MultiAgentEnv`` (not a ``VecEnv``): the checks batch it themselves.
"""

from __future__ import annotations

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
from jaxmarl_suite.wrappers.checked import Checked, InvalidActionError

Array = jax.Array


class ConformanceError(AssertionError):
    """An environment broke the API contract (docs/api.md)."""


def _fail(check: str, message: str) -> NoReturn:
    raise ConformanceError(f"[{check}] {message}")


def _rollout(env: MultiAgentEnv, key: Array, num_steps: int) -> tuple[TimeStep, TimeStep]:
    """Reset, then ``num_steps`` random legal steps: (reset TimeStep, stacked step TimeSteps)."""
    reset_key, run_key = jax.random.split(key)
    state, first = env.reset(reset_key)

    def body(carry: tuple[Any, TimeStep, Array], _: None) -> tuple[tuple[Any, TimeStep, Array], TimeStep]:
        state, timestep, key = carry
        key, action_key, step_key = jax.random.split(key, 3)
        actions = env.sample_actions(action_key, timestep.action_mask)
        state, timestep = env.step(step_key, state, actions)
        return (state, timestep, key), timestep

    _, trajectory = jax.lax.scan(body, (state, first, run_key), None, length=num_steps)
    return first, trajectory


def check_spaces(env: MultiAgentEnv) -> None:
    """Groups are non-empty, agent names unique, and every group has a Space for obs and actions."""
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


def _step_traced_once(env: MultiAgentEnv) -> Callable[..., tuple[Any, TimeStep]]:
    # Built outside check_jit_vmap: chex rejects functions whose qualified name contains "vmap.".
    # chex counts traces per code object, so forget counts left by earlier envs.
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched_step(keys: Array, state: Any, actions: Any) -> tuple[Any, TimeStep]:
        return jax.vmap(env.step)(keys, state, actions)

    return batched_step


def check_jit_vmap(env: MultiAgentEnv, batch_size: int = 16, seed: int = 0) -> None:
    """reset and step work under ``jit`` and ``vmap`` (batch ``batch_size``), shapes follow the spaces,
    the TimeStep structure is the same after reset and step, and a jitted step traces only once."""
    key = jax.random.PRNGKey(seed)
    keys = jax.random.split(key, batch_size)
    state, first = jax.jit(jax.vmap(env.reset))(keys)
    _check_timestep_shapes(env, first, (batch_size,), "jit_vmap/reset")

    step = _step_traced_once(env)
    timestep = first
    for t in range(3):
        action_keys = jax.random.split(jax.random.fold_in(key, t), batch_size)
        actions = jax.vmap(env.sample_actions)(action_keys, timestep.action_mask)
        state, timestep = step(jax.random.split(jax.random.fold_in(key, 100 + t), batch_size), state, actions)
        _check_timestep_shapes(env, timestep, (batch_size,), "jit_vmap/step")
    if jax.tree.structure(first) != jax.tree.structure(timestep):
        _fail("jit_vmap", "TimeStep pytree structure differs between reset and step")
    unbatched_state, single = jax.jit(env.reset)(key)
    _check_timestep_shapes(env, single, (), "jit_vmap/single reset")


def check_determinism(env: MultiAgentEnv, num_steps: int = 50, seed: int = 0) -> None:
    """The same key gives an identical trajectory; a different key gives a different one."""
    rollout = jax.jit(lambda k: _rollout(AutoReset(env), k, num_steps))
    first = rollout(jax.random.PRNGKey(seed))
    again = rollout(jax.random.PRNGKey(seed))
    for (path, a), b in zip(
        jax.tree_util.tree_flatten_with_path(first)[0], jax.tree.leaves(again), strict=True
    ):
        if not np.array_equal(np.asarray(a), np.asarray(b)):
            _fail("determinism", f"same key, different values at {jax.tree_util.keystr(path)}")
    # A reset may have few distinct observable outcomes (simple_crypto has four), so one other key can
    # match by chance; the reset ignores its key only if several other keys all match.
    first_obs = [np.asarray(a) for a in jax.tree.leaves(first[0].obs)]
    if all(
        all(np.array_equal(a, np.asarray(b)) for a, b in zip(first_obs, jax.tree.leaves(obs), strict=True))
        for obs in (rollout(jax.random.PRNGKey(seed + i))[0].obs for i in range(1, 9))
    ):
        _fail("determinism", "eight other keys all gave the same initial observations")


def check_observations_in_space(env: MultiAgentEnv, num_steps: int = 100, seed: int = 0) -> None:
    """Every observation from reset and from random steps lies in its group's observation space."""
    first, trajectory = jax.jit(lambda k: _rollout(AutoReset(env), k, num_steps))(jax.random.PRNGKey(seed))
    for group in env.groups:
        space = env.observation_space(group)
        for label, obs in (("reset", first.obs[group]), ("step", trajectory.obs[group])):
            if obs.dtype != space.dtype:
                _fail("obs_in_space", f"{label} obs[{group!r}] dtype {obs.dtype}, space says {space.dtype}")
            if not bool(jnp.all(space.contains(obs))):
                _fail("obs_in_space", f"{label} obs[{group!r}] leaves {space}")


def check_action_masks(env: MultiAgentEnv, num_steps: int = 100, seed: int = 0) -> None:
    """Masks leave each live agent at least one legal action, and sampling with a mask stays legal."""
    first, trajectory = jax.jit(lambda k: _rollout(AutoReset(env), k, num_steps))(jax.random.PRNGKey(seed))
    key = jax.random.PRNGKey(seed + 1)
    for group in env.groups:
        space = env.action_space(group)
        if not isinstance(space, Discrete):
            if group in first.action_mask:
                _fail("action_masks", f"group {group!r} has {space} actions but an action_mask entry")
            continue
        masks = jnp.concatenate([first.action_mask[group][None], trajectory.action_mask[group]])
        if not bool(jnp.all(jnp.any(masks, axis=-1))):
            _fail("action_masks", f"some agent of {group!r} has no legal action")
        samples = space.sample(key, masks.shape[:-1], masks)
        legal = jnp.take_along_axis(masks, samples[..., None], axis=-1)
        if not bool(jnp.all(legal)):
            _fail("action_masks", f"Discrete.sample picked masked actions for {group!r}")


def check_auto_reset(env: MultiAgentEnv, max_steps: int = 1000, seed: int = 0) -> None:
    """With ``AutoReset``: on the step an episode ends, ``info["final_obs"]`` is the raw step's obs,
    ``obs`` is a fresh reset's obs (from the documented reset key), flags describe the ended episode;
    elsewhere ``final_obs == obs``. At least one episode must end within ``max_steps``."""
    wrapped = AutoReset(env)
    state, timestep = wrapped.reset(jax.random.PRNGKey(seed))
    raw_step = jax.jit(env.step)
    wrapped_step = jax.jit(wrapped.step)
    raw_reset = jax.jit(env.reset)
    key = jax.random.PRNGKey(seed + 1)
    for _ in range(max_steps):
        key, action_key, step_key = jax.random.split(key, 3)
        actions = env.sample_actions(action_key, timestep.action_mask)
        raw_state, raw = raw_step(jax.random.split(step_key)[0], state, actions)
        state, timestep = wrapped_step(step_key, state, actions)
        _assert_tree_equal(
            "auto_reset", raw.obs, timestep.info["final_obs"], "final_obs vs the raw step's obs"
        )
        _assert_tree_equal("auto_reset", raw.reward, timestep.reward, "reward on the done step")
        _assert_tree_equal("auto_reset", raw.terminated, timestep.terminated, "terminated")
        _assert_tree_equal("auto_reset", raw.truncated, timestep.truncated, "truncated")
        if bool(episode_done(raw)):
            _, fresh = raw_reset(jax.random.split(step_key)[1])
            _assert_tree_equal("auto_reset", fresh.obs, timestep.obs, "obs after the episode ended")
            _assert_tree_equal(
                "auto_reset", fresh.action_mask, timestep.action_mask, "action mask after reset"
            )
            for group in env.groups:
                both = raw.terminated[group] & raw.truncated[group]
                if bool(jnp.any(both)):
                    _fail("auto_reset", f"an agent of {group!r} is both terminated and truncated")
            return
        _assert_tree_equal("auto_reset", raw.obs, timestep.obs, "obs mid-episode")
    _fail("auto_reset", f"no episode ended within {max_steps} random steps")


def check_finite(env: MultiAgentEnv, num_steps: int = 1000, batch_size: int = 16, seed: int = 0) -> None:
    """``num_steps`` random steps of a batch of auto-reset envs produce no NaN or inf."""
    vec = AutoReset(VecEnv(env, batch_size))
    first, trajectory = jax.jit(lambda k: _rollout(vec, k, num_steps))(jax.random.PRNGKey(seed))
    for label, tree in (("reset", first), ("step", trajectory)):
        for path, leaf in jax.tree_util.tree_flatten_with_path((tree.obs, tree.reward, tree.info))[0]:
            if jnp.issubdtype(leaf.dtype, jnp.floating) and not bool(jnp.all(jnp.isfinite(leaf))):
                _fail("finite", f"non-finite values in {label} {jax.tree_util.keystr(path)}")


def check_checked_errors(env: MultiAgentEnv, seed: int = 0) -> None:
    """``Checked`` rejects wrong structure, shapes, dtypes, out-of-range, NaN and masked-out values,
    naming the group, and a rejected call leaves the state usable and unchanged."""
    checked = Checked(env)
    key = jax.random.PRNGKey(seed)
    state, timestep = checked.reset(key)
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
    checked.step(key, state, good)


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


def check_render(env: MultiAgentEnv, seed: int = 0) -> None:
    """If the env renders: a jitted ``render`` returns ``uint8[H, W, 3]``, and renders a batch under vmap."""
    if not env.renders:
        return
    state, _ = env.reset(jax.random.PRNGKey(seed))
    frame = jax.jit(env.render)(state)
    if frame.dtype != jnp.uint8 or frame.ndim != 3 or frame.shape[-1] != 3:
        _fail("render", f"render returned {frame.dtype} {tuple(frame.shape)}, expected uint8 [H, W, 3]")
    states, _ = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(seed), 2))
    frames = jax.jit(jax.vmap(env.render))(states)
    if tuple(frames.shape) != (2, *frame.shape):
        _fail("render", f"vmapped render gave shape {tuple(frames.shape)}")
    if int(frame.min()) == int(frame.max()):
        _fail("render", "frame is a single flat colour")


def check_batched_matches_vmap(
    env: MultiAgentEnv, batch_size: int = 8, num_steps: int = 60, seed: int = 0
) -> None:
    """For a ``BatchNativeEnv``, the batch-native path and the ``jax.vmap`` path agree: same resets, and
    at every step of a native rollout, the vmap path stepped from the same state gives the same result.

    Comparing one step at a time keeps the tolerance tight (1e-5): over a long free run, float32
    rounding differences between the two compiled programs are amplified by contacts in crowded worlds.
    """
    if not isinstance(env, BatchNativeEnv):
        return
    native = AutoReset(VecEnv(env, batch_size))
    mapped = AutoReset(VecEnv(env, batch_size, use_vmap=True))

    def batch_first(tree: Any) -> Any:
        return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), tree)

    def run(key: Array) -> tuple[Any, Any]:
        reset_key, run_key = jax.random.split(key)
        state, first = native.reset(reset_key)
        _, first_mapped = mapped.reset(reset_key)

        def body(carry: tuple[Any, TimeStep, Array], _: None) -> tuple[Any, tuple[Any, Any]]:
            state, timestep, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            actions = native.sample_actions(action_key, timestep.action_mask)
            next_state, next_timestep = native.step(step_key, state, actions)
            mapped_state, mapped_timestep = mapped.step(step_key, batch_first(state), actions)
            return (next_state, next_timestep, key), (
                (batch_first(next_state), next_timestep),
                (mapped_state, mapped_timestep),
            )

        _, (native_steps, mapped_steps) = jax.lax.scan(body, (state, first, run_key), None, length=num_steps)
        return (first, native_steps), (first_mapped, mapped_steps)

    native_run, mapped_run = jax.jit(run)(jax.random.PRNGKey(seed))
    for (path, a), b in zip(
        jax.tree_util.tree_flatten_with_path(native_run)[0], jax.tree.leaves(mapped_run), strict=True
    ):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-5, atol=1e-5):
            _fail("batched_vs_vmap", f"paths disagree at {jax.tree_util.keystr(path)}")


def _assert_tree_equal(check: str, expected: Any, actual: Any, what: str) -> None:
    if jax.tree.structure(expected) != jax.tree.structure(actual):
        _fail(check, f"{what}: structure {jax.tree.structure(actual)} != {jax.tree.structure(expected)}")
    for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(actual), strict=True):
        if not np.array_equal(np.asarray(a), np.asarray(b)):
            _fail(check, f"{what}: values differ")


ALL_CHECKS: tuple[Callable[[MultiAgentEnv], None], ...] = (
    check_spaces,
    check_jit_vmap,
    check_determinism,
    check_observations_in_space,
    check_action_masks,
    check_auto_reset,
    check_finite,
    check_checked_errors,
    check_render,
    check_batched_matches_vmap,
)


def check_env(env: MultiAgentEnv) -> None:
    """Run every conformance check on a per-env ``env``; raises ``ConformanceError`` on the first failure."""
    if isinstance(env, VecEnv):
        raise TypeError("check_env takes a per-env env; pass env.env instead of the VecEnv")
    for check in ALL_CHECKS:
        check(env)
