"""Timing compiled rollouts: each side compiled first, then the sides take turns, one repeat each per round,
so a slow spell of a shared machine falls on all of them (``time_interleaved``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.bench.kernels import KernelCounts, kernel_counts

Array = jax.Array
Carry = Any



def _leaf_sum(tree: Any) -> Array:
    leaves = [jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(tree)]
    return sum(leaves, jnp.float32(0.0))


class Timing(NamedTuple):
    """One side's measurement: compile seconds, env steps/s, and the kernels of one step."""

    compile_s: float
    steps_per_s: float
    kernels: KernelCounts


class PreparedRollout:
    """A compiled, warmed-up rollout, timed one repeat at a time so that sides can take turns.

    Calls are chained through the carry, so episodes continue across calls; ``calls`` is how many make
    one repeat (enough to last ``min_repeat_s``).
    """

    def __init__(self, init: Callable[[Array], Carry], rollout: Callable[[Carry], tuple[Carry, Array]],
                 min_repeat_s: float, seed: int = 0) -> None:
        carry = jax.block_until_ready(jax.jit(init)(jax.random.PRNGKey(seed)))
        start = time.perf_counter()
        self.compiled = jax.jit(rollout).lower(carry).compile()
        self.compile_s = time.perf_counter() - start
        """Tracing, lowering and XLA compilation of the rollout, in seconds."""
        self.kernels = kernel_counts(self.compiled.as_text() or "")
        carry, total = self.compiled(carry)  # warm-up call: first-touch allocations, thread-pool spin-up
        jax.block_until_ready(total)
        start = time.perf_counter()
        self.carry, total = self.compiled(carry)
        jax.block_until_ready(total)
        single = time.perf_counter() - start
        self.calls = max(1, int(np.ceil(min_repeat_s / max(single, 1e-9))))
        self.best_s = float("inf")
        """The fastest repeat so far, in seconds per call."""

    def repeat(self) -> float:
        """Time one repeat; returns its seconds per call and keeps the best in ``best_s``."""
        start = time.perf_counter()
        self.carry, total = self.compiled(self.carry)
        for _ in range(self.calls - 1):
            self.carry, total = self.compiled(self.carry)
        jax.block_until_ready((self.carry, total))
        seconds = (time.perf_counter() - start) / self.calls
        if not np.isfinite(float(total)):
            raise FloatingPointError("the rollout's reduction is not finite")
        self.best_s = min(self.best_s, seconds)
        return seconds


def time_interleaved(sides: Sequence[PreparedRollout], repeats: int,
                     on_error: Callable[[PreparedRollout, Exception], bool] | None = None) -> None:
    """``repeats`` rounds in which every side times one repeat in turn. A slow spell of the machine then
    falls on every side rather than on whichever ran during it, and each side's best is comparable.

    A side whose repeat raises is dropped from the later rounds when ``on_error(side, error)`` returns
    True; otherwise the error propagates."""
    active = list(sides)
    for _ in range(max(1, repeats)):
        for side in list(active):
            try:
                side.repeat()
            except Exception as error:
                if on_error is None or not on_error(side, error):
                    raise
                active.remove(side)


def _jaxmarl_dropper(sides: dict[str, PreparedRollout], notes: list[str]
                     ) -> Callable[[PreparedRollout, Exception], bool]:
    """``time_interleaved``'s ``on_error`` for a benchmark row: JaxMARL failing while timed is noted in the
    row and leaves it; ours failing is a bug, and raises."""

    def drop(side: PreparedRollout, error: Exception) -> bool:
        if side is not sides.get("jaxmarl"):
            return False
        notes.append(f"JaxMARL failed: {type(error).__name__}: {error}")
        del sides["jaxmarl"]
        return True

    return drop


def time_rollout(
    init: Callable[[Array], Carry],
    rollout: Callable[[Carry], tuple[Carry, Array]],
    repeats: int,
    min_repeat_s: float,
    seed: int = 0,
) -> tuple[float, float, KernelCounts]:
    """Compile and time ``rollout``. Returns ``(compile_s, best_seconds_per_call, kernel counts)``.

    ``init(key)`` builds the first carry (jitted, untimed). ``rollout(carry) -> (carry, scalar)`` is the
    timed function; calls are chained through the carry, so episodes continue across calls.
    """
    prepared = PreparedRollout(init, rollout, min_repeat_s, seed)
    time_interleaved([prepared], repeats)
    return prepared.compile_s, prepared.best_s, prepared.kernels
