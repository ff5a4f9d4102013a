"""XLA settings the suite needs, applied through ``XLA_FLAGS`` before JAX starts its backend."""

from __future__ import annotations

import os

CPU_SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler"
"""On jax 0.10.2's CPU backend, with this scheduler on, IPPO's update vmapped over 16 seeds (or over a 2 x 2
grid of seeds and hyperparameters) blocked forever with idle CPUs. A single seed ran in 0.3 s either way,
and with the scheduler off the 16 seeds run. Measured on a 2-core x86 machine."""


def apply_xla_defaults() -> None:
    """Turn the concurrency-optimised CPU scheduler off unless the user's ``XLA_FLAGS`` set it.

    ``XLA_FLAGS`` is read when the backend starts (the first computation), so this only takes effect when
    ``jaxmarl_suite`` is imported before anything runs on JAX. It touches no other flag.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if CPU_SCHEDULER_FLAG not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {CPU_SCHEDULER_FLAG}=false".strip()
