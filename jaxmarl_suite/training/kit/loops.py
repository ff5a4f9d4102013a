"""Loops over time steps, rolled on the CPU and unrolled on accelerators.

On a GPU every iteration of a ``lax.scan`` costs at least one kernel launch and a trip of the loop's
predicate to the host, whatever the body does; on the CPU an iteration is cheap and an unrolled body
compiles into slower code. The kit's scans over time (GAE, Q(lambda), the GRU and its gradient) go
through ``scan`` here, so the choice is made in one place.

A scan writes each of its per-step outputs into its stacked result with one kernel a step. ``scan``
writes the outputs that share a dtype and shape as one stacked array instead (a rollout's values,
rewards and log-probabilities; its done flags), which leaves the results unchanged and launches fewer
kernels per step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_suite.accelerated import unrolled_off_cpu

ACCELERATOR_UNROLL = 16
"""Time steps per loop iteration off the CPU. Measured on GAE: on an H200 a rolled 128-step GAE over
``[128, 1024, 3]`` took 1.96 ms and unrolled 16 steps 0.18 ms; on 2 CPU cores unrolled was 2x slower
(1.86 against 0.83 ms) and changed the last bits, so the CPU keeps the rolled loop."""


def scan(step: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any, *, length: int | None = None,
         reverse: bool = False, unroll: int | None = None) -> tuple[Any, Any]:
    """``lax.scan(step, init, xs, length, reverse)``: ``(carry, outputs)``, with the outputs of one dtype
    and shape written as one array a step. By default rolled on the CPU and unrolled
    ``ACCELERATOR_UNROLL`` steps elsewhere, chosen when the program is lowered for its platform; an
    explicit ``unroll`` applies everywhere (a rollout passes 1: its body is large)."""
    layout: list[Any] = []  # filled when the body is traced: the outputs' tree and how they were grouped

    def packed_step(carry: Any, x: Any) -> tuple[Any, list[Array]]:
        carry, ys = step(carry, x)
        leaves, treedef = jax.tree.flatten(ys)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for index, leaf in enumerate(leaves):
            # weak types apart: stacking a weak float with a strong one would make it strong
            kind = (jnp.shape(leaf), jnp.result_type(leaf), jax.typeof(leaf).weak_type)
            groups.setdefault(kind, []).append(index)
        layout[:] = [treedef, list(groups.values())]
        return carry, [leaves[idx[0]] if len(idx) == 1 else jnp.stack([leaves[i] for i in idx])
                       for idx in groups.values()]

    def run(unroll: int, init: Any, xs: Any) -> tuple[Any, Any]:
        carry, packed = jax.lax.scan(packed_step, init, xs, length=length, reverse=reverse, unroll=unroll)
        treedef, groups = layout
        leaves: list[Any] = [None] * treedef.num_leaves
        for indices, stacked in zip(groups, packed, strict=True):
            if len(indices) == 1:
                leaves[indices[0]] = stacked
            else:
                for position, index in enumerate(indices):
                    leaves[index] = stacked[:, position]
        return carry, jax.tree.unflatten(treedef, leaves)

    if unroll is not None:
        return run(unroll, init, xs)
    return unrolled_off_cpu(run, ACCELERATOR_UNROLL, init, xs)


Array = jax.Array
