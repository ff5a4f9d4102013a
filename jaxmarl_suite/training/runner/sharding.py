"""Spreading an experiment over devices and hosts with JAX's own runtime: ``jax.sharding`` and
``jax.distributed``.

An experiment's runner state has a leading ``[grid * seeds]`` run axis (see ``runner.run_hparams``), and
some of its leaves also carry the env batch (observations, env state, recurrent state). The runner builds
a two-axis ``Mesh`` over every device of every process, ``("runs", "envs")``:

- ``runs`` splits the independent runs. Runs never talk to each other, so this costs no communication,
  and across processes it is what splits the global grid: process ``i`` owns a contiguous block of runs.
- ``envs`` splits each run's env batch when there are more devices than runs. XLA's SPMD partitioner
  inserts the collectives the PPO update then needs (the loss averages over the whole batch).

The program is the same ``jit`` whatever the mesh; only the input shardings change. With one device the
mesh is ``1 x 1`` and nothing changes. Which leaves hold the env batch is found by abstract evaluation
(``env_batch_axes``), so a baseline declares nothing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxmarl_suite.errors import ConfigError

RUNS, ENVS = "runs", "envs"
"""Mesh axis names."""


def mesh_shape(num_runs: int, num_envs: int, num_devices: int) -> tuple[int, int]:
    """``(runs, envs)`` devices: as many as possible on the run axis (free of communication), the rest on
    the env batch. Both divide their sizes, so the product may be fewer than ``num_devices``."""
    runs = math.gcd(num_runs, num_devices)
    rest = num_devices // runs
    envs = max(d for d in range(1, rest + 1) if rest % d == 0 and num_envs % d == 0)
    return runs, envs


def make_mesh(num_runs: int, num_envs: int, devices: Sequence[Any] | None = None) -> Mesh:
    """The ``("runs", "envs")`` mesh for ``num_runs`` runs of ``num_envs`` envs over ``devices`` (default:
    every device of every process, in process order so each process owns a contiguous block of runs).

    Raises ``ConfigError`` when several processes take part and the mesh would leave one without work.
    """
    devices = list(jax.devices() if devices is None else devices)
    runs, envs = mesh_shape(num_runs, num_envs, len(devices))
    used = devices[: runs * envs]
    idle = {d.process_index for d in devices} - {d.process_index for d in used}
    if idle:
        raise ConfigError(
            f"seeds: {num_runs} run(s) (grid points x seeds) of {num_envs} envs cannot be spread over the "
            f"{len(devices)} devices of {jax.process_count()} processes (it would use {runs * envs}, leaving "
            f"process(es) {sorted(idle)} idle); make grid points x seeds a multiple of the process count"
        )
    return Mesh(np.array(used, dtype=object).reshape(runs, envs), (RUNS, ENVS))


def env_batch_axes(make_init: Callable[[int], Callable[..., Any]], num_envs: int, *args: Any) -> Any:
    """For every leaf of ``make_init(num_envs)(*args)``, the axis that holds the env batch, or None.

    Found by evaluating shapes (no compute) at ``num_envs`` and ``2 * num_envs``: the axis whose size
    doubles is the env batch. A leaf where no single axis doubles (parameters, counters) is replicated,
    and so is one whose doubling axis is the leading run axis.
    """
    small = jax.eval_shape(make_init(num_envs), *args)
    large = jax.eval_shape(make_init(2 * num_envs), *args)

    def axis(a: Any, b: Any) -> int | None:
        changed = [i for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=True)) if x != y]
        if len(a.shape) != len(b.shape) or len(changed) != 1 or changed[0] == 0:
            return None
        return changed[0] if b.shape[changed[0]] == 2 * a.shape[changed[0]] else None

    return jax.tree.map(axis, small, large)


def state_shardings(mesh: Mesh, abstract_state: Any, env_axes: Any) -> Any:
    """``NamedSharding`` per leaf of a ``[runs, ...]`` state: the run axis over ``runs``, and the env batch
    axis (from ``env_batch_axes``; None everywhere shards runs only) over ``envs`` where it divides."""
    envs = mesh.shape[ENVS]

    def sharding(leaf: Any, env_axis: int | None) -> NamedSharding:
        spec: list[str | None] = [None] * len(leaf.shape)
        if spec and leaf.shape[0] % mesh.shape[RUNS] == 0:
            spec[0] = RUNS
        if env_axis is not None and envs > 1 and leaf.shape[env_axis] % envs == 0:
            spec[env_axis] = ENVS
        return NamedSharding(mesh, PartitionSpec(*spec))

    if env_axes is None:
        env_axes = jax.tree.map(lambda _: None, abstract_state)
    return jax.tree.map(sharding, abstract_state, env_axes, is_leaf=lambda x: x is None)


def run_axis_sharding(mesh: Mesh, tree: Any) -> Any:
    """Shard only the leading run axis of every leaf (``HParams`` and keys)."""
    return jax.tree.map(
        lambda leaf: NamedSharding(mesh, PartitionSpec(RUNS if leaf.shape[0] % mesh.shape[RUNS] == 0
                                                       else None)),
        tree,
    )


def replicated(mesh: Mesh) -> NamedSharding:
    """The sharding of a value every device holds in full."""
    return NamedSharding(mesh, PartitionSpec())


def with_shardings(abstract: Any, shardings: Any) -> Any:
    """``ShapeDtypeStruct`` leaves carrying ``shardings`` (a target to restore checkpoints into)."""
    return jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, shardings)


def to_host(tree: Any) -> Any:
    """Numpy copies of ``tree`` on this process, gathering shards other processes hold."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)


@dataclasses.dataclass(frozen=True)
class Distributed:
    """How this process joins a multi-process run (``jax.distributed``)."""

    coordinator: str
    """``HOST:PORT`` of process 0's coordination service, or ``auto`` to let JAX detect the cluster
    (SLURM, TPU pod slices, Open MPI)."""
    num_processes: int | None = None
    """Processes in the run; None with ``auto``."""
    process_id: int | None = None
    """This process's index in ``[0, num_processes)``; None with ``auto``."""

    def validate(self) -> None:
        """Fail before JAX starts, naming the flag."""
        if self.coordinator == "auto":
            return
        host, _, port = self.coordinator.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"coordinator: expected HOST:PORT or 'auto', got {self.coordinator!r}")
        if self.num_processes is None or self.num_processes < 1:
            raise ConfigError(f"num_processes: must be an integer >= 1 with --coordinator, got "
                              f"{self.num_processes!r}")
        if self.process_id is None or not 0 <= self.process_id < self.num_processes:
            raise ConfigError(f"process_id: must be in [0, {self.num_processes - 1}], "
                              f"got {self.process_id!r}")


def initialize_distributed(spec: Distributed) -> None:
    """Join the run with ``jax.distributed.initialize`` (before any computation). On CPU, cross-process
    collectives use gloo."""
    spec.validate()
    if jax.distributed.is_initialized():
        return
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if spec.coordinator == "auto":
        jax.distributed.initialize()
    else:
        jax.distributed.initialize(spec.coordinator, spec.num_processes, spec.process_id)


def is_primary() -> bool:
    """Whether this process writes the run folder's shared files (process 0)."""
    return jax.process_index() == 0


def barrier(name: str) -> None:
    """Wait until every process reaches ``name`` (a no-op with one process)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
