"""Every place where the suite compiles other code for an accelerator than for the CPU, in one module.

A program is lowered once per platform: on the CPU the plain code runs, and compiled for anything else (a
GPU or a TPU) the accelerator variant does. Each variant here sits beside the plain code it replaces, and
``tests/test_accelerated.py`` runs both on the CPU (``forced("accelerator")``) and compares them: bit for
bit where the arithmetic is the same, to a stated tolerance where the sums are reassociated.

**Evidence.** Every variant was chosen by counting the kernels of programs compiled for an H200 (in each
docstring); **none has been timed on a GPU yet**, because no GPU has been lent since they landed.
``scripts/bench_gpu.py`` times each against its plain code (its ``accelerated`` section), so a run on a
GPU can keep or drop one on evidence.

The suite's envs (MPE, SMAX), its auto-reset wrapper and its training kit (loops over time, the GRU, the
actor-critic towers, gradient clipping) call these by name; no other module forks on the platform
(``tests/test_accelerated.py`` checks the source).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, Literal

import jax
import jax.numpy as jnp
import optax

Array = jax.Array
Branch = Literal["cpu", "accelerator"]

_forced: list[Branch | None] = [None]


def fork(*args: Any, cpu: Callable[..., Any], accelerator: Callable[..., Any]) -> Any:
    """``cpu(*args)`` in a program compiled for the CPU, ``accelerator(*args)`` in one compiled for
    anything else: the suite's one ``jax.lax.platform_dependent``. Both branches are traced; under
    ``forced`` only the forced one is."""
    branch = _forced[0]
    if branch == "cpu":
        return cpu(*args)
    if branch == "accelerator":
        return accelerator(*args)
    return jax.lax.platform_dependent(*args, cpu=cpu, default=accelerator)


@contextlib.contextmanager
def forced(branch: Branch) -> Iterator[None]:
    """Make every ``fork`` traced inside the block take ``branch`` whatever the platform, so that a CPU runs
    the accelerator variants (tests). JAX's compilation caches are cleared on entry and exit, since a
    program traced one way must not be reused the other."""
    if branch not in ("cpu", "accelerator"):
        raise ValueError(f"branch must be 'cpu' or 'accelerator', got {branch!r}")
    previous = _forced[0]
    jax.clear_caches()
    _forced[0] = branch
    try:
        yield
    finally:
        _forced[0] = previous
        jax.clear_caches()


# ------------------------------------------------------------------------------------------- barriers
def barrier_off_cpu(tree: Any) -> Any:
    """``tree`` unchanged, behind ``jax.lax.optimization_barrier`` off the CPU (the CPU program does not get
    it and is the same as without). Used where XLA's GPU compiler fused something badly:

    - MPE's positions and velocities after the physics (``environments/mpe/base.py``): fused with the
      transpose that batch-first observations need, the loop-carried state could not be written in place,
      so a rollout copied both every step (spread's auto-reset step at 4,096 envs, compiled for an H200:
      21 kernels, 19 with it; its IPPO rollout step at 1,024 envs: 34, 33);
    - the GRU cell's reset state (``kit.networks``): XLA's GPU compiler (jax 0.10.2) fused the reset into
      the state product and then failed to tile it for a few rows ("Couldn't find output tile sizes").
    """
    return fork(tree, cpu=lambda t: t, accelerator=jax.lax.optimization_barrier)


# ---------------------------------------------------------------------------------------------- loops
def unrolled_off_cpu(run: Callable[..., Any], unroll: int, *args: Any) -> Any:
    """``run(1, *args)`` on the CPU, ``run(unroll, *args)`` elsewhere, for a ``run(unroll, ...)`` that
    scans with that unroll. On a GPU every trip of a loop costs at least one kernel launch and a trip of
    its predicate to the host; on the CPU an unrolled body compiles into slower code (GAE on 2 cores: 1.86
    against 0.83 ms rolled) and changes the last bits, so the CPU keeps the rolled loop. Used by
    ``kit.loops.scan`` (GAE, Q(lambda), the GRU, the rollouts and epochs; 16 steps a trip: GAE over
    ``[128, 1024, 3]`` on an H200, 1.96 ms rolled against 0.18 ms, the one variant timed on a GPU, before
    this module existed) and SMAX's combat sub-steps (3m at 4,096 envs compiled for an H200: 135 kernels
    a step rolled, 102 unrolled)."""
    return fork(*args, cpu=functools.partial(run, 1), accelerator=functools.partial(run, unroll))


# ------------------------------------------------------------------------------------- sums at indices
def scatter_add_at_rows(values: Array, index: Array) -> Array:
    """The plain ``add_at_rows``: a scatter-add."""
    return jnp.zeros_like(values).at[index, jnp.arange(index.shape[-1])[None, :]].add(values)


def summed_at_rows(values: Array, index: Array) -> Array:
    """The accelerator ``add_at_rows``: for each row, the sum over ``i`` of the values aimed at it."""
    rows = jnp.arange(values.shape[0])[None, :, None]  # [i, row, B] below
    return jnp.sum(jnp.where(index[:, None] == rows, values[:, None], jnp.zeros((), values.dtype)), axis=0)


def add_at_rows(values: Array, index: Array) -> Array:
    """``[N, B]``: every ``values[i, b]`` added up at row ``index[i, b]`` of column ``b``
    (``0 <= index < N``; float ``values``): SMAX's damage at each unit's target.

    On the CPU a scatter-add. Off it a sum over ``i`` of the values aimed at each row: a scatter writes into
    a buffer of its own, so XLA copied one in for each of the two scatters of every SMAX sub-step (3m at
    4,096 envs, compiled for an H200: 102 kernels a step, 59 without the scatters), and the sum does not
    depend on the order in which a GPU's atomic adds land. The two differ only in the order of the
    additions."""
    return fork(values, index, cpu=scatter_add_at_rows, accelerator=summed_at_rows)


# ------------------------------------------------------------------------------------ gradient clipping
def clip_by_global_norm(max_norm: float | Array) -> optax.GradientTransformation:
    """``optax.clip_by_global_norm(max_norm)`` itself on the CPU, and off it the same rule with the norm
    summed as one reduction over all leaves laid end to end (``max_norm`` a scalar, or one per run under
    ``vmap``). The state is optax's empty one, so checkpoints are the same either way.

    optax sums the squares leaf by leaf, which a GPU runs as one reduction kernel per parameter leaf every
    minibatch (IPPO with JaxMARL's MPE config compiled for an H200: 9 kernels fewer a minibatch, 5,614 to
    5,470 an update at 1,024 envs). The two norms differ only in the order of their terms.
    """
    if jnp.ndim(max_norm) != 0:
        shape = jnp.shape(max_norm)
        raise ValueError(f"max_norm must be a scalar (one per run under vmap), not of shape {shape}")
    reference = optax.clip_by_global_norm(max_norm)

    def update(updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        del params
        leaves, treedef = jax.tree.flatten(updates)
        if not leaves:
            return updates, state

        def with_optax(*leaves: Array) -> list[Array]:
            return jax.tree.leaves(reference.update(jax.tree.unflatten(treedef, leaves), state)[0])

        def end_to_end(*leaves: Array) -> list[Array]:
            norm = jnp.sqrt(jnp.sum(jnp.square(jnp.concatenate([jnp.ravel(leaf) for leaf in leaves]))))
            # optax's rule and its order of operations, so the two sides differ only through the norm
            return [jnp.where(norm < max_norm, leaf, (leaf / norm.astype(leaf.dtype)) * max_norm)
                    for leaf in leaves]

        clipped = fork(*leaves, cpu=with_optax, accelerator=end_to_end)
        return jax.tree.unflatten(treedef, clipped), state

    return optax.GradientTransformation(reference.init, update)
