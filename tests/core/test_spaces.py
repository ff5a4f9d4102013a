"""Spaces: samples lie inside, contains rejects what is outside, masks hold, Gymnasium agrees."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_suite.core.spaces import Box, Discrete, MultiDiscrete


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 2**31 - 1))
def test_discrete_samples_inside_and_gymnasium_agrees(n: int, seed: int) -> None:
    space = Discrete(n)
    samples = space.sample(jax.random.PRNGKey(seed), (64,))
    assert samples.dtype == jnp.int32 and samples.shape == (64,)
    assert bool(jnp.all(space.contains(samples)))
    gym_space = space.to_gymnasium()
    assert gym_space.n == n
    assert all(gym_space.contains(int(s)) for s in np.asarray(samples))


@settings(max_examples=25, deadline=None)
@given(mask_bits=st.lists(st.booleans(), min_size=2, max_size=9).filter(any), seed=st.integers(0, 2**31 - 1))
def test_discrete_sample_respects_mask(mask_bits: list[bool], seed: int) -> None:
    space = Discrete(len(mask_bits))
    mask = jnp.asarray(mask_bits)
    samples = space.sample(jax.random.PRNGKey(seed), (200,), mask)
    assert bool(jnp.all(mask[samples]))


def test_discrete_contains_rejects_out_of_range_and_floats() -> None:
    space = Discrete(3)
    assert np.asarray(space.contains(jnp.array([0, 2, 3, -1]))).tolist() == [True, True, False, False]
    assert not bool(jnp.any(space.contains(jnp.array([0.0, 1.0]))))
    with pytest.raises(ValueError):
        Discrete(0)


@settings(max_examples=20, deadline=None)
@given(nvec=st.lists(st.integers(1, 6), min_size=1, max_size=4), seed=st.integers(0, 2**31 - 1))
def test_multidiscrete_samples_inside(nvec: list[int], seed: int) -> None:
    space = MultiDiscrete(nvec)
    samples = space.sample(jax.random.PRNGKey(seed), (50,))
    assert samples.shape == (50, len(nvec))
    assert bool(jnp.all(space.contains(samples)))
    assert np.all(np.asarray(samples).max(axis=0) < np.asarray(nvec))
    too_big = samples.at[0, 0].set(nvec[0])
    assert not bool(space.contains(too_big)[0])
    assert space.to_gymnasium().contains(np.asarray(samples[0], np.int64))


@settings(max_examples=20, deadline=None)
@given(low=st.floats(-5, 0), width=st.floats(0.1, 5), seed=st.integers(0, 2**31 - 1))
def test_box_samples_inside(low: float, width: float, seed: int) -> None:
    space = Box(low, low + width, (3, 2))
    samples = space.sample(jax.random.PRNGKey(seed), (40,))
    assert samples.shape == (40, 3, 2) and samples.dtype == jnp.float32
    assert bool(jnp.all(space.contains(samples)))
    outside = samples.at[0, 1, 1].set(low + width + 1.0)
    assert not bool(space.contains(outside)[0]) and bool(space.contains(outside)[1])
    assert space.to_gymnasium().contains(np.asarray(samples[0]))


def test_unbounded_box_samples_are_finite_and_contained() -> None:
    space = Box(-np.inf, np.inf, (4,))
    samples = space.sample(jax.random.PRNGKey(0), (100,))
    assert bool(jnp.all(jnp.isfinite(samples))) and bool(jnp.all(space.contains(samples)))
    assert not bool(space.contains(jnp.zeros((4,), jnp.int32)))
    with pytest.raises(ValueError):
        Box(1.0, 0.0, (2,))


def test_integer_box_samples_every_value_between_its_bounds_and_gymnasium_agrees() -> None:
    space = Box(0, 255, (4, 3, 2), np.uint8)
    samples = space.sample(jax.random.PRNGKey(0), (512,))
    assert samples.dtype == jnp.uint8 and samples.shape == (512, 4, 3, 2)
    assert int(samples.min()) == 0 and int(samples.max()) == 255  # both ends are reachable
    assert bool(jnp.all(space.contains(samples)))
    narrow = Box(-3, 2, (5,), np.int8).sample(jax.random.PRNGKey(1), (400,))
    assert set(np.unique(np.asarray(narrow)).tolist()) == {-3, -2, -1, 0, 1, 2}
    gym_space = space.to_gymnasium()
    assert gym_space.dtype == np.uint8 and gym_space.contains(np.asarray(samples[0]))


def test_integer_box_rejects_floats_and_out_of_range_and_bad_bounds() -> None:
    space = Box(0, 3, (2,), np.uint8)
    assert not bool(space.contains(jnp.array([1.0, 2.0])))  # right values, wrong kind
    assert not bool(space.contains(jnp.array([1, 4], jnp.uint8)))
    assert bool(space.contains(jnp.array([0, 3], jnp.int32)))
    assert not bool(Box(0.0, 1.0, (2,)).contains(jnp.array([0, 1], jnp.uint8)))  # and the other way
    with pytest.raises(ValueError, match="high within"):
        Box(0, np.inf, (2,), np.uint8)
    with pytest.raises(ValueError, match="low within"):
        Box(-1, 3, (2,), np.uint8)
    with pytest.raises(ValueError, match="float or integer"):
        Box(0, 1, (2,), np.bool_)
    # sampling draws int32 values up to high + 1: the full int32 range (or wider) is refused, not mis-sampled
    with pytest.raises(ValueError, match="high within"):
        Box(0, np.iinfo(np.int32).max, (2,), np.int32)
    with pytest.raises(ValueError, match="high within"):
        Box(0, 2**32 - 1, (2,), np.uint32)
    edge = Box(-(2**31), 2**31 - 2, (64,), np.int32).sample(jax.random.PRNGKey(2), (64,))
    assert int(edge.min()) < -(2**30) and int(edge.max()) > 2**30  # spread over the range
