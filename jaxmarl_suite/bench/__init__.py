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
Modules by concern: ``actions`` (random actions for any space, legal where masked), ``kernels`` (kernel
counts from HLO, compiling for a GPU target on the CPU), ``timing`` (compiled sides timed in turns),
``rollouts`` (ours, JaxMARL's and the reference package's rollouts), ``report`` (``machine_info`` and
tables) and ``run`` (``run_benchmark``). The package re-exports their public names.
"""

from __future__ import annotations

from jaxmarl_suite.bench.actions import (
    sample_group_actions,
    sample_space,
)
from jaxmarl_suite.bench.kernels import (
    CONTROL_OPS,
    FREE_OPS,
    GPU_TARGETS,
    GpuTargetUnavailableError,
    KernelCounts,
    compile_for_gpu,
    gpu_kernel_counts,
    gpu_target_device,
    kernel_counts,
)
from jaxmarl_suite.bench.report import (
    format_table,
    machine_info,
    write_markdown,
)
from jaxmarl_suite.bench.rollouts import (
    OBS_WEIGHT,
    bench_jaxmarl,
    bench_ours,
    bench_reference,
    gpu_rollout_kernels,
    jaxmarl_id,
    jaxmarl_kwargs,
    jaxmarl_rollout,
    ours_rollout,
    prepare_jaxmarl,
    prepare_ours,
)
from jaxmarl_suite.bench.run import (
    run_benchmark,
)
from jaxmarl_suite.bench.timing import (
    PreparedRollout,
    Timing,
    time_interleaved,
    time_rollout,
)

__all__ = [
    "CONTROL_OPS",
    "FREE_OPS",
    "GPU_TARGETS",
    "GpuTargetUnavailableError",
    "KernelCounts",
    "OBS_WEIGHT",
    "PreparedRollout",
    "Timing",
    "bench_jaxmarl",
    "bench_ours",
    "bench_reference",
    "compile_for_gpu",
    "format_table",
    "gpu_kernel_counts",
    "gpu_rollout_kernels",
    "gpu_target_device",
    "jaxmarl_id",
    "jaxmarl_kwargs",
    "jaxmarl_rollout",
    "kernel_counts",
    "machine_info",
    "ours_rollout",
    "prepare_jaxmarl",
    "prepare_ours",
    "run_benchmark",
    "sample_group_actions",
    "sample_space",
    "time_interleaved",
    "time_rollout",
    "write_markdown",
]
