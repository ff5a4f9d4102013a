"""Gradient clipping (``accelerated.clip_by_global_norm``, before Adam in every baseline's optimizer): optax's
own on the CPU, and off it the same rule with the norm summed as one reduction over all leaves."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxmarl_suite import accelerated, bench
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
    ours, theirs = accelerated.clip_by_global_norm(0.5), optax.clip_by_global_norm(0.5)
    state = ours.init(grads)
    assert jax.tree.structure(state) == jax.tree.structure(theirs.init(grads)), "a checkpoint's layout"
    got, _ = jax.jit(ours.update)(grads, state)
    want, _ = jax.jit(theirs.update)(grads, theirs.init(grads))
    jax.tree.map(np.testing.assert_array_equal, got, want)
    clipped = float(optax.tree.norm(want)) < float(optax.tree.norm(grads))
    assert clipped == (scale == 1.0), "one case is clipped and one is not"


def test_a_vmapped_max_norm_clips_each_run_as_optax_does() -> None:
    """A hyperparameter sweep vmaps ``max_grad_norm``: one scalar per run, each run clipped as optax clips."""
    grads, max_norms = _grads(1.0), jnp.array([0.1, 0.5, 1e3])

    def clip(make, max_norm):
        transform = make(max_norm)
        return transform.update(grads, transform.init(grads))[0]

    got = jax.jit(jax.vmap(lambda m: clip(accelerated.clip_by_global_norm, m)))(max_norms)
    want = jax.jit(jax.vmap(lambda m: clip(optax.clip_by_global_norm, m)))(max_norms)
    jax.tree.map(np.testing.assert_array_equal, got, want)
    assert float(optax.tree.norm(jax.tree.map(lambda x: x[2], got))) == pytest.approx(
        float(optax.tree.norm(grads)), rel=1e-6), "the run whose max_norm exceeds the norm is left alone"
    with pytest.raises(ValueError, match="scalar"):
        accelerated.clip_by_global_norm(max_norms)


def test_off_the_cpu_the_norm_is_one_reduction_over_all_leaves() -> None:
    """The accelerator branch, forced on the CPU: the same clipping as optax's up to the order of the norm's
    terms, which on these gradients moves the last bits."""
    grads = _grads(1.0)
    leaf_by_leaf = jax.jit(optax.tree.norm)(grads)

    def clipped(max_norm: float) -> list:
        transform = accelerated.clip_by_global_norm(max_norm)
        return jax.tree.leaves(jax.jit(lambda g: transform.update(g, transform.init(g))[0])(grads))

    with accelerated.forced("accelerator"):
        small, large = clipped(0.1 * float(leaf_by_leaf)), clipped(10.0 * float(leaf_by_leaf))
    with accelerated.forced("cpu"):
        small_plain, large_plain = clipped(0.1 * float(leaf_by_leaf)), clipped(10.0 * float(leaf_by_leaf))
    for ours, plain in zip(small, small_plain, strict=True):
        np.testing.assert_allclose(ours, plain, rtol=1e-5, atol=1e-8)
    for ours, plain, raw in zip(large, large_plain, jax.tree.leaves(grads), strict=True):
        np.testing.assert_array_equal(ours, raw)  # under the limit both leave the gradients alone
        np.testing.assert_array_equal(plain, raw)
    assert float(optax.tree.norm(small)) == pytest.approx(0.1 * float(leaf_by_leaf), rel=1e-5)


def test_for_an_h200_the_clip_launches_fewer_kernels_than_optaxs(gpu_target: object) -> None:
    grads = _grads(1.0)

    def kernels(transform: optax.GradientTransformation) -> int:
        return bench.gpu_kernel_counts(lambda g: transform.update(g, transform.init(g))[0], grads).per_call

    leaves = len(jax.tree.leaves(grads))
    ours, theirs = kernels(accelerated.clip_by_global_norm(0.5)), kernels(optax.clip_by_global_norm(0.5))
    assert ours + leaves // 2 <= theirs


@pytest.mark.parametrize("anneal", [True, False])
def test_the_rate_falls_once_per_update_not_per_minibatch(anneal: bool) -> None:
    """4 updates of 2 minibatch steps at lr 0.1: annealed, the steps take 0.1, 0.1, 0.075, 0.075, 0.05,
    0.05, 0.025, 0.025 (1 - update / 4); without annealing 0.1 each. Read off Adam's step under a constant
    unit gradient, where bias-corrected m / (sqrt(v) + 1e-5) is 1 / (1 + 1e-5) up to float32 rounding."""
    opt = ppo.annealed_adam(0.1, 1e9, anneal_lr=anneal, num_updates=4, steps_per_update=2)
    params = jnp.zeros(())
    state = opt.init(params)
    steps = []
    for _ in range(8):
        step, state = opt.update(jnp.ones(()), state, params)
        steps.append(-float(step) * (1 + 1e-5))
    expected = [0.1, 0.1, 0.075, 0.075, 0.05, 0.05, 0.025, 0.025] if anneal else [0.1] * 8
    np.testing.assert_allclose(steps, expected, rtol=1e-4)  # float32 bias correction: about 1e-5 off
