"""The SMAX race of the training benchmark (``bench_train.py``): MAPPO (feed-forward and GRU) against
JaxMARL's ``mappo_rnn_smax.py`` to a win rate, compile included."""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (tests), not run from scripts/
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_train_sides import (  # noqa: E402
    JaxMarlIPPO,
    UpdateClock,
    _num,
    _rate,
    _ratio,
    _table,
    load_ours,
    ours_train,
    run_to_target,
)

SMAX_RACE_PRESET = "mappo_SMAX_3m"
SMAX_RACE_TARGET = 0.9
SMAX_RACE_WINDOW = 5
"""Issue 18's MAPPO race on SMAX 3m: the first update whose mean win rate over the latest 5 updates reaches
0.9, compile included, against JaxMARL's ``mappo_rnn_smax.py`` with its config; the final win rate is the
mean over the last 5 updates."""


def window_mean(values: Sequence[float], end: int, window: int) -> float:
    """Mean of the latest ``window`` finite values up to index ``end`` (updates in which no episode ended
    log NaN and are skipped); NaN until ``window`` of them exist."""
    finite = [v for v in values[: end + 1] if np.isfinite(v)]
    return float(np.mean(finite[-window:])) if len(finite) >= window else float("nan")


def first_crossing(values: Sequence[float], target: float, window: int) -> int | None:
    """Index of the first update whose ``window_mean`` reaches ``target``, or None."""
    return next((i for i in range(len(values)) if window_mean(values, i, window) >= target), None)


RACE_SIDES = ("ff", "gru", "jaxmarl")
"""The race's sides: our preset feed-forward, on its GRU path, and JaxMARL's MAPPO-RNN."""


def smax_race(jaxmarl: JaxMarlIPPO | None, *, preset: str = SMAX_RACE_PRESET, map_name: str = "3m",
              sizes: dict[str, int] | None = None, seed: int = 0, recurrent: bool = True,
              target: float = SMAX_RACE_TARGET, window: int = SMAX_RACE_WINDOW,
              max_seconds: float = math.inf, log: Callable[[str], None] | None = print,
              sides: Sequence[str] = RACE_SIDES) -> list[dict[str, Any]]:
    """Whole training runs, one per side: our MAPPO preset (feed-forward, and with ``recurrent`` the same
    preset on its GRU path) and JaxMARL's ``mappo_rnn_smax.py`` with its own config on ``map_name``. Each
    records its win rate and the time after every update (compile included), and stops after
    ``max_seconds`` (the row then says so). ``sizes`` (``num_envs``, ``num_steps``, ``total_timesteps``)
    overrides both sides' batch and length, for smoke runs. ``sides`` (of ``RACE_SIDES``) picks which run,
    so that a machine whose calls are time-limited can run them in separate calls; the ratios then need
    the sides of one call."""
    unknown = set(sides) - set(RACE_SIDES)
    if unknown:
        raise ValueError(f"unknown race sides {sorted(unknown)}; known: {list(RACE_SIDES)}")
    key = jax.random.PRNGKey(seed)
    config, hparams = load_ours(preset)
    if sizes:
        config = dataclasses.replace(config, num_envs=sizes["num_envs"], num_steps=sizes["num_steps"],
                                     total_timesteps=sizes["total_timesteps"])
    runs: list[tuple[str, Callable[[UpdateClock], tuple[Callable[..., Any], tuple[Any, ...]]], int]] = []
    if "ff" in sides:
        runs.append((f"ours MAPPO-FF ({preset})",
                     lambda clock: (ours_train(config, clock, "win_rate"), (key, hparams)),
                     config.num_envs * config.num_steps))
    if recurrent and "gru" in sides:
        gru = dataclasses.replace(config, recurrent=True)
        runs.append((f"ours MAPPO-GRU ({preset}, recurrent)",
                     lambda clock: (ours_train(gru, clock, "win_rate"), (key, hparams)),
                     gru.num_envs * gru.num_steps))
    if jaxmarl is not None and "jaxmarl" in sides:
        side = jaxmarl
        overrides: dict[str, Any] = {"MAP_NAME": map_name}
        if sizes:
            overrides |= {"NUM_ENVS": sizes["num_envs"], "NUM_STEPS": sizes["num_steps"],
                          "TOTAL_TIMESTEPS": sizes["total_timesteps"]}

        def jaxmarl_run(clock: UpdateClock) -> tuple[Callable[..., Any], tuple[Any, ...]]:
            side.clock = clock
            return side.make_train(**overrides), (key,)

        config_of = {**side.config, **overrides}
        runs.append((f"JaxMARL MAPPO-RNN ({side.path.name}, its config)", jaxmarl_run,
                     int(config_of["NUM_ENVS"]) * int(config_of["NUM_STEPS"])))
    rows = []
    for name, build_run, batch in runs:
        clock = UpdateClock(max_seconds=max_seconds)
        train, args = build_run(clock)
        try:
            result = run_to_target(train, args, clock)
        finally:
            if jaxmarl is not None:
                jaxmarl.clock = None
        hit = first_crossing(clock.returns, target, window)
        updates = len(clock.returns)
        compute_s = result["wall_s"] - result["compile_s"]
        row = {
            "side": name, "compile_s": result["compile_s"], "wall_s": result["wall_s"],
            "env_steps": updates * batch,
            "steps_per_s": updates * batch / compute_s if compute_s > 0 else None,
            "time_to_target_s": clock.times[hit] if hit is not None else None,
            "env_steps_at_target": (hit + 1) * batch if hit is not None else None,
            "final_win_rate": window_mean(clock.returns, updates - 1, window) if updates else float("nan"),
            "stopped": clock.stopped, "target": target, "window": window,
        }
        rows.append(row)
        if log:
            log(f"  race: {name}: " + (f"{window}-update win rate {target} at {row['time_to_target_s']:.1f} s"
                                       if hit is not None else f"never reached {target}")
                + f", final {row['final_win_rate']:.3f}, {row['wall_s']:.1f} s in all")
    reference = next((r for r in rows if r["side"].startswith("JaxMARL")), None)
    feed_forward = next((r for r in rows if "MAPPO-FF" in r["side"]), {"steps_per_s": None})
    reference_s = reference["time_to_target_s"] if reference else None
    for row in rows:
        row["speedup"] = (reference_s / row["time_to_target_s"]
                          if reference_s and row["time_to_target_s"] else None)
        row["vs_feed_forward"] = (row["steps_per_s"] / feed_forward["steps_per_s"]
                                  if row["steps_per_s"] and feed_forward["steps_per_s"] else None)
    return rows


def format_race(rows: Sequence[dict[str, Any]]) -> str:
    """The race as a markdown table (the target and window the rows were measured with)."""
    target = rows[0]["target"] if rows else SMAX_RACE_TARGET
    window = rows[0]["window"] if rows else SMAX_RACE_WINDOW
    return _table(
        ["side", "compile s", f"s to {target} ({window}-update mean)", "env steps then",
         "speed-up vs JaxMARL", "final win rate", "wall s", "env steps/s", "steps/s vs our FF"],
        [[r["side"] + (f" (stopped: {r['stopped']})" if r["stopped"] else ""), _num(r["compile_s"]),
          _num(r["time_to_target_s"]), _rate(r["env_steps_at_target"]), _ratio(r["speedup"]),
          f"{r['final_win_rate']:.3f}", _num(r["wall_s"]), _rate(r["steps_per_s"]),
          _ratio(r["vs_feed_forward"])] for r in rows])
