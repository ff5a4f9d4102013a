"""Counting the kernels a compiled program launches, from its HLO text, and compiling for a GPU that is not
here (JAX's CUDA plugin, ``GPU_TARGETS``) so the count can be taken on the CPU."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp

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
