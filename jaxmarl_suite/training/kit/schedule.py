"""Schedules that depend on a run's length (the learning-rate anneal, epsilon's decay) when a finished or
interrupted run is extended (``train --resume RUN --total-timesteps N --extend hold|restart``).

A run that is never extended follows each schedule over ``num_updates`` exactly as written in its baseline.
An extension is recorded in the config's ``extensions`` field as ``(update, total_timesteps before, mode)``,
and every length-dependent schedule then reads the run's *progress through its schedules*, a piecewise
linear function of the update in [0, 1] (``schedule_knots``), instead of ``update / num_updates``:

- ``hold``: the schedules keep the end they had before the extension and hold the value of its last
  update from then on (the learning rate stays at its last, small value; epsilon at the value its last
  update used, its end value once its decay is over);
- ``restart``: from the update the run resumes at, the progress left is spread over the updates left, so
  every schedule continues from its current value (for a finished run, the value its last update used) and
  reaches its end value at the new total (the learning rate falls linearly from its current value to zero
  at the new end).

A learning rate annealed to zero is nearly spent when a run finishes: extending a finished run in either
mode trains on at about ``lr / num_updates`` or less. Both modes are exact continuations, not a second
warm-up.

Both are continuous where the run resumes, which recomputing the schedules over the new total (what
resuming did before) is not: an annealed rate near zero would jump back up.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_suite.errors import require

Array = jax.Array

EXTEND_MODES = ("hold", "restart")
"""How the length-dependent schedules continue when a run's ``total_timesteps`` is raised on resume."""

RECORDED_MODES = (*EXTEND_MODES, "none")
"""What ``extensions`` may record: ``none`` where no schedule depended on the run's length (the runner
needed no ``--extend``; the run went on exactly as a longer one)."""

Extension = tuple[int, int, str]
"""``(update the extension starts at, total_timesteps before it, mode)``."""


def check_extensions(config: Any) -> None:
    """Raise ``ConfigError`` unless ``config.extensions`` is a well-formed record: modes from
    ``EXTEND_MODES``, updates and totals increasing, each total below the next (and below the run's)."""
    extensions = tuple(config.extensions)
    previous_update, previous_total = -1, 0
    for extension in extensions:
        require(isinstance(extension, tuple) and len(extension) == 3, "extensions",
                f"each entry must be [update, total_timesteps before, mode], got {extension!r}")
        update, total, mode = extension
        require(mode in RECORDED_MODES, "extensions",
                f"mode must be one of {list(RECORDED_MODES)}, got {mode!r}")
        # an extension interrupted before its first checkpoint is extended again from the same update
        require(isinstance(update, int) and update >= max(previous_update, 0), "extensions",
                f"updates must not decrease, got {update!r} after {previous_update}")
        require(isinstance(total, int) and previous_total < total, "extensions",
                f"totals before each extension must increase, got {total!r} after {previous_total}")
        require(update <= total // config.batch_size, "extensions",
                f"an extension at update {update} lies past the run's end then ({total} env steps)")
        previous_update, previous_total = update, total
    if extensions:
        require(previous_total < config.total_timesteps, "extensions",
                f"the last extension raised total_timesteps from {previous_total}, so total_timesteps must "
                f"exceed it, got {config.total_timesteps}")


def _value(knots: list[tuple[float, float]], update: float) -> float:
    """The piecewise-linear function through ``knots`` at ``update``, held constant past its ends."""
    if update <= knots[0][0]:
        return knots[0][1]
    for (x0, y0), (x1, y1) in zip(knots, knots[1:], strict=False):
        if update <= x1:
            return y0 + (y1 - y0) * (update - x0) / (x1 - x0)
    return knots[-1][1]


def _cut(knots: list[tuple[float, float]], update: float) -> list[tuple[float, float]]:
    """``knots`` up to ``update``, ending with a knot at ``update`` (the function unchanged up to there)."""
    return [k for k in knots if k[0] < update] + [(update, _value(knots, update))]


def schedule_knots(config: Any, *, env_steps: bool = False) -> tuple[tuple[float, float], ...]:
    """``(update, progress)`` knots of the run's progress through its schedules; empty for a run never
    extended (progress is then ``update / num_updates``, computed as the baselines always have).

    The learning rate's progress counts whole updates (``update / num_updates``); a schedule over env
    steps (epsilon's, ``env_steps``) counts ``update * batch_size / total_timesteps``. The two differ where
    the total is not a multiple of the batch, so each gets its own knots and neither jumps."""
    extensions: tuple[Extension, ...] = tuple(getattr(config, "extensions", ()))
    if not extensions:
        return ()
    batch = config.batch_size

    def end(total: int) -> float:
        return total / batch if env_steps else float(total // batch)

    knots = [(0.0, 0.0), (end(extensions[0][1]), 1.0)]
    ends = [end(total) for _, total, _ in extensions[1:]] + [end(config.total_timesteps)]
    for (update, total, mode), new_end in zip(extensions, ends, strict=True):
        if mode in ("hold", "none"):
            # the last update the schedule planned for is the last one whose value is used
            knots = _cut(knots, float(total // batch - 1))
        else:
            # the current value is the one the next update would use, but never past the schedule's last
            # planned update: a finished run continues from the value its last update used
            current = float(min(update, total // batch - 1))
            knots = _cut(knots, current)
            if update > current:
                knots.append((float(update), knots[-1][1]))
            knots.append((float(new_end), 1.0))
    return tuple(knots)


def schedule_progress(update: Array | int, knots: tuple[tuple[float, float], ...]) -> Array:
    """The run's progress through its schedules at ``update`` (float32 in [0, 1]), from non-empty ``knots``
    (``schedule_knots``)."""
    xs = jnp.asarray([k[0] for k in knots], jnp.float32)
    ys = jnp.asarray([k[1] for k in knots], jnp.float32)
    return jnp.interp(jnp.asarray(update, jnp.float32), xs, ys)


def schedule_env_steps(update: Array, config: Any) -> Array:
    """The env steps a length-dependent schedule (epsilon's decay over a fraction of ``total_timesteps``)
    reads at ``update``: ``update * batch_size`` for a run never extended, else the run's progress through
    its schedules times ``total_timesteps``."""
    knots = schedule_knots(config, env_steps=True)
    if not knots:
        return update * config.batch_size
    return schedule_progress(update, knots) * config.total_timesteps
