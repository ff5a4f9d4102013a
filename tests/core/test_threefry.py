"""``jaxmarl_suite.core.threefry`` against ``jax.random`` itself: ``split``, ``randint`` (a span where JAX's
uint32 multiplier wraps included) and ``randint_per_key`` over thousands of raw and typed keys, and the
fall-back to ``jax.random`` for other PRNG implementations and JAX's older Threefry scheme."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.core import threefry


def test_split_and_randint_equal_jax_random() -> None:
    spans = (3, 100_003)  # a game's span, and one where JAX's uint32 multiplier wraps

    @jax.jit
    def both(keys: jax.Array) -> tuple[Any, Any]:
        pair = threefry.key_pair(keys)
        ours = (threefry.split(pair), [threefry.randint(pair, 6, span).T for span in spans])
        theirs = (jax.vmap(jax.random.split)(keys),
                  [jax.vmap(lambda key, s=span: jax.random.randint(key, (6,), 0, s))(keys) for span in spans])
        return ours, theirs

    keys = jax.random.split(jax.random.PRNGKey(7), 512)
    ((first, second), ours), (expected, wants) = both(keys)
    np.testing.assert_array_equal(np.stack(first, -1), expected[:, 0])
    np.testing.assert_array_equal(np.stack(second, -1), expected[:, 1])
    for span, got, want in zip(spans, ours, wants, strict=True):
        np.testing.assert_array_equal(got, want, err_msg=str(span))


def test_randint_per_key_is_jax_randint_bit_for_bit() -> None:
    """Over 4096 keys per range: small spans, and one whose square overflows uint32."""

    @jax.jit
    def both(keys: jax.Array) -> tuple[list[jax.Array], list[jax.Array]]:
        ours, theirs = [], []
        for span in (3, 5, 70_000):
            ours.append(threefry.randint_per_key(keys, span))
            theirs.append(jax.vmap(lambda key, m=span: jax.random.randint(key, (), 0, m))(keys))
        return ours, theirs

    ours, theirs = both(jax.random.split(jax.random.PRNGKey(11), 4096))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert len(np.unique(np.asarray(ours[-1]))) > 3800  # about 3976 expected from a uniform draw
    typed = jax.random.split(jax.random.key(5), 256)
    expected = jax.vmap(lambda key: jax.random.randint(key, (), 0, 5))(typed)
    np.testing.assert_array_equal(np.asarray(threefry.randint_per_key(typed, 5)), np.asarray(expected))


@pytest.mark.parametrize("keys", [
    pytest.param(lambda: jax.random.split(jax.random.key(3, impl="rbg"), 16), id="rbg"),
    pytest.param(lambda: jax.random.split(jax.random.key(3, impl="unsafe_rbg"), 16), id="unsafe_rbg"),
])
def test_other_prng_implementations_fall_back_to_jax_random(keys) -> None:
    keys = keys()
    assert not threefry.fast_path_ok(keys)
    expected = jax.vmap(lambda key: jax.random.randint(key, (), 0, 5))(keys)
    np.testing.assert_array_equal(np.asarray(threefry.randint_per_key(keys, 5)), np.asarray(expected))


def test_the_older_threefry_scheme_falls_back_to_jax_random() -> None:
    assert threefry.fast_path_ok(jax.random.PRNGKey(0))
    assert threefry.fast_path_ok(jax.random.split(jax.random.key(7), 4))
    with jax.threefry_partitionable(False):
        keys = jax.random.split(jax.random.PRNGKey(3), 8)
        assert not threefry.fast_path_ok(keys)
        expected = jax.vmap(lambda key: jax.random.randint(key, (), 0, 7))(keys)
        np.testing.assert_array_equal(np.asarray(threefry.randint_per_key(keys, 7)), np.asarray(expected))


@pytest.mark.parametrize("key", [
    pytest.param(lambda: jax.random.PRNGKey(42), id="raw"),
    pytest.param(lambda: jax.random.key(42), id="typed"),
    pytest.param(lambda: jax.random.key(42, impl="rbg"), id="rbg-falls-back"),
])
def test_split_keys_is_jax_random_split(key) -> None:
    key = key()
    for num in (1, 3, 4096):
        ours, theirs = jax.jit(lambda k, n=num: (threefry.split_keys(k, n), jax.random.split(k, n)))(key)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        if jax.dtypes.issubdtype(ours.dtype, jax.dtypes.prng_key):
            ours, theirs = jax.random.key_data(ours), jax.random.key_data(theirs)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("key", [
    pytest.param(lambda: jax.random.PRNGKey(7), id="raw"),
    pytest.param(lambda: jax.random.key(7), id="typed"),
    pytest.param(lambda: jax.random.key(7, impl="rbg"), id="rbg-falls-back"),
])
def test_split_keys_at_picks_jax_random_splits_keys(key) -> None:
    """``split_keys_at(key, n, index)`` is ``jax.random.split(key, n)[index]`` (out-of-range indices clamped,
    as a gather clamps them), which lets ``AutoReset`` start a part of a batch exactly as a full reset."""
    key = key()
    index = jnp.asarray([5, 0, 4095, 17, 4096, 9999], jnp.int32)
    ours = jax.jit(lambda k: threefry.split_keys_at(k, 4096, index))(key)
    theirs = jax.random.split(key, 4096)[np.asarray([5, 0, 4095, 17, 4095, 4095])]
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if jax.dtypes.issubdtype(ours.dtype, jax.dtypes.prng_key):
        ours, theirs = jax.random.key_data(ours), jax.random.key_data(theirs)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
