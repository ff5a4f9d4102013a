"""``jax.random``'s ``split``, ``bits`` and ``randint`` for a batch of keys, bit for bit, written out as plain
``uint32`` arithmetic over the batch.

Why: on CPU, XLA lowers JAX's Threefry-2x32 hash to a rolled loop (a ``while`` of five iterations), so each
draw becomes several small kernels run one after another. Envs whose rules cost almost nothing spend most of
a step there (Coin Game: 99%; Switch Riddle: most of it). Written out, a whole batch's draws fuse into one
elementwise kernel, 4x or more faster at batch 4,096 on 2 cores, and the values are exactly JAX's, so an env
still consumes each env's key the way its reference (JaxMARL) does, and parity runs from the same keys.
``tests/core/test_threefry.py`` checks every function against ``jax.random`` itself.

The functions follow JAX's default PRNG (Threefry-2x32, Salmon et al. 2011: 20 rounds in five groups of
four, rotations 13 15 26 6 / 17 29 16 24, key schedule ``k0, k1, k0 ^ k1 ^ 0x1BD11BDA``) with
``jax_threefry_partitionable`` on, the default since JAX 0.5. ``fast_path_ok`` says whether that holds;
where it does not, callers use ``jax.random`` (``randint_per_key`` does so itself). A key here is a pair
``(k0, k1)`` of ``uint32`` arrays of any (batch) shape.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array
KeyPair = tuple[Array, Array]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)
"""Threefry's key-schedule constant."""


def split_keys_at(key: Array, num: int, index: Array) -> Array:
    """``jax.random.split(key, num)[index]`` without the other keys: each Threefry split key is one hash of
    its position, so only the ``len(index)`` wanted ones are computed (indices are clamped to ``num - 1``,
    as a gather clamps them)."""
    index = jnp.clip(jnp.asarray(index, jnp.int32), 0, num - 1)
    if not fast_path_ok(key):
        return jax.random.split(key, num)[index]
    k0, k1 = key_pair(key)
    x0, x1 = threefry2x32((k0, k1), jnp.zeros(index.shape, jnp.uint32), index.astype(jnp.uint32))
    words = jnp.stack([x0, x1], axis=-1)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(words, impl=jax.random.key_impl(key))
    return words


def fast_path_ok(keys: Array) -> bool:
    """Whether ``keys`` (raw ``uint32[..., 2]`` or typed) are Threefry keys under the partitionable
    scheme, so the functions here reproduce ``jax.random``; decided while tracing."""
    if not bool(jax.threefry_partitionable.value):
        return False
    if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key):
        return str(jax.random.key_impl(keys)) == "threefry2x32"
    default_impl = str(jax.default_prng_impl.value)
    return default_impl == "threefry2x32" and keys.dtype == jnp.uint32 and keys.shape[-1:] == (2,)


def key_pair(keys: Array) -> KeyPair:
    """The two ``uint32`` words of each key in ``keys`` (``[..., 2]`` raw, or typed ``[...]``)."""
    if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key):
        keys = jax.random.key_data(keys)
    return keys[..., 0], keys[..., 1]


def threefry2x32(key: KeyPair, count_hi: Array, count_lo: Array) -> KeyPair:
    """The Threefry-2x32 hash (20 rounds) of the counter ``(count_hi, count_lo)`` under ``key``,
    broadcasting all four ``uint32`` inputs."""
    k0, k1 = key
    schedule = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = count_hi + schedule[0]
    x1 = count_lo + schedule[1]
    for block in range(5):
        for rotation in _ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(rotation)) | (x1 >> np.uint32(32 - rotation))
            x1 = x0 ^ x1
        x0 = x0 + schedule[(block + 1) % 3]
        x1 = x1 + schedule[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def split(key: KeyPair) -> tuple[KeyPair, KeyPair]:
    """``jax.random.split(key)`` (two keys), for every key of the batch."""
    zero = jnp.zeros((), jnp.uint32)
    return threefry2x32(key, zero, zero), threefry2x32(key, zero, jnp.ones((), jnp.uint32))


def random_bits(key: KeyPair, num: int) -> Array:
    """``uint32[num, *batch]``: ``jax.random.bits(key, (num,))`` of every key, the draws first."""
    k0, k1 = key
    counts = jnp.arange(num, dtype=jnp.uint32).reshape(num, *([1] * k0.ndim))
    x0, x1 = threefry2x32((k0[None], k1[None]), jnp.zeros((), jnp.uint32), counts)
    return x0 ^ x1


def randint(key: KeyPair, num: int, span: int) -> Array:
    """``int32[num, *batch]``: ``jax.random.randint(key, (num,), 0, span)`` of every key, the draws first
    (reshape the leading axis as the row-major shape the caller wanted)."""
    high_key, low_key = split(key)
    high, low = random_bits(high_key, num), random_bits(low_key, num)
    # JAX draws 64 bits per value: (high * 2**32 + low) mod span, with 2**32 mod span as a multiplier,
    # computed as JAX does in uint32 (so it wraps, as JAX's does, for spans beyond 2**16).
    modulus = np.uint32(span)
    half = 2**16 % span
    multiplier = np.uint32((half * half) % 2**32 % span)
    offset = ((high % modulus) * multiplier + low % modulus) % modulus
    return offset.astype(jnp.int32)


def randint_per_key(keys: Array, span: int) -> Array:
    """``int32[B]``: ``jax.random.randint(keys[i], (), 0, span)`` for each of the ``B`` keys (raw
    ``uint32[B, 2]`` or typed ``[B]``); ``jax.random`` itself where ``fast_path_ok`` is False."""
    if not fast_path_ok(keys):
        return jax.vmap(lambda key: jax.random.randint(key, (), 0, span))(keys)
    return randint(key_pair(keys), 1, span)[0]


def split_keys(key: Array, num: int) -> Array:
    """``jax.random.split(key, num)`` for one key (raw ``uint32[2]`` or typed), in the same kind of key;
    ``jax.random`` itself where ``fast_path_ok`` is False. ``VecEnv`` draws its per-env keys with it."""
    if not fast_path_ok(key):
        return jax.random.split(key, num)
    k0, k1 = key_pair(key)
    x0, x1 = threefry2x32((k0, k1), jnp.zeros((num,), jnp.uint32), jnp.arange(num, dtype=jnp.uint32))
    words = jnp.stack([x0, x1], axis=-1)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(words, impl=jax.random.key_impl(key))
    return words
