"""Env throughput benchmark: our batch-native path, our ``jax.vmap`` fallback, and JaxMARL when installed.

Every measurement runs ``steps`` env steps inside one jitted ``lax.scan``, with random actions drawn
inside the scan and a scalar reduction of rewards and observations returned, so nothing is dead code.
**One env step = every agent of one env acting once**; env steps/s = ``batch * steps / seconds``.
Compile time (tracing, lowering and XLA compilation) is reported apart from the steady-state speed,
which is the best of ``repeats`` timed repeats. A repeat chains enough calls to last at least
``min_repeat_s``, so tiny batches are not timed at the resolution of a single dispatch. The sides of one
row (ours, our vmap path, JaxMARL) are compiled first and then take turns, one repeat each per round, so
a slow spell of a shared machine falls on all of them and the ratio stays like for like; a row holds all
its sides in memory at once, and releases them before the next.

Used by ``scripts/bench_envs.py`` and ``jaxmarl-suite bench``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.compat.jaxmarl_scripts import stdout_to_stderr
from jaxmarl_suite.core.registry import EnvSpec, env_spec, make
from jaxmarl_suite.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers.auto_reset import AutoReset

Array = jax.Array
Carry = Any
Progress = Callable[[str], None]

OBS_WEIGHT = 1e-9
"""Observations enter the returned scalar with this weight: enough to keep them live, not to matter."""


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------
# Random actions
# --------------------------------------------------------------------------------------------------


def sample_space(key: Array, space: Space, batch_shape: tuple[int, ...]) -> Array:
    """Uniform random values of ``space`` with shape ``[*batch_shape, *space.shape]``, drawn cheaply.

    ``Discrete`` uses one ``randint`` (ignoring action masks), ``MultiDiscrete`` a scaled uniform and
    ``Box`` a uniform between its bounds (a unit normal clipped to the bounds where a bound is infinite).
    """
    if isinstance(space, Discrete):
        return jax.random.randint(key, batch_shape, 0, space.n, dtype=space.dtype)
    if isinstance(space, MultiDiscrete):
        nvec = np.asarray(space.nvec)
        unit = jax.random.uniform(key, (*batch_shape, len(nvec)))
        return jnp.minimum(jnp.floor(unit * nvec), nvec - 1).astype(space.dtype)
    if isinstance(space, Box):
        shape = (*batch_shape, *space.shape)
        if np.all(np.isfinite(space.low) & np.isfinite(space.high)):
            return jax.random.uniform(key, shape, space.dtype, space.low, space.high)
        return jnp.clip(jax.random.normal(key, shape, space.dtype), space.low, space.high)
    raise TypeError(f"cannot sample actions from {space!r}")


def sample_group_actions(key: Array, env: Any, num_envs: int) -> dict[str, Array]:
    """Random actions ``{group: [B, n, *action_shape]}``, one draw per group."""
    groups = list(env.groups)
    keys = [key] if len(groups) == 1 else list(jax.random.split(key, len(groups)))
    return {
        group: sample_space(group_key, env.action_space(group), (num_envs, len(env.groups[group])))
        for group_key, group in zip(keys, groups, strict=True)
    }


def _masked_group_actions(key: Array, env: Any, num_envs: int, action_mask: dict[str, Array]) -> Any:
    """Random legal actions: uniform over ``action_mask`` for Discrete groups, ``sample_space`` elsewhere."""
    actions = sample_group_actions(key, env, num_envs)
    for index, group in enumerate(env.groups):
        if group in action_mask and isinstance(env.action_space(group), Discrete):
            noise = jax.random.uniform(jax.random.fold_in(key, index), action_mask[group].shape)
            actions[group] = jnp.argmax(jnp.where(action_mask[group], noise, -1.0), axis=-1).astype(
                env.action_space(group).dtype
            )
    return actions



# --------------------------------------------------------------------------------------------------
# Kernel counts: launch overhead, visible without a GPU
# --------------------------------------------------------------------------------------------------

FREE_OPS = frozenset({
    "parameter", "get-tuple-element", "tuple", "constant", "bitcast", "after-all", "partition-id",
    "replica-id", "opt-barrier", "domain", "add-dependency",
})
"""HLO ops that launch nothing: they name, bundle or reinterpret buffers."""
CONTROL_OPS = frozenset({"while", "conditional", "call"})
"""Ops whose cost is the computations they run, counted through them."""

_COMPUTATION = re.compile(r"^(?:ENTRY )?%([^\s(]+) .*\{\s*$")
_INSTRUCTION = re.compile(r"^\s+(?:ROOT )?%[^\s=]+ = ")
_OPCODE = re.compile(r"\s*([a-z][a-z0-9-]*)\(")
_CALLED = re.compile(r"\b(condition|body|to_apply|true_computation|false_computation)=%([^\s,}]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


@dataclasses.dataclass(frozen=True)
class KernelCounts:
    """Kernels of a compiled XLA program, from its optimised HLO.

    A kernel is a fusion, a custom call or any other op left unfused (a copy, a sort), since each is one
    launch on a GPU; ops that only name buffers are free, and control flow counts what it runs.
    ``per_iteration``: kernels one iteration of the program's main loop launches (the outermost loop
    that launches the most in all: the ``lax.scan`` over env steps, or over a training run's updates),
    nested loops times their trip counts and a conditional as its largest branch. On the CPU, JAX's
    random bits are rolled loops of 5 trips, so each draw counts about 85 there and one fusion on a GPU.
    ``per_call``: the whole program, the same way. ``loops``:
    ``(trip count, kernels per iteration)`` of each loop directly inside the main one, in program
    order (a training update's rollout, GAE and epoch loops).
    """

    per_iteration: int
    per_call: int
    loops: tuple[tuple[int, int], ...]


def _opcode(line: str) -> str | None:
    """The opcode of an HLO instruction line (after its result type, which may be a nested tuple)."""
    head = _INSTRUCTION.match(line)
    if head is None:
        return None
    rest = line[head.end():]
    if rest.startswith("("):
        depth = 0
        for index, char in enumerate(rest):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                rest = rest[index + 1:]
                break
    else:
        rest = rest.split(" ", 1)[1] if " " in rest else ""
    match = _OPCODE.match(rest)
    return match.group(1) if match else None


def kernel_counts(hlo_text: str) -> KernelCounts:
    """Count the kernels of a compiled program (``jax.jit(f).lower(...).compile().as_text()``)."""
    computations: dict[str, list[str]] = {}
    entry = current = None
    for line in hlo_text.splitlines():
        header = _COMPUTATION.match(line)
        if header and not line.startswith(" "):
            current = header.group(1)
            computations[current] = []
            if line.startswith("ENTRY"):
                entry = current
        elif current is not None and line.startswith(" "):
            computations[current].append(line)
    if entry is None:
        raise ValueError("no ENTRY computation in this HLO text (pass a compiled program's as_text())")

    memo: dict[str, int] = {}

    def launches(name: str) -> int:
        if name not in memo:
            memo[name] = sum(_instruction_launches(line) for line in computations[name])
        return memo[name]

    def _instruction_launches(line: str) -> int:
        opcode = _opcode(line)
        if opcode is None or opcode in FREE_OPS:
            return 0
        if opcode == "while":
            called = dict(_CALLED.findall(line))
            return _trip_count(line) * (launches(called["body"]) + launches(called["condition"]))
        if opcode == "conditional":
            branches = _branches(line)
            return max((launches(branch) for branch in branches), default=0)
        if opcode == "call":
            return launches(dict(_CALLED.findall(line))["to_apply"])
        return 1

    def loops_in(name: str) -> list[str]:
        """Loop instructions reachable from ``name`` without entering another loop, in order."""
        found: list[str] = []
        for line in computations[name]:
            opcode = _opcode(line)
            if opcode == "while":
                found.append(line)
            elif opcode == "call":
                found += loops_in(dict(_CALLED.findall(line))["to_apply"])
            elif opcode == "conditional":
                for branch in _branches(line):
                    found += loops_in(branch)
        return found

    outer = loops_in(entry)
    if not outer:
        return KernelCounts(launches(entry), launches(entry), ())
    main_loop = max(outer, key=_instruction_launches)  # not, say, a rolled RNG loop before it
    called = dict(_CALLED.findall(main_loop))
    body, condition = called["body"], called["condition"]
    inner = tuple(
        (_trip_count(line), launches(dict(_CALLED.findall(line))["body"])
         + launches(dict(_CALLED.findall(line))["condition"]))
        for line in loops_in(body)
    )
    return KernelCounts(launches(body) + launches(condition), launches(entry), inner)


def _trip_count(line: str) -> int:
    match = _TRIP_COUNT.search(line)
    return int(match.group(1)) if match else 1


def _branches(line: str) -> list[str]:
    match = _BRANCHES.search(line)
    if match:
        return [name.strip().lstrip("%") for name in match.group(1).split(",")]
    called = dict(_CALLED.findall(line))
    return [called[k] for k in ("true_computation", "false_computation") if k in called]


# --------------------------------------------------------------------------------------------------
# Kernels on a GPU, counted without one
# --------------------------------------------------------------------------------------------------

GPU_TARGETS = {
    "h200": """
gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_block_optin: 232448
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: 132
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 4800000000000
  l2_cache_size: 52428800
  clock_rate_ghz: 1.98
  device_memory_size: 150000000000
  cuda_compute_capability { major: 9 minor: 0 }
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 8 }
runtime_version { major: 13 minor: 0 }
device_description_str: "NVIDIA H200"
""",
}
"""XLA's description of each GPU that ``compile_for_gpu`` targets (``GpuTargetConfig`` text: the facts
XLA's GPU compiler asks a device for). The H200 SXM: 132 SMs of compute capability 9.0, 141 GB of HBM3e
at 4.8 TB/s, a 50 MiB L2 cache."""

class GpuTargetUnavailableError(RuntimeError):
    """Compiling for a GPU target needs JAX's CUDA plugin, which is not installed."""


_GPU_PLUGIN_HINT = (
    "compiling for a GPU without one needs JAX's CUDA plugin at jaxlib's version, without the CUDA "
    f"libraries: pip install \"jax[cuda13-local]=={jax.__version__}\" (then run with JAX_PLATFORMS=cpu where "
    "there is no GPU, or JAX warns that it cannot start one)"
)


@contextlib.contextmanager
def _host_callbacks_without_a_device() -> Iterator[None]:
    """Let programs with host callbacks (a training loop's logging) compile for a GPU that is not here.

    JAX asks the lowering platform's runtime client for a callback's lowering and hands XLA the Python
    callables; neither exists for a compile-only GPU target (jax issue #23971). The program is never run,
    so lowering the callback as an unregistered custom call changes none of its kernels.
    """
    from jax._src import compiler
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax

    get_backend, compile_and_load = mlir.ModuleContext.get_backend, compiler.backend_compile_and_load

    def no_backend(self: Any, optional: bool = False) -> Any:
        try:
            return get_backend(self, optional)
        except RuntimeError:  # no runtime for the target's platform on this machine
            return None

    def without_callbacks(backend: Any, module: Any, devices: Any, options: Any, callbacks: Any) -> Any:
        if isinstance(backend, _jax.CompileOnlyPyClient):
            callbacks = ()
        return compile_and_load(backend, module, devices, options, callbacks)

    mlir.ModuleContext.get_backend = no_backend  # type: ignore[method-assign]
    compiler.backend_compile_and_load = without_callbacks
    try:
        yield
    finally:
        mlir.ModuleContext.get_backend = get_backend  # type: ignore[method-assign]
        compiler.backend_compile_and_load = compile_and_load


_GPU_DEVICES: dict[str, Any] = {}


def gpu_target_device(target: str = "h200") -> Any:
    """A compile-only device of the GPU ``target`` (a ``GPU_TARGETS`` key); raises
    ``GpuTargetUnavailableError`` naming what to install when JAX's CUDA plugin is missing."""
    if target not in GPU_TARGETS:
        raise ValueError(f"unknown GPU target {target!r}; known: {sorted(GPU_TARGETS)}")
    if target not in _GPU_DEVICES:
        from jax.experimental import topologies

        try:
            topology = topologies.get_topology_desc(target, "cuda", target_config=GPU_TARGETS[target],
                                                    topology="1x1x1")
        except Exception as error:  # jax raises several types when no CUDA plugin is registered
            message = f"{_GPU_PLUGIN_HINT} ({type(error).__name__}: {error})"
            raise GpuTargetUnavailableError(message) from error
        _GPU_DEVICES[target] = topology.devices[0]
    return _GPU_DEVICES[target]


def compile_for_gpu(function: Callable[..., Any], *args: Any, target: str = "h200") -> Any:
    """``jax.jit(function)`` compiled by XLA's GPU compiler for ``target``, on this machine, with or without
    a GPU (deviceless ahead-of-time compilation). ``args`` are arrays or ``jax.ShapeDtypeStruct``s; only
    their shapes and dtypes matter. The result cannot run here; its ``as_text()`` is the optimised HLO
    that ``kernel_counts`` reads, with the fusion decisions the GPU would get."""
    sharding = jax.sharding.SingleDeviceSharding(gpu_target_device(target))
    abstract = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x), sharding=sharding), args)
    with _host_callbacks_without_a_device():
        return jax.jit(function).lower(*abstract).compile()


def gpu_kernel_counts(function: Callable[..., Any], *args: Any, target: str = "h200") -> KernelCounts:
    """``kernel_counts`` of ``function`` compiled for the GPU ``target`` (``compile_for_gpu``): the kernels
    a GPU would launch, counted on a machine without one."""
    return kernel_counts(compile_for_gpu(function, *args, target=target).as_text() or "")


# --------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------


def _leaf_sum(tree: Any) -> Array:
    leaves = [jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(tree)]
    return sum(leaves, jnp.float32(0.0))


class Timing(NamedTuple):
    """One side's measurement: compile seconds, env steps/s, and the kernels of one step."""

    compile_s: float
    steps_per_s: float
    kernels: KernelCounts


class PreparedRollout:
    """A compiled, warmed-up rollout, timed one repeat at a time so that sides can take turns.

    Calls are chained through the carry, so episodes continue across calls; ``calls`` is how many make
    one repeat (enough to last ``min_repeat_s``).
    """

    def __init__(self, init: Callable[[Array], Carry], rollout: Callable[[Carry], tuple[Carry, Array]],
                 min_repeat_s: float, seed: int = 0) -> None:
        carry = jax.block_until_ready(jax.jit(init)(jax.random.PRNGKey(seed)))
        start = time.perf_counter()
        self.compiled = jax.jit(rollout).lower(carry).compile()
        self.compile_s = time.perf_counter() - start
        """Tracing, lowering and XLA compilation of the rollout, in seconds."""
        self.kernels = kernel_counts(self.compiled.as_text() or "")
        carry, total = self.compiled(carry)  # warm-up call: first-touch allocations, thread-pool spin-up
        jax.block_until_ready(total)
        start = time.perf_counter()
        self.carry, total = self.compiled(carry)
        jax.block_until_ready(total)
        single = time.perf_counter() - start
        self.calls = max(1, int(np.ceil(min_repeat_s / max(single, 1e-9))))
        self.best_s = float("inf")
        """The fastest repeat so far, in seconds per call."""

    def repeat(self) -> float:
        """Time one repeat; returns its seconds per call and keeps the best in ``best_s``."""
        start = time.perf_counter()
        self.carry, total = self.compiled(self.carry)
        for _ in range(self.calls - 1):
            self.carry, total = self.compiled(self.carry)
        jax.block_until_ready((self.carry, total))
        seconds = (time.perf_counter() - start) / self.calls
        if not np.isfinite(float(total)):
            raise FloatingPointError("the rollout's reduction is not finite")
        self.best_s = min(self.best_s, seconds)
        return seconds


def time_interleaved(sides: Sequence[PreparedRollout], repeats: int,
                     on_error: Callable[[PreparedRollout, Exception], bool] | None = None) -> None:
    """``repeats`` rounds in which every side times one repeat in turn. A slow spell of the machine then
    falls on every side rather than on whichever ran during it, and each side's best is comparable.

    A side whose repeat raises is dropped from the later rounds when ``on_error(side, error)`` returns
    True; otherwise the error propagates."""
    active = list(sides)
    for _ in range(max(1, repeats)):
        for side in list(active):
            try:
                side.repeat()
            except Exception as error:
                if on_error is None or not on_error(side, error):
                    raise
                active.remove(side)


def _jaxmarl_dropper(sides: dict[str, PreparedRollout], notes: list[str]
                     ) -> Callable[[PreparedRollout, Exception], bool]:
    """``time_interleaved``'s ``on_error`` for a benchmark row: JaxMARL failing while timed is noted in the
    row and leaves it; ours failing is a bug, and raises."""

    def drop(side: PreparedRollout, error: Exception) -> bool:
        if side is not sides.get("jaxmarl"):
            return False
        notes.append(f"JaxMARL failed: {type(error).__name__}: {error}")
        del sides["jaxmarl"]
        return True

    return drop


def time_rollout(
    init: Callable[[Array], Carry],
    rollout: Callable[[Carry], tuple[Carry, Array]],
    repeats: int,
    min_repeat_s: float,
    seed: int = 0,
) -> tuple[float, float, KernelCounts]:
    """Compile and time ``rollout``. Returns ``(compile_s, best_seconds_per_call, kernel counts)``.

    ``init(key)`` builds the first carry (jitted, untimed). ``rollout(carry) -> (carry, scalar)`` is the
    timed function; calls are chained through the carry, so episodes continue across calls.
    """
    prepared = PreparedRollout(init, rollout, min_repeat_s, seed)
    time_interleaved([prepared], repeats)
    return prepared.compile_s, prepared.best_s, prepared.kernels


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
    if spec.family == "overcooked":
        return "overcooked"  # one JaxMARL id; the layout is an argument (``jaxmarl_kwargs``)
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


# --------------------------------------------------------------------------------------------------
# Driver and report
# --------------------------------------------------------------------------------------------------


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


def machine_info(packages: Sequence[str] = ()) -> dict[str, str]:
    """Date, CPU model, core counts, the load average at the start, Python, JAX (version, backend,
    devices), JaxMARL's version, ``XLA_FLAGS``, and the version of each of ``packages`` (for example
    ``("mujoco",)``). Every benchmark script heads its tables with this."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    devices = jax.devices()
    info = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": f"{os.cpu_count()} logical, {usable} usable by this process",
        "load average (1, 5, 15 min) at start": ", ".join(f"{x:.2f}" for x in load),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": f"{jax.default_backend()} ({len(devices)} x {devices[0].device_kind})",
        "jaxmarl": _package_version("jaxmarl"),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", "") or "(unset)",
    }
    info.update({name: _package_version(name) for name in packages})
    return info


def _package_version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:  # any failure means "not available"
        return "not installed"


def run_benchmark(
    env_ids: Sequence[str],
    batches: Sequence[int] = (1, 64, 1024, 4096),
    steps: int = 128,
    repeats: int = 3,
    compare_jaxmarl: bool = True,
    *,
    include_vmap: bool = True,
    masked_actions: bool = False,
    min_repeat_s: float = 0.2,
    progress: Progress | None = _stderr,
    compare_reference: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    reset_mode: str = "auto",
    gpu_target: str | None = None,
) -> list[dict[str, Any]]:
    """Benchmark each env at each batch size. Returns one dict per (env, batch).

    Keys: ``env``, ``batch``, ``steps``, ``ours_sps``, ``ours_compile_s``, ``vmap_sps``,
    ``vmap_compile_s``, ``jaxmarl_id``, ``jaxmarl_sps``, ``jaxmarl_compile_s``, ``ours_kernels`` and
    ``jaxmarl_kernels`` (``KernelCounts.per_iteration``: kernels per env step), ``ratio_vs_jaxmarl``
    (ours / JaxMARL), ``native_gain`` (ours / vmap path), ``reference_sps`` and ``ratio_vs_reference``
    (with ``compare_reference``: the mpe2 reference stepping one env, once per env id) and ``notes``.
    Speeds are env steps/s (one env step = all agents acting once); a measurement not taken is None.

    ``masked_actions`` draws Discrete actions uniformly over the action mask instead of a plain
    ``randint`` (slower; needed for envs whose masks forbid actions, such as Hanabi's turns), and JaxMARL's
    side then draws over its own legal moves (else ``randint``/``uniform``, as its random-policy scripts
    do). ``env_kwargs`` go to every env's constructor (e.g. ``{"enemy": "agents"}`` for SMAX, to compare
    with JaxMARL's two-team SMAX).
    ``reset_mode`` is our ``AutoReset``'s mode. ``gpu_target`` (a ``GPU_TARGETS`` key) adds
    ``ours_gpu_kernels`` and ``jaxmarl_gpu_kernels``: kernels per step of each side's rollout compiled for
    that GPU on this machine (``compile_for_gpu``; needs JAX's CUDA plugin, not a GPU).
    """
    if steps < 1 or repeats < 1 or any(int(b) < 1 for b in batches):
        raise ValueError("steps, repeats and every batch size must be positive")
    say = progress or (lambda _message: None)
    specs = [env_spec(env_id) for env_id in env_ids]  # unknown ids fail here, before any timing
    rows: list[dict[str, Any]] = []
    for spec in specs:
        kwargs = dict(env_kwargs or {})
        counterpart = jaxmarl_id(spec.env_id, kwargs) if compare_jaxmarl else None
        batch_native = VecEnv(make(spec.env_id, **kwargs), 1).batch_native
        reference_sps = None
        if compare_reference:
            say(f"[bench] {spec.env_id}: reference, one env ...")
            reference_sps = bench_reference(spec.env_id)
        for batch in batches:
            batch = int(batch)
            row: dict[str, Any] = {
                "env": spec.env_id,
                "batch": batch,
                "steps": steps,
                "ours_sps": None,
                "ours_compile_s": None,
                "vmap_sps": None,
                "vmap_compile_s": None,
                "jaxmarl_id": counterpart,
                "jaxmarl_sps": None,
                "jaxmarl_compile_s": None,
                "ours_kernels": None,
                "jaxmarl_kernels": None,
                "ours_gpu_kernels": None,
                "jaxmarl_gpu_kernels": None,
                "ratio_vs_jaxmarl": None,
                "native_gain": None,
                "reference_sps": reference_sps,
                "ratio_vs_reference": None,
                "notes": [],
            }
            say(f"[bench] {spec.env_id} B={batch}: ours: compiling ...")
            sides = {"ours": prepare_ours(spec.env_id, batch, steps, False, masked_actions, min_repeat_s,
                                          reset_mode, **kwargs)}
            if include_vmap and batch_native:
                say(f"[bench] {spec.env_id} B={batch}: vmap path: compiling ...")
                sides["vmap"] = prepare_ours(spec.env_id, batch, steps, True, masked_actions, min_repeat_s,
                                             reset_mode, **kwargs)
            elif include_vmap:
                row["notes"].append("not batch-native: ours is the vmap path")
            if counterpart is not None:
                say(f"[bench] {spec.env_id} B={batch}: JaxMARL {counterpart}: compiling ...")
                try:
                    counterpart_kwargs = jaxmarl_kwargs(spec.env_id, kwargs)
                    sides["jaxmarl"] = prepare_jaxmarl(
                        counterpart, batch, steps, min_repeat_s, masked_actions, **counterpart_kwargs
                    )
                except Exception as error:  # report, keep benchmarking the rest
                    row["notes"].append(f"JaxMARL failed: {type(error).__name__}: {error}")
            elif compare_jaxmarl:
                row["notes"].append("no JaxMARL counterpart (or jaxmarl not installed)")
            say(f"[bench] {spec.env_id} B={batch}: timing {', '.join(sides)} in turn ...")
            time_interleaved(list(sides.values()), repeats, on_error=_jaxmarl_dropper(sides, row["notes"]))
            for name, side in sides.items():
                row[f"{name}_compile_s"] = side.compile_s
                row[f"{name}_sps"] = batch * steps / side.best_s
            row["ours_kernels"] = sides["ours"].kernels.per_iteration
            if "vmap" in sides:
                row["native_gain"] = row["ours_sps"] / row["vmap_sps"]
            if "jaxmarl" in sides:
                row["jaxmarl_kernels"] = sides["jaxmarl"].kernels.per_iteration
                row["ratio_vs_jaxmarl"] = row["ours_sps"] / row["jaxmarl_sps"]
            if reference_sps:
                row["ratio_vs_reference"] = row["ours_sps"] / reference_sps
            if gpu_target is not None:
                say(f"[bench] {spec.env_id} B={batch}: compiling for {gpu_target} ...")
                row["ours_gpu_kernels"] = gpu_rollout_kernels(*ours_rollout(
                    spec.env_id, batch, steps, False, masked_actions, reset_mode, **kwargs), gpu_target
                ).per_iteration
                if "jaxmarl" in sides and counterpart is not None:
                    row["jaxmarl_gpu_kernels"] = gpu_rollout_kernels(*jaxmarl_rollout(
                        counterpart, batch, steps, masked_actions, **jaxmarl_kwargs(spec.env_id, kwargs)),
                        gpu_target).per_iteration
            say(f"[bench]   -> {_summary(row)}")
            rows.append(row)
    return rows


def _summary(row: dict[str, Any]) -> str:
    parts = [f"ours {_rate(row['ours_sps'])}/s"]
    if row["vmap_sps"] is not None:
        parts.append(f"vmap {_rate(row['vmap_sps'])}/s")
    if row["jaxmarl_sps"] is not None:
        parts.append(f"JaxMARL {_rate(row['jaxmarl_sps'])}/s (x{row['ratio_vs_jaxmarl']:.2f})")
    return ", ".join(parts)


def _rate(value: float | None) -> str:
    if value is None:
        return "—"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.2f}{suffix}"
    return f"{value:.0f}"


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def format_table(rows: Sequence[dict[str, Any]], machine: dict[str, str] | None = None) -> str:
    """Markdown: machine info, the results table, and what the columns mean.

    ``machine`` defaults to ``machine_info()`` collected now.
    """
    machine = machine_info() if machine is None else machine
    lines = [f"- **{name}**: {value}" for name, value in machine.items()]
    steps = sorted({row["steps"] for row in rows})
    lines += [
        f"- **steps per timed call**: {', '.join(map(str, steps)) or '—'} "
        "(one jitted `lax.scan`, random actions drawn inside)",
        "",
        "| env | batch | ours steps/s | ours compile s | vmap-path steps/s | ours/vmap "
        "| JaxMARL steps/s | JaxMARL compile s | ours/JaxMARL | kernels/step ours | kernels/step JaxMARL "
        "| mpe2 1-env steps/s | ours/mpe2 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    gpu = any(row.get("ours_gpu_kernels") is not None for row in rows)
    if gpu:
        lines[-2] += " GPU-target kernels/step ours | GPU-target kernels/step JaxMARL |"
        lines[-1] += "---:|---:|"
    notes: list[str] = []
    for row in rows:
        lines.append(
            f"| {row['env']} | {row['batch']} | {_rate(row['ours_sps'])} | {_seconds(row['ours_compile_s'])} "
            f"| {_rate(row['vmap_sps'])} | {_ratio(row['native_gain'])} | {_rate(row['jaxmarl_sps'])} "
            f"| {_seconds(row['jaxmarl_compile_s'])} | {_ratio(row['ratio_vs_jaxmarl'])} "
            f"| {_count(row.get('ours_kernels'))} | {_count(row.get('jaxmarl_kernels'))} "
            f"| {_rate(row.get('reference_sps'))} | {_ratio(row.get('ratio_vs_reference'))} |"
            + (f" {_count(row.get('ours_gpu_kernels'))} | {_count(row.get('jaxmarl_gpu_kernels'))} |"
               if gpu else "")
        )
        notes += [f"{row['env']} B={row['batch']}: {note}" for note in row.get("notes", [])]
    lines += [
        "",
        "Steps/s are **env steps per second**: one env step is every agent of one env acting once, so a "
        "batch of B envs advances B env steps per call of `step`. Speeds are the best of the timed "
        "repeats after compilation, the sides taking turns repeat by repeat; compile s is tracing + "
        "lowering + XLA compilation of the whole rollout. Ours = `AutoReset(make(id, num_envs=B))` "
        "(batch-native); vmap path = the same under "
        "`VecEnv(..., use_vmap=True)`; JaxMARL = `jax.vmap(env.reset/step)` of its env (auto-resetting); "
        "mpe2 = its PettingZoo parallel env "
        "stepping one env in a Python loop with random actions, as its users run it. Kernels/step: "
        "the kernels one step of the compiled rollout launches (fusions, custom calls and unfused ops "
        "in the scan body of the optimised HLO; `KernelCounts`), which is launch overhead on a GPU."
        + (" GPU-target kernels/step: the same, of the rollout compiled by XLA's GPU compiler for a GPU "
           "that need not be present (`compile_for_gpu`)." if gpu else ""),
    ]
    if notes:
        lines += ["", "Notes:", *[f"- {note}" for note in dict.fromkeys(notes)]]
    return "\n".join(lines)


def write_markdown(path: str | os.PathLike[str], rows: Sequence[dict[str, Any]], command: str = "") -> None:
    """Write a titled markdown report (date and machine info included) of ``rows`` to ``path``."""
    machine = machine_info()
    header = ["# Env throughput"]
    if command:
        header += ["", f"Command: `{command}`"]
    text = "\n".join([*header, "", format_table(rows, machine), ""])
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
