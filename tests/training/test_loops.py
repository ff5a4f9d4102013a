"""``kit.loops.scan``: the results of ``lax.scan``, with the outputs of one dtype and shape written as one
array a step."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_options import AS_USERS_COMPILE

from jaxmarl_suite.training.kit import loops


def _step(carry, x):
    """Outputs of three shapes and dtypes, two of them shared by several leaves, and a scalar."""
    total, count = carry
    total = total * 0.9 + x
    outputs = {
        "value": total,
        "reward": jnp.sin(total),
        "log_prob": -jnp.abs(total),
        "action": jnp.argmax(total, axis=-1),
        "done": total[:, 0] > 0,
        "alive": total[:, 1] > 0.5,
        "stats": (jnp.sum(total), jnp.max(total), count * 0.5),  # the last one weakly typed
    }
    return (total, count + 1), outputs


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [None, 1, 4])
def test_scan_returns_what_lax_scan_returns(reverse: bool, unroll: int | None) -> None:
    xs = jax.random.normal(jax.random.PRNGKey(0), (9, 5, 3))
    init = (jnp.zeros((5, 3)), jnp.int32(0))
    # two programs compared bit for bit: compiled as a user's are (compile_options)
    want = jax.jit(lambda i, x: jax.lax.scan(_step, i, x, reverse=reverse),
                   compiler_options=AS_USERS_COMPILE)(init, xs)
    got = jax.jit(lambda i, x: loops.scan(_step, i, x, reverse=reverse, unroll=unroll),
                  compiler_options=AS_USERS_COMPILE)(init, xs)
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert (g.dtype, g.shape, jax.typeof(g).weak_type) == (w.dtype, w.shape, jax.typeof(w).weak_type)
        np.testing.assert_array_equal(g, w)


def test_scan_takes_a_length_without_inputs() -> None:
    def count(carry, _):
        return carry + 1, (carry, carry * 2.0, carry * 3.0)

    last, (a, b, c) = loops.scan(count, jnp.float32(0.0), None, length=6, unroll=1)
    assert float(last) == 6.0
    np.testing.assert_array_equal(np.stack([a, b, c]), np.arange(6)[None] * np.array([1, 2, 3])[:, None])


def _stores(function, *args) -> int:
    """Dynamic-update-slices in the compiled program: the writes of a scan's outputs, one per output."""
    return jax.jit(function).lower(*args).compile().as_text().count("dynamic-update-slice(")


def test_outputs_of_one_dtype_and_shape_are_written_as_one_array() -> None:
    """Three float ``[5, 3]`` outputs, two bool ``[5]`` ones and two float scalars are written with one
    store each group, plus the int ``[5]`` one and the weakly typed scalar: 5 stores a step where
    ``lax.scan`` makes 9."""
    xs = jnp.zeros((9, 5, 3))
    init = (jnp.zeros((5, 3)), jnp.int32(0))
    assert _stores(lambda i, x: jax.lax.scan(_step, i, x), init, xs) == 9
    assert _stores(lambda i, x: loops.scan(_step, i, x, unroll=1), init, xs) == 5
