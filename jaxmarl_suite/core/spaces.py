"""Action and observation spaces for one agent of a group.

A space describes a single agent; a group of ``n`` agents stacks ``n`` such values on a leading axis.
Spaces are plain Python objects holding static structure, so they may be closed over inside ``jit``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


class Space(abc.ABC):
    """Base class: ``sample``, ``contains``, ``shape``, ``dtype`` and a Gymnasium conversion."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @abc.abstractmethod
    def sample(self, key: Array, batch_shape: Sequence[int] = (), mask: Array | None = None) -> Array:
        """Draw ``batch_shape`` independent values, respecting ``mask`` where the space supports one."""

    @abc.abstractmethod
    def contains(self, x: Any) -> Array:
        """Whether every value in ``x`` (shape ``[..., *self.shape]``) lies in the space, as a bool array."""

    @abc.abstractmethod
    def to_gymnasium(self) -> Any:
        """The equivalent ``gymnasium.spaces`` object (imports gymnasium lazily)."""


class Discrete(Space):
    """Integers ``0 .. n-1``. ``sample`` takes an optional boolean mask ``[..., n]`` of legal actions."""

    def __init__(self, n: int, dtype: Any = jnp.int32) -> None:
        if int(n) < 1:
            raise ValueError(f"Discrete needs n >= 1, got {n}")
        self.n = int(n)
        self.shape = ()
        self.dtype = np.dtype(dtype)

    def sample(self, key: Array, batch_shape: Sequence[int] = (), mask: Array | None = None) -> Array:
        """Uniform over legal actions (all actions when ``mask`` is None)."""
        batch_shape = tuple(batch_shape)
        if mask is None:
            return jax.random.randint(key, batch_shape, 0, self.n, dtype=self.dtype)
        # argmax of uniform noise over legal actions: uniform among them, and cheaper than categorical.
        noise = jax.random.uniform(key, (*batch_shape, self.n))
        legal = jnp.broadcast_to(mask, (*batch_shape, self.n))
        return jnp.argmax(jnp.where(legal, noise, -1.0), axis=-1).astype(self.dtype)

    def contains(self, x: Any) -> Array:
        """True where ``x`` is an integer in ``[0, n)``."""
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.integer):
            return jnp.zeros(x.shape, bool)
        return (x >= 0) & (x < self.n)

    def to_gymnasium(self) -> Any:
        """``gymnasium.spaces.Discrete(n)``."""
        from gymnasium import spaces

        return spaces.Discrete(self.n)

    def __repr__(self) -> str:
        return f"Discrete({self.n})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Discrete) and other.n == self.n and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("Discrete", self.n, str(self.dtype)))


class MultiDiscrete(Space):
    """A vector of independent integers, entry ``i`` in ``0 .. nvec[i]-1``."""

    def __init__(self, nvec: Sequence[int], dtype: Any = jnp.int32) -> None:
        self.nvec = tuple(int(n) for n in nvec)
        if not self.nvec or min(self.nvec) < 1:
            raise ValueError(f"MultiDiscrete needs a non-empty nvec of positive ints, got {nvec}")
        self.shape = (len(self.nvec),)
        self.dtype = np.dtype(dtype)

    def sample(self, key: Array, batch_shape: Sequence[int] = (), mask: Array | None = None) -> Array:
        """Uniform per entry. ``mask`` is not supported (per-entry masks belong in the env's action mask)."""
        if mask is not None:
            raise ValueError("MultiDiscrete.sample does not take a mask")
        nvec = jnp.asarray(self.nvec)
        unit = jax.random.uniform(key, (*tuple(batch_shape), len(self.nvec)))
        return jnp.minimum(jnp.floor(unit * nvec), nvec - 1).astype(self.dtype)

    def contains(self, x: Any) -> Array:
        """True where every entry of the last axis is in range."""
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.integer) or x.shape[-1:] != self.shape:
            return jnp.zeros(x.shape[:-1], bool)
        return jnp.all((x >= 0) & (x < jnp.asarray(self.nvec)), axis=-1)

    def to_gymnasium(self) -> Any:
        """``gymnasium.spaces.MultiDiscrete(nvec)``."""
        from gymnasium import spaces

        return spaces.MultiDiscrete(np.asarray(self.nvec))

    def __repr__(self) -> str:
        return f"MultiDiscrete({list(self.nvec)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MultiDiscrete) and other.nvec == self.nvec

    def __hash__(self) -> int:
        return hash(("MultiDiscrete", self.nvec))


class Box(Space):
    """Arrays within ``[low, high]``: real (bounds may be infinite; sampling then uses a unit normal) or,
    with an integer ``dtype``, integers between finite bounds (image-like encodings, as Overcooked's)."""

    def __init__(self, low: Any, high: Any, shape: Sequence[int], dtype: Any = jnp.float32) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        if np.issubdtype(self.dtype, np.integer):
            # sampling draws int32 values in [low, high + 1), so the bounds must leave room for high + 1
            own = np.iinfo(self.dtype)
            lowest, highest = max(int(own.min), -(2**31)), min(int(own.max), 2**31 - 2)
            for name, bound in (("low", low), ("high", high)):
                values = np.asarray(bound)
                finite = np.all(np.isfinite(values))
                if not (finite and np.all((values >= lowest) & (values <= highest))):
                    raise ValueError(f"an integer Box of {self.dtype} needs {name} within "
                                     f"[{lowest}, {highest}], got {bound!r}")
        elif not np.issubdtype(self.dtype, np.floating):
            raise ValueError(f"Box dtype must be a float or integer type, got {self.dtype}")
        self.low = np.broadcast_to(np.asarray(low, self.dtype), self.shape).copy()
        self.high = np.broadcast_to(np.asarray(high, self.dtype), self.shape).copy()
        if np.any(self.low > self.high):
            raise ValueError("Box needs low <= high everywhere")

    def sample(self, key: Array, batch_shape: Sequence[int] = (), mask: Array | None = None) -> Array:
        """Uniform where both bounds are finite; normal, clipped to the bounds, elsewhere. Integer Boxes
        draw uniformly from ``low`` to ``high`` inclusive."""
        if mask is not None:
            raise ValueError("Box.sample does not take a mask")
        full = (*tuple(batch_shape), *self.shape)
        if np.issubdtype(self.dtype, np.integer):
            # randint takes an exclusive maximum beyond the dtype's range and still reaches its top value
            return jax.random.randint(key, full, self.low, self.high.astype(np.int64) + 1, dtype=self.dtype)
        k_uniform, k_normal = jax.random.split(key)
        finite = np.isfinite(self.low) & np.isfinite(self.high)
        low = np.where(finite, self.low, 0.0)
        high = np.where(finite, self.high, 1.0)
        uniform = jax.random.uniform(k_uniform, full, self.dtype, low, high)
        normal = jnp.clip(jax.random.normal(k_normal, full, self.dtype), self.low, self.high)
        return jnp.where(finite, uniform, normal)

    def contains(self, x: Any) -> Array:
        """True where ``x`` has this trailing shape, a dtype of this Box's kind (float or integer) and lies
        within the bounds."""
        x = jnp.asarray(x)
        ndim = len(self.shape)
        kind = jnp.integer if np.issubdtype(self.dtype, np.integer) else jnp.floating
        if not jnp.issubdtype(x.dtype, kind) or x.shape[x.ndim - ndim :] != self.shape:
            return jnp.zeros(x.shape[: max(x.ndim - ndim, 0)], bool)
        inside = (x >= self.low) & (x <= self.high)
        return jnp.all(inside.reshape(*x.shape[: x.ndim - ndim], -1), axis=-1)

    def to_gymnasium(self) -> Any:
        """``gymnasium.spaces.Box`` with the same bounds, shape and dtype."""
        from gymnasium import spaces

        return spaces.Box(low=self.low, high=self.high, shape=self.shape, dtype=self.dtype.type)

    def __repr__(self) -> str:
        lo, hi = np.unique(self.low), np.unique(self.high)
        lo_s = f"{lo[0]:g}" if lo.size == 1 else "array"
        hi_s = f"{hi[0]:g}" if hi.size == 1 else "array"
        return f"Box({lo_s}, {hi_s}, {self.shape}, {self.dtype})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Box)
            and other.shape == self.shape
            and other.dtype == self.dtype
            and np.array_equal(other.low, self.low)
            and np.array_equal(other.high, self.high)
        )

    def __hash__(self) -> int:
        return hash(("Box", self.shape, str(self.dtype)))
