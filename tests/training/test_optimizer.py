"""The kit's optimizer: ``optax.clip_by_global_norm`` then Adam, with a global norm that is optax's own on the
CPU and one reduction over every leaf where the program is compiled for a GPU."""

from __future__ import annotations

import jax
import numpy as np
import optax
import pytest

from jaxmarl_suite import bench
from jaxmarl_suite.training.kit import ppo


def _grads(scale: float) -> dict[str, dict[str, jax.Array]]:
    """A network's gradients: leaves of several shapes, as a two-layer MLP with a value head has, and
    magnitudes from 0.01 to 10, so the order in which a norm sums them shows in its last bit."""
    shapes = {"dense_0": (18, 64), "dense_1": (64, 64), "head": (64, 5), "value": (64, 1)}
    keys = iter(jax.random.split(jax.random.PRNGKey(0), 2 * len(shapes)))
    return {
        layer: {"kernel": scale * 10.0 ** (i - 2) * jax.random.normal(next(keys), (fan_in, fan_out)),
                "bias": scale * jax.random.normal(next(keys), (fan_out,))}
        for i, (layer, (fan_in, fan_out)) in enumerate(shapes.items())
    }


@pytest.mark.parametrize("scale", [1e-4, 1.0], ids=["within", "clipped"])
def test_clipping_is_optax_bit_for_bit_on_the_cpu(scale: float) -> None:
    grads = _grads(scale)
    ours, theirs = ppo.clip_by_global_norm(0.5), optax.clip_by_global_norm(0.5)
    state = ours.init(grads)
    assert jax.tree.structure(state) == jax.tree.structure(theirs.init(grads)), "a checkpoint's layout"
    got, _ = jax.jit(ours.update)(grads, state)
    want, _ = jax.jit(theirs.update)(grads, theirs.init(grads))
    jax.tree.map(np.testing.assert_array_equal, got, want)
    clipped = float(optax.tree.norm(want)) < float(optax.tree.norm(grads))
    assert clipped == (scale == 1.0), "one case is clipped and one is not"


def test_the_gpu_norm_is_one_reduction_over_all_leaves() -> None:
    grads = _grads(1.0)
    leaf_by_leaf = jax.jit(optax.tree.norm)(grads)
    assert jax.jit(ppo.global_norm)(grads) == leaf_by_leaf, "on the CPU, optax's norm bit for bit"
    end_to_end = jax.jit(ppo._norm_end_to_end)(*jax.tree.leaves(grads))
    assert end_to_end != leaf_by_leaf, "these gradients should tell the two orders of summation apart"
    np.testing.assert_allclose(end_to_end, leaf_by_leaf, rtol=1e-6)
    try:
        bench.gpu_target_device()
    except bench.GpuTargetUnavailableError:
        return
    ours = bench.gpu_kernel_counts(ppo.global_norm, grads).per_call
    optax_kernels = bench.gpu_kernel_counts(optax.tree.norm, grads).per_call
    assert ours == 1 < optax_kernels
