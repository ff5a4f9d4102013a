"""Training speed: our IPPO against JaxMARL's IPPO-FF (``ippo_ff_mpe.py``) on MPE_simple_spread_v3.

    python scripts/bench_train.py --jaxmarl-ippo PATH/TO/JaxMARL/baselines/IPPO/ippo_ff_mpe.py \\
        [--sections target identical seeds profile] [--markdown PATH]

JaxMARL's IPPO is not in its pip package: clone https://github.com/FLAIROx/JaxMARL and pass
``baselines/IPPO/ippo_ff_mpe.py``. Its config is read from ``--jaxmarl-config``, else from
``ippo_ff_mpe.yaml`` next to the file or in ``config/`` beside it (the repository's layout). The file is
imported with ``hydra``, ``omegaconf`` and ``wandb`` replaced by inert stubs; only its ``make_train`` runs,
unchanged except that its ``orthogonal`` initializer is ours (the same values; it avoids a CPU deadlock
of vmapped seeds in jax 0.10.2). Without ``--jaxmarl-ippo`` only our side runs. Nothing here touches the
network.

Sections (each runs both sides alternately in this process, so ratios are like for like):

- ``target``: wall-clock, compile included, until the per-update mean per-agent episode return first
  reaches ``--target`` (-20.7, i.e. JaxMARL's logged -62 / 3 agents). Ours with the fast preset (and with
  JaxMARL's hyperparameters), JaxMARL with its default config. Both sides run a whole training as one
  jitted program; a host callback after every update (JaxMARL's own ``io_callback``; the same one added
  around our ``update``) timestamps the return and stops the program once the target is reached.
- ``identical``: JaxMARL's config on both sides; steps/s and wall-clock for ``--timesteps`` env steps,
  compile included and excluded.
- ``seeds``: total steps/s of ``jax.vmap(train)`` over 1, 4 and 16 seeds, JaxMARL's config.
- ``profile``: where the time of one update goes (rollout, loss forward/backward, optimizer, shuffle), from
  an XLA trace (``jax.profiler``) attributed to the source function of every HLO op.

One env step is every agent of one env acting once (JaxMARL's ``TOTAL_TIMESTEPS`` counts the same).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import gzip
import importlib.util
import json
import logging
import math
import os
import re
import shlex
import sys
import tempfile
import time
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml

from jaxmarl_suite.baselines import ippo, mappo
from jaxmarl_suite.bench import (
    GPU_TARGETS,
    GpuTargetUnavailableError,
    gpu_kernel_counts,
    kernel_counts,
    machine_info,
)
from jaxmarl_suite.compat.jaxmarl_scripts import import_jaxmarl_script, stdout_to_stderr
from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.kit.networks import orthogonal
from jaxmarl_suite.training.runner.config import build, load_preset

Array = jax.Array

ENV_ID = "MPE_simple_spread_v3"
TARGET_RETURN = -20.7
"""Per-agent episode return to reach: JaxMARL's logged -62 divided by its 3 agents."""
FAST_PRESET = "ippo_MPE_simple_spread_v3_fast"
DEFAULT_PRESET = "ippo_MPE_simple_spread_v3"
SECTIONS = ("target", "identical", "seeds", "profile", "kernels")

JAXMARL_TO_OURS = {
    "ENV_NAME": "env_id", "ENV_KWARGS": "env_kwargs", "NUM_ENVS": "num_envs", "NUM_STEPS": "num_steps",
    "TOTAL_TIMESTEPS": "total_timesteps", "UPDATE_EPOCHS": "update_epochs",
    "NUM_MINIBATCHES": "num_minibatches", "ACTIVATION": "activation", "ANNEAL_LR": "anneal_lr",
    "LR": "lr", "GAMMA": "gamma", "GAE_LAMBDA": "gae_lambda", "CLIP_EPS": "clip_eps",
    "ENT_COEF": "ent_coef", "VF_COEF": "vf_coef", "MAX_GRAD_NORM": "max_grad_norm",
}
"""JaxMARL ``ippo_ff_mpe.yaml`` keys -> our ``ippo.Config`` / ``ippo.HParams`` fields."""
JAXMARL_INT_KEYS = ("NUM_ENVS", "NUM_STEPS", "TOTAL_TIMESTEPS", "UPDATE_EPOCHS", "NUM_MINIBATCHES")


# --------------------------------------------------------------------------------------------------
# The two sides
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class UpdateClock:
    """Host-side record of one training run: time, per-agent return and episode count after every update.

    ``record`` is called from inside the compiled program. The checked return is the episode-weighted mean
    of the per-update returns over the fewest latest updates holding ``window_episodes`` episodes, so a
    lucky update does not end the race and sides with small and large batches are judged alike. It raises
    ``StopTrainingError`` once that reaches ``target`` (after ``warmup_updates``) or once ``max_seconds``
    have passed since ``start``.
    """

    target: float | None = None
    max_seconds: float = math.inf
    warmup_updates: int = 0
    window_episodes: float = 0.0
    start: float = dataclasses.field(default_factory=time.perf_counter)
    times: list[float] = dataclasses.field(default_factory=list)
    returns: list[float] = dataclasses.field(default_factory=list)
    episodes: list[float] = dataclasses.field(default_factory=list)
    hit_update: int | None = None
    first_raw_update: int | None = None
    stopped: str | None = None

    def windowed_return(self) -> float:
        """Episode-weighted mean return over the latest updates holding ``window_episodes`` episodes."""
        total = weighted = 0.0
        for value, count in zip(reversed(self.returns), reversed(self.episodes), strict=True):
            if count > 0 and np.isfinite(value):
                total, weighted = total + count, weighted + count * value
            if total >= max(self.window_episodes, 1e-9):
                return weighted / total
        return float("nan")

    def record(self, per_agent_return: Any, episodes: Any) -> None:
        """Timestamp one update; stop the program when the target is reached or time is up."""
        self.times.append(time.perf_counter() - self.start)
        self.returns.append(float(per_agent_return))
        self.episodes.append(float(episodes))
        update = len(self.returns) - 1
        if self.target is not None and update >= self.warmup_updates:
            if self.first_raw_update is None and self.returns[-1] >= self.target:
                self.first_raw_update = update
            if self.windowed_return() >= self.target:
                self.hit_update, self.stopped = update, "target"
                raise StopTrainingError("target reached")
        if self.times[-1] > self.max_seconds:
            self.stopped = "time limit"
            raise StopTrainingError("time limit")


class StopTrainingError(Exception):
    """Raised from a host callback to end a compiled training run early."""


@dataclasses.dataclass
class JaxMarlIPPO:
    """JaxMARL's ``ippo_ff_mpe.py`` loaded as a module, its config, and the hook its logging calls."""

    module: types.ModuleType
    config: dict[str, Any]
    num_agents: int
    path: Path
    config_path: Path
    clock: UpdateClock | None = None

    def log(self, metric: dict[str, Any]) -> None:
        """Stands in for ``wandb.log``, which JaxMARL's ``io_callback`` calls after every update. Its SMAX
        scripts log a ready ``win_rate`` (NaN when no episode ended), recorded once per update."""
        if self.clock is not None and "win_rate" in metric:
            self.clock.record(float(np.asarray(metric["win_rate"])), 1.0)
        elif self.clock is not None:
            steps = self.config["NUM_ENVS"] * self.config["NUM_STEPS"]  # "returned_episode": 0/1 per step
            self.clock.record(float(np.mean(metric["returned_episode_returns"])) / self.num_agents,
                              float(np.mean(metric["returned_episode"])) * steps)

    def make_train(self, **overrides: Any) -> Callable[[Array], Any]:
        """JaxMARL's ``make_train`` on a copy of its config with ``overrides`` (e.g. ``TOTAL_TIMESTEPS``)."""
        return self.module.make_train({**self.config, **overrides})


def find_jaxmarl_config(ippo_path: Path) -> Path:
    """``ippo_ff_mpe.yaml`` next to the script, or in ``config/`` beside it (JaxMARL's repository layout;
    ``mappo_rnn_smax.py``'s is ``config/mappo_homogenous_rnn_smax.yaml``)."""
    homogenous = ippo_path.stem.replace("mappo_", "mappo_homogenous_", 1)  # JaxMARL's MAPPO config names
    candidates = (ippo_path.with_suffix(".yaml"), ippo_path.parent / "config" / f"{ippo_path.stem}.yaml",
                  ippo_path.parent / "config" / f"{homogenous}.yaml")
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"no config for {ippo_path}: expected one of {', '.join(str(c) for c in candidates)}; "
        "pass --jaxmarl-config"
    )


def read_jaxmarl_config(path: Path) -> dict[str, Any]:
    """JaxMARL's YAML config with numbers parsed as hydra does (``1e7`` is a float there, a str in PyYAML)."""
    config = yaml.safe_load(Path(path).read_text())
    for key, value in config.items():
        if isinstance(value, str) and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", value):
            config[key] = float(value)
    for key in JAXMARL_INT_KEYS:
        config[key] = int(config[key])
    return config


def load_jaxmarl_ippo(path: str | os.PathLike[str], config_path: str | os.PathLike[str] | None = None
                      ) -> JaxMarlIPPO:
    """Import JaxMARL's ``ippo_ff_mpe.py`` with ``hydra``/``omegaconf``/``wandb`` stubbed out."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"JaxMARL script {path} does not exist (clone FLAIROx/JaxMARL)")
    config_file = Path(config_path).resolve() if config_path else find_jaxmarl_config(path)
    config = read_jaxmarl_config(config_file)
    holder: dict[str, JaxMarlIPPO] = {}
    module = import_jaxmarl_script(path, module_name="jaxmarl_ippo_ff_mpe",
                                   wandb_log=lambda metric, *args, **kwargs: holder["side"].log(metric))
    with stdout_to_stderr():
        jaxmarl = getattr(module, "jaxmarl", None) or importlib.import_module("jaxmarl")
        num_agents = jaxmarl.make(config["ENV_NAME"], **config["ENV_KWARGS"]).num_agents
    if hasattr(module, "orthogonal"):
        # Same values as flax's, but vmapped seeds no longer hang in a batched QR on jax 0.10.2's CPU
        # backend (see jaxmarl_suite.training.kit.networks.orthogonal); both sides use it.
        module.orthogonal = orthogonal
    side = JaxMarlIPPO(module, config, num_agents, path, config_file)
    holder["side"] = side
    return side


def ours_from_jaxmarl(config: dict[str, Any], module: types.ModuleType = ippo) -> tuple[Any, Any]:
    """``module``'s (our IPPO's, or MAPPO's) ``Config``/``HParams`` with JaxMARL's values (hidden layers
    64-64 on both sides)."""
    config_fields = {f.name for f in dataclasses.fields(module.Config)}
    values = {ours: config[theirs] for theirs, ours in JAXMARL_TO_OURS.items() if theirs in config}
    return (build(module.Config, {k: v for k, v in values.items() if k in config_fields}),
            build(module.HParams, {k: v for k, v in values.items() if k not in config_fields}))


def load_ours(preset: str) -> tuple[Any, Any]:
    """``(Config, HParams)`` of a preset name in ``baselines/configs/`` or a YAML path: IPPO's, or MAPPO's
    when the preset says ``algorithm: mappo``."""
    data = load_preset(preset)
    module = mappo if data.get("algorithm") == "mappo" else ippo
    return (build(module.Config, data.get("config") or {}, where=f" in preset {preset!r}"),
            build(module.HParams, data.get("hparams") or {}, where=f" in preset {preset!r}"))


def ours_train(config: Any, clock: UpdateClock | None = None, metric: str = "return_mean"
               ) -> Callable[[Array, Any], Any]:
    """Our ``train(key, hparams)``: the kit's ``make_train`` of IPPO (MAPPO for a ``mappo.Config``), with
    ``clock`` timing every update through an ``io_callback``, as JaxMARL's scripts time theirs. ``metric``
    is what the clock records: the return, weighted by the update's episodes, or ``win_rate``, once per
    update as JaxMARL's SMAX scripts log it."""
    module = mappo if isinstance(config, mappo.Config) else ippo
    if clock is None:
        return make_train(module, config)

    def record(update: Any, metrics: dict[str, Any]) -> None:
        clock.record(metrics[metric], metrics["episodes"] if metric == "return_mean" else 1.0)

    return make_train(module, config, on_update=record, io=True)


# --------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------


def _block(tree: Any) -> Any:
    return jax.block_until_ready(tree)


@contextlib.contextmanager
def _quiet_callback_errors() -> Iterator[None]:
    """JAX logs a traceback when a host callback raises; ``StopTrainingError`` is expected, so mute it."""
    logger = logging.getLogger("jax._src.callback")
    previous = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = previous


def run_to_target(train: Callable[..., Any], args: tuple[Any, ...], clock: UpdateClock) -> dict[str, Any]:
    """Compile and run ``train(*args)`` until ``clock`` stops it. Times count from before tracing."""
    clock.start = time.perf_counter()
    compiled = jax.jit(train).lower(*args).compile()
    compile_s = time.perf_counter() - clock.start
    with _quiet_callback_errors():
        try:
            _block(compiled(*args))
        except Exception:  # StopTraining arrives wrapped in an XLA runtime error
            if clock.stopped is None:
                raise
    reached = clock.stopped == "target"
    hit = clock.hit_update
    finite = [r for r in clock.returns if np.isfinite(r)]
    return {
        "compile_s": compile_s,
        "reached": reached,
        "time_to_target_s": clock.times[hit] if reached and hit is not None else None,
        "first_raw_s": clock.times[clock.first_raw_update] if clock.first_raw_update is not None else None,
        "updates": (hit + 1) if hit is not None else len(clock.returns),
        "wall_s": clock.times[-1] if clock.times else compile_s,
        "best_return": max(finite) if finite else float("nan"),
    }


def time_to_target(
    ours_config: ippo.Config,
    ours_hparams: ippo.HParams,
    jaxmarl: JaxMarlIPPO | None,
    *,
    target: float = TARGET_RETURN,
    seeds: Sequence[int] = (0, 1, 2),
    max_seconds: float = 300.0,
    window_episodes: float = 500.0,
    identical: bool = True,
    log: Callable[[str], None] | None = print,
) -> list[dict[str, Any]]:
    """One row per side and seed: seconds (compile included) until the mean per-agent episode return over
    the latest ``window_episodes`` episodes first reaches ``target`` (see ``UpdateClock``). Sides alternate
    within each seed. ``identical`` adds our IPPO with JaxMARL's hyperparameters. JaxMARL's first
    ``ceil(25 / NUM_STEPS)`` updates are not checked: its logged return counts zeros for envs that have not
    finished an episode yet."""
    runs: list[tuple[str, Callable[[int], dict[str, Any]]]] = []

    def ours_run(config: ippo.Config, hparams: ippo.HParams) -> Callable[[int], dict[str, Any]]:
        def run(seed: int) -> dict[str, Any]:
            clock = UpdateClock(target, max_seconds, window_episodes=window_episodes)
            result = run_to_target(ours_train(config, clock), (jax.random.PRNGKey(seed), hparams), clock)
            return {**result, "batch_size": config.batch_size}
        return run

    runs.append(("ours (fast preset)", ours_run(ours_config, ours_hparams)))
    if jaxmarl is not None:
        side = jaxmarl

        def jaxmarl_run(seed: int) -> dict[str, Any]:
            warmup = math.ceil(25 / side.config["NUM_STEPS"])
            side.clock = UpdateClock(target, max_seconds, warmup, window_episodes)
            try:
                result = run_to_target(side.make_train(), (jax.random.PRNGKey(seed),), side.clock)
            finally:
                side.clock = None
            return {**result, "batch_size": side.config["NUM_ENVS"] * side.config["NUM_STEPS"]}

        runs.append(("JaxMARL IPPO-FF (default config)", jaxmarl_run))
        if identical:
            runs.append(("ours (JaxMARL's config)", ours_run(*ours_from_jaxmarl(side.config))))
    rows = []
    for seed in seeds:
        for name, run in runs:
            row = {"side": name, "seed": seed, **run(seed)}
            row["env_steps"] = row["updates"] * row["batch_size"]
            rows.append(row)
            if log:
                log(f"  target: {name} seed {seed}: "
                    + (f"{row['time_to_target_s']:.1f} s" if row["reached"] else "not reached")
                    + f" (compile {row['compile_s']:.1f} s, {row['updates']} updates)")
    return rows


def summarize_target(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median over seeds per side, and the speed-up of each side over JaxMARL's median."""
    by_side: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_side[row["side"]].append(row)
    summary = []
    for side, side_rows in by_side.items():
        reached = [r for r in side_rows if r["reached"]]
        times = [r["time_to_target_s"] for r in reached]
        summary.append({
            "side": side,
            "seeds": len(side_rows),
            "reached": len(reached),
            "median_s": float(np.median(times)) if len(reached) == len(side_rows) else None,
            "compile_s": float(np.median([r["compile_s"] for r in side_rows])),
            "median_env_steps": float(np.median([r["env_steps"] for r in reached])) if reached else None,
            "median_first_raw_s": (float(np.median([r["first_raw_s"] for r in side_rows]))
                                   if all(r["first_raw_s"] is not None for r in side_rows) else None),
            "per_seed_s": [r["time_to_target_s"] for r in side_rows],
        })
    reference = next((s for s in summary if s["side"].startswith("JaxMARL")), None)
    for s in summary:
        s["speedup"] = (reference["median_s"] / s["median_s"]
                        if reference and reference["median_s"] and s["median_s"] else None)
    return summary


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


def _compile(function: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, float]:
    start = time.perf_counter()
    compiled = jax.jit(function).lower(*args).compile()
    return compiled, time.perf_counter() - start


def _timed_run(compiled: Any, args: tuple[Any, ...]) -> tuple[float, float]:
    """``(wall_s, process_cpu_s)`` of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    _block(compiled(*args))
    return time.perf_counter() - start, time.process_time() - cpu


def identical_config(
    jaxmarl: JaxMarlIPPO | None,
    timesteps: Sequence[int] = (1_000_000,),
    repeats: int = 2,
    ours: tuple[ippo.Config, ippo.HParams] | None = None,
    log: Callable[[str], None] | None = print,
    num_envs: Sequence[int | None] = (None,),
    with_mappo: bool = False,
) -> list[dict[str, Any]]:
    """Rows per side, env count and ``timesteps``: compile s, best run s (and its process CPU s), steps/s
    with and without compile. Both sides use JaxMARL's config (ours from ``ours``, else the default preset,
    when JaxMARL is absent), with ``NUM_ENVS`` replaced by each of ``num_envs`` (None keeps it).
    ``with_mappo`` adds our MAPPO with the same hyperparameters. Runs alternate between the sides."""
    if ours is None:
        ours = ours_from_jaxmarl(jaxmarl.config) if jaxmarl is not None else load_ours(DEFAULT_PRESET)
    rows = []
    for envs, total in [(envs, total) for envs in num_envs for total in timesteps]:
        envs = envs or ours[0].num_envs
        config = dataclasses.replace(ours[0], total_timesteps=total, num_envs=envs)
        key = jax.random.PRNGKey(0)
        sides: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
            ("ours", ours_train(config), (key, ours[1]))
        ]
        if jaxmarl is not None:
            sides.append(("JaxMARL", jaxmarl.make_train(TOTAL_TIMESTEPS=total, NUM_ENVS=envs), (key,)))
        if with_mappo:
            # IPPO's fields MAPPO has (not, say, IPPO's observation torso: MAPPO's is an MLP)
            shared = {f.name for f in dataclasses.fields(mappo.Config)}
            mappo_config = mappo.Config(**{f.name: getattr(config, f.name) for f in dataclasses.fields(config)
                                           if f.name in shared})
            mappo_hparams = mappo.HParams(**dataclasses.asdict(ours[1]))
            sides.append(("ours MAPPO", ours_train(mappo_config), (key, mappo_hparams)))
        compiled = {name: _compile(fn, args) for name, fn, args in sides}
        runs: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for _ in range(repeats):
            for name, _fn, args in sides:
                runs[name].append(_timed_run(compiled[name][0], args))
        for name, _fn, _args in sides:
            wall, cpu = min(runs[name])
            compile_s = compiled[name][1]
            rows.append({"side": name, "envs": envs, "timesteps": total, "compile_s": compile_s,
                         "run_s": wall, "cpu_s": cpu, "sps": total / wall,
                         "sps_with_compile": total / (wall + compile_s),
                         "runs_s": [r[0] for r in runs[name]]})
            if log:
                log(f"  identical: {name} {envs} envs, {total:.0e} steps: run {wall:.1f} s, "
                    f"compile {compile_s:.1f} s")
    _add_ratios(rows, ("envs", "timesteps"), "sps")
    return rows


def seed_scaling(
    jaxmarl: JaxMarlIPPO | None,
    seeds: Sequence[int] = (1, 4, 16),
    timesteps: int = 1_000_000,
    ours: tuple[ippo.Config, ippo.HParams] | None = None,
    log: Callable[[str], None] | None = print,
) -> list[dict[str, Any]]:
    """Rows per side and seed count: total env steps/s of ``jax.vmap(train)`` over that many keys
    (``timesteps`` per seed), JaxMARL's config. One timed run after compiling."""
    if ours is None:
        ours = ours_from_jaxmarl(jaxmarl.config) if jaxmarl is not None else load_ours(DEFAULT_PRESET)
    config = dataclasses.replace(ours[0], total_timesteps=timesteps)
    rows = []
    for count in seeds:
        keys = jax.random.split(jax.random.PRNGKey(0), count)
        sides: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
            ("ours", jax.vmap(ours_train(config), in_axes=(0, None)), (keys, ours[1]))
        ]
        if jaxmarl is not None:
            sides.append(("JaxMARL", jax.vmap(jaxmarl.make_train(TOTAL_TIMESTEPS=timesteps)), (keys,)))
        for name, function, args in sides:
            compiled, compile_s = _compile(function, args)
            wall, cpu = _timed_run(compiled, args)
            rows.append({"side": name, "seeds": count, "timesteps": timesteps, "compile_s": compile_s,
                         "run_s": wall, "cpu_s": cpu, "sps": count * timesteps / wall})
            if log:
                log(f"  seeds: {name} x{count}: {count * timesteps / wall:,.0f} steps/s")
    _add_ratios(rows, ("seeds",), "sps")
    return rows


def _add_ratios(rows: list[dict[str, Any]], keys: Sequence[str], value: str) -> None:
    """``ratio`` = ours / JaxMARL for rows that share ``keys``; None without a JaxMARL row."""
    for row in rows:
        match = next((r for r in rows if r["side"] == "JaxMARL" and all(r[k] == row[k] for k in keys)), None)
        row["ratio"] = row[value] / match[value] if match and row["side"].startswith("ours") else None


# --------------------------------------------------------------------------------------------------
# Profile: XLA trace events attributed to the Python function that emitted each HLO op
# --------------------------------------------------------------------------------------------------

PHASES = (
    "rollout: env step", "rollout: policy forward", "rollout: action sampling", "rollout: other",
    "bootstrap values", "GAE", "loss forward", "loss backward", "optimizer (clip + Adam)",
    "shuffle + minibatch split", "other",
)
"""Where an update's time goes; ``classify_op`` maps each HLO op to one of these."""

_HLO_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


StackOf = Callable[[int], list[tuple[str, str]]]


def parse_hlo_stacks(hlo_text: str) -> tuple[dict[str, tuple[str, int]], StackOf]:
    """From a compiled module's text: ``{op name: (op_name metadata, stack frame id)}`` and a function
    giving the Python stack ``[(file, function)]`` (innermost first) of a frame id.

    The text lists frames as ``id {file_location_id=L parent_frame_id=P}``, where ``P`` is the parent's id
    plus one and 0 means none (checked on jax 0.10.2 against a known call chain)."""
    tables: dict[str, dict[int, str]] = {name: {} for name in _HLO_SECTIONS}
    ops: dict[str, tuple[str, int]] = {}
    section = None
    for line in hlo_text.splitlines():
        stripped = line.strip()
        if stripped in tables:
            section = stripped
            continue
        if section and re.match(r"^\d+ ", stripped):
            index, rest = stripped.split(" ", 1)
            tables[section][int(index)] = rest
            continue
        section = None if stripped else section
        match = re.match(r"^(?:ROOT )?%([\w.\-]+) = .*metadata=\{([^}]*)\}", stripped)
        if match:
            op_name = re.search(r'op_name="([^"]*)"', match.group(2))
            frame = re.search(r"stack_frame_id=(\d+)", match.group(2))
            ops[match.group(1)] = (op_name.group(1) if op_name else "", int(frame.group(1)) if frame else 0)
    files = {i: v.strip('"') for i, v in tables["FileNames"].items()}
    functions = {i: v.strip('"') for i, v in tables["FunctionNames"].items()}
    locations = {i: tuple(int(n) for n in re.findall(r"(?:file_name_id|function_name_id)=(\d+)", v)[:2])
                 for i, v in tables["FileLocations"].items()}
    frames = {i: tuple(int(n) for n in re.findall(r"(?:file_location_id|parent_frame_id)=(\d+)", v))
              for i, v in tables["StackFrames"].items()}

    def stack(frame_id: int) -> list[tuple[str, str]]:
        out, seen = [], set()
        while frame_id in frames and frame_id not in seen:
            seen.add(frame_id)
            location, parent = frames[frame_id]
            file_id, function_id = locations[location]
            out.append((files.get(file_id, "?"), functions.get(function_id, "?")))
            frame_id = parent - 1
        return out

    return ops, stack


def trace_self_times(trace_file: str | os.PathLike[str]) -> Counter[str]:
    """Microseconds of self time (duration minus nested events) per event name, summed over threads."""
    with gzip.open(trace_file) as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by_thread[(event["pid"], event["tid"])].append(event)
    totals: Counter[str] = Counter()
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        open_events: list[list[Any]] = []  # [end, name, duration, nested duration]
        for event in thread_events:
            start, duration = event["ts"], event.get("dur", 0)
            while open_events and open_events[-1][0] <= start:
                _end, name, total, nested = open_events.pop()
                totals[name] += total - nested
            if open_events:
                open_events[-1][3] += duration
            open_events.append([start + duration, event["name"], duration, 0.0])
        for _end, name, total, nested in open_events:
            totals[name] += total - nested
    return totals


def classify_op(stack: Sequence[tuple[str, str]], op_name: str, algorithm_file: str) -> str:
    """The ``PHASES`` entry of one HLO op, from the functions on its Python stack (both files' names)."""
    # the algorithm's own frames, and the PPO pieces it calls in the kit (epochs, minibatches, the loss)
    chain = " ".join(function for file, function in stack
                     if file.endswith(algorithm_file) or file.endswith("training/kit/ppo.py"))
    files = " ".join(file for file, _ in stack)
    in_env = any("/environments/" in file or "/wrappers/" in file for file, _ in stack)
    if re.search(r"\brollout\b|_env_step", chain):
        if in_env:
            return "rollout: env step"
        if "ActorCritic" in chain:
            return "rollout: policy forward"
        if "distrax" in files or "action_distribution" in chain:
            return "rollout: action sampling"
        return "rollout: other"
    if "/training/kit/gae.py" in files or "_calculate_gae" in chain:
        return "GAE"
    if "loss_fn" in chain:
        return "loss backward" if "transpose(" in op_name else "loss forward"
    if "minibatch_step" in chain or "_update_minbatch" in chain:
        return "optimizer (clip + Adam)"
    if re.search(r"\bepoch\b|_update_epoch", chain):
        return "shuffle + minibatch split"
    if "bootstrap_values" in chain or "ActorCritic" in chain:
        return "bootstrap values"
    return "other"


def profile_update(train: Callable[..., Any], args: tuple[Any, ...], updates: int, algorithm_file: str
                   ) -> dict[str, Any]:
    """Trace one run of ``train(*args)`` (``updates`` updates) and return milliseconds per update by phase.

    The trace holds every XLA op execution; keep ``updates`` small (the profiler drops events past about a
    million). Tracing adds a fixed cost per op, so sides with many small ops look relatively slower."""
    compiled = jax.jit(train).lower(*args).compile()
    _block(compiled(*args))
    wall, _cpu = _timed_run(compiled, args)
    with tempfile.TemporaryDirectory() as directory:
        with jax.profiler.trace(directory):
            _block(compiled(*args))
        trace_files = glob.glob(os.path.join(directory, "**", "*.trace.json.gz"), recursive=True)
        if not trace_files:
            raise RuntimeError("jax.profiler wrote no trace")
        self_times = trace_self_times(trace_files[0])
    ops, stack = parse_hlo_stacks(compiled.as_text())
    phases: Counter[str] = Counter()
    for name, micros in self_times.items():
        if name in ops:
            op_name, frame = ops[name]
            phases[classify_op(stack(frame), op_name, algorithm_file)] += micros
    total = sum(phases.values())
    return {
        "ms_per_update": {phase: phases.get(phase, 0.0) / 1e3 / updates for phase in PHASES},
        "traced_ms_per_update": total / 1e3 / updates,
        "untraced_ms_per_update": wall * 1e3 / updates,
    }


def profile_sides(jaxmarl: JaxMarlIPPO | None, updates: int = 3,
                  ours: tuple[ippo.Config, ippo.HParams] | None = None,
                  num_envs: int | None = None) -> dict[str, dict[str, Any]]:
    """``profile_update`` for ours and JaxMARL with JaxMARL's config (``updates`` updates each), with
    ``NUM_ENVS`` replaced by ``num_envs`` when given."""
    if ours is None:
        ours = ours_from_jaxmarl(jaxmarl.config) if jaxmarl is not None else load_ours(DEFAULT_PRESET)
    envs = num_envs or ours[0].num_envs
    config = dataclasses.replace(ours[0], num_envs=envs, total_timesteps=envs * ours[0].num_steps * updates)
    key = jax.random.PRNGKey(0)
    results = {"ours": profile_update(ours_train(config), (key, ours[1]), updates, Path(ippo.__file__).name)}
    if jaxmarl is not None:
        results["JaxMARL"] = profile_update(
            jaxmarl.make_train(TOTAL_TIMESTEPS=config.total_timesteps, NUM_ENVS=envs), (key,), updates,
            jaxmarl.path.name,
        )
    return results


def kernel_comparison(jaxmarl: JaxMarlIPPO | None, num_envs: Sequence[int | None] = (None,),
                      ours: tuple[ippo.Config, ippo.HParams] | None = None,
                      log: Callable[[str], None] | None = print,
                      gpu_target: str | None = None) -> list[dict[str, Any]]:
    """Rows per side and env count: the kernels one update launches (``bench.kernel_counts`` of the
    compiled training program, two updates long) and those of each loop inside it, the first being the
    rollout. Launch overhead on a GPU, counted on whatever backend runs this, or with ``gpu_target`` (a
    ``bench.GPU_TARGETS`` key) as XLA's GPU compiler compiles the program for that GPU, here, without one
    (``bench.compile_for_gpu``)."""
    if ours is None:
        ours = ours_from_jaxmarl(jaxmarl.config) if jaxmarl is not None else load_ours(DEFAULT_PRESET)
    rows = []
    for envs in num_envs:
        envs = envs or ours[0].num_envs
        config = dataclasses.replace(ours[0], num_envs=envs, total_timesteps=2 * envs * ours[0].num_steps)
        key = jax.random.PRNGKey(0)
        sides: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
            ("ours", ours_train(config), (key, ours[1]))
        ]
        if jaxmarl is not None:
            sides.append(("JaxMARL", jaxmarl.make_train(TOTAL_TIMESTEPS=config.total_timesteps,
                                                        NUM_ENVS=envs), (key,)))
        for name, function, args in sides:
            if gpu_target is None:
                counts = kernel_counts(jax.jit(function).lower(*args).compile().as_text())
            else:
                counts = gpu_kernel_counts(function, *args, target=gpu_target)
            rows.append({"side": name, "envs": envs, "per_update": counts.per_iteration,
                         "loops": counts.loops})
            if log:
                log(f"  kernels: {name} {envs} envs: {counts.per_iteration} per update, loops {counts.loops}")
    return rows


# --------------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------------

TARGET_COLUMNS = ("side", "seeds reaching target", "median time to target s (compile incl.)",
                  "per-seed s", "compile s", "median env steps to target", "speed-up vs JaxMARL",
                  "median s to first single update >= target")
IDENTICAL_COLUMNS = ("side", "envs", "env steps", "compile s", "run s", "run CPU s", "steps/s",
                     "steps/s incl. compile", "wall s incl. compile", "ours/JaxMARL steps/s")
SEEDS_COLUMNS = ("side", "seeds", "steps per seed", "compile s", "run s", "total steps/s", "ours/JaxMARL")
PROFILE_COLUMNS = ("phase", "ours ms/update", "ours share", "JaxMARL ms/update", "JaxMARL share")
KERNEL_COLUMNS = ("side", "envs", "kernels per update", "rollout: steps x kernels per step",
                  "every loop in an update (trips x kernels per trip)")


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _rate(value: float | None) -> str:
    if value is None:
        return "—"
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.1f}{suffix}"
    return f"{value:.0f}"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|---" + "|---:" * (len(columns) - 1) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def format_target(summary: Sequence[dict[str, Any]]) -> str:
    """Markdown table of ``summarize_target``."""
    return _table(TARGET_COLUMNS, [
        [s["side"], f"{s['reached']}/{s['seeds']}", _num(s["median_s"]),
         ", ".join(_num(t) for t in s["per_seed_s"]), _num(s["compile_s"]),
         _rate(s["median_env_steps"]), _ratio(s["speedup"]), _num(s["median_first_raw_s"])]
        for s in summary
    ])


def format_identical(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown table of ``identical_config``."""
    return _table(IDENTICAL_COLUMNS, [
        [r["side"], str(r["envs"]), _rate(r["timesteps"]), _num(r["compile_s"]), _num(r["run_s"]),
         _num(r["cpu_s"]), _rate(r["sps"]), _rate(r["sps_with_compile"]), _num(r["run_s"] + r["compile_s"]),
         _ratio(r["ratio"])]
        for r in rows
    ])


def format_seeds(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown table of ``seed_scaling``."""
    return _table(SEEDS_COLUMNS, [
        [r["side"], str(r["seeds"]), _rate(r["timesteps"]), _num(r["compile_s"]), _num(r["run_s"]),
         _rate(r["sps"]), _ratio(r["ratio"])]
        for r in rows
    ])


def format_profile(results: dict[str, dict[str, Any]]) -> str:
    """Markdown table of ``profile_sides``: ms per update (under the tracer) and share, per phase."""
    ours, theirs = results["ours"], results.get("JaxMARL")

    def cells(result: dict[str, Any] | None, phase: str) -> list[str]:
        if result is None:
            return ["—", "—"]
        value = result["ms_per_update"][phase]
        return [_num(value, 2), f"{100 * value / max(result['traced_ms_per_update'], 1e-9):.0f}%"]

    rows = [[phase, *cells(ours, phase), *cells(theirs, phase)] for phase in PHASES]
    rows.append(["**total traced**", _num(ours["traced_ms_per_update"], 1), "100%",
                 _num(theirs["traced_ms_per_update"], 1) if theirs else "—", "100%" if theirs else "—"])
    rows.append(["untraced wall, same run", _num(ours["untraced_ms_per_update"], 1), "",
                 _num(theirs["untraced_ms_per_update"], 1) if theirs else "—", ""])
    return _table(PROFILE_COLUMNS, rows)


def format_kernels(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown table of ``kernel_comparison``."""
    def loop(trips_kernels: tuple[int, int]) -> str:
        return f"{trips_kernels[0]} x {trips_kernels[1]}"

    return _table(KERNEL_COLUMNS, [
        [r["side"], str(r["envs"]), str(r["per_update"]), loop(r["loops"][0]) if r["loops"] else "—",
         ", ".join(loop(x) for x in r["loops"]) or "—"]
        for r in rows
    ])


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """Command-line arguments."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jaxmarl-ippo", default=None, metavar="PATH",
                        help="JaxMARL's baselines/IPPO/ippo_ff_mpe.py (without it only ours runs)")
    parser.add_argument("--jaxmarl-config", default=None, metavar="PATH",
                        help="its ippo_ff_mpe.yaml (default: next to the .py or in config/ beside it)")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS), help="what to run")
    parser.add_argument("--preset", default=FAST_PRESET, help="our preset for the time-to-target race")
    parser.add_argument("--target", type=float, default=TARGET_RETURN, help="per-agent return to reach")
    parser.add_argument("--target-seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="seeds raced, one after another")
    parser.add_argument("--max-target-s", type=float, default=300.0,
                        help="give up a race after this many seconds (compile included)")
    parser.add_argument("--window-episodes", type=float, default=500.0,
                        help="the return checked is the mean over the latest this many episodes")
    parser.add_argument("--no-target-identical", action="store_true",
                        help="skip racing our IPPO with JaxMARL's hyperparameters")
    parser.add_argument("--timesteps", type=float, nargs="+", default=[1e6],
                        help="env steps per run for the identical-config section (add 1e7 for the long run)")
    parser.add_argument("--long", action="store_true", help="also time 1e7 steps in the identical section")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per side in the identical section")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 4, 16], help="vmapped seed counts")
    parser.add_argument("--seed-timesteps", type=float, default=1e6, help="env steps per seed, seeds section")
    parser.add_argument("--profile-updates", type=int, default=3, help="updates traced by the profile")
    parser.add_argument("--num-envs", type=int, nargs="+", default=None,
                        help="replace NUM_ENVS on both sides in the identical and kernels sections "
                             "(several: one row each; e.g. 1024 4096 for GPU-sized batches) and, the "
                             "first of them, in the profile")
    parser.add_argument("--mappo", action="store_true",
                        help="add our MAPPO with the same hyperparameters to the identical section")
    parser.add_argument("--gpu-target", choices=sorted(GPU_TARGETS), default=None,
                        help="the kernels section also counts an update's kernels as compiled for this GPU, "
                             "on this machine (needs JAX's CUDA plugin: pip install -e '.[gpu-target]')")
    parser.add_argument("--markdown", default=None, metavar="PATH", help="also write the report to PATH")
    return parser


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> str:
    """Run the chosen sections and return the markdown report."""
    jaxmarl = load_jaxmarl_ippo(args.jaxmarl_ippo, args.jaxmarl_config) if args.jaxmarl_ippo else None
    machine = machine_info()
    parts = [*(f"- **{name}**: {value}" for name, value in machine.items())]
    if jaxmarl is None:
        parts.append("- **JaxMARL**: not compared (no --jaxmarl-ippo given); ours only")
    else:
        parts.append(f"- **JaxMARL IPPO**: `{jaxmarl.path}` with `{jaxmarl.config_path}`")
    if "target" in args.sections:
        fast = load_ours(args.preset)
        log(f"time to target {args.target} with preset {args.preset} ...")
        rows = time_to_target(*fast, jaxmarl, target=args.target, seeds=args.target_seeds,
                              max_seconds=args.max_target_s, window_episodes=args.window_episodes,
                              identical=not args.no_target_identical, log=log)
        parts += ["", f"### Time to a per-agent return of {args.target} (compile included)", "",
                  f"Ours: preset `{args.preset}` ({_describe(*fast)}). JaxMARL: its default config. "
                  f"Return: mean per-agent episode return over the latest {args.window_episodes:g} episodes.",
                  "",
                  format_target(summarize_target(rows))]
    if "identical" in args.sections:
        timesteps = sorted({int(t) for t in args.timesteps} | ({10_000_000} if args.long else set()))
        log(f"identical config, {timesteps} steps ...")
        rows = identical_config(jaxmarl, timesteps, args.repeats, log=log, num_envs=args.num_envs or (None,),
                                with_mappo=args.mappo)
        parts += ["", "### Identical hyperparameters (JaxMARL's ippo_ff_mpe config)", "",
                  format_identical(rows)]
    if "seeds" in args.sections:
        log(f"seeds {args.seeds} ...")
        rows = seed_scaling(jaxmarl, args.seeds, int(args.seed_timesteps), log=log)
        parts += ["", "### Seeds vmapped in one program (JaxMARL's config)", "", format_seeds(rows)]
    if "profile" in args.sections:
        log("profile ...")
        results = profile_sides(jaxmarl, args.profile_updates,
                                num_envs=args.num_envs[0] if args.num_envs else None)
        parts += ["", "### Where an update's time goes (JaxMARL's config, XLA trace)", "",
                  format_profile(results)]
    if "kernels" in args.sections:
        log("kernels ...")
        rows = kernel_comparison(jaxmarl, args.num_envs or (None,), log=log)
        parts += ["", "### Kernels an update launches (JaxMARL's config; optimised HLO)", "",
                  format_kernels(rows)]
        if args.gpu_target:
            rows = kernel_comparison(jaxmarl, args.num_envs or (None,), log=log, gpu_target=args.gpu_target)
            parts += ["", f"### Kernels an update launches, compiled for {args.gpu_target} on this machine",
                      "", format_kernels(rows)]
    if hasattr(os, "getloadavg"):
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        parts.insert(len(machine), f"- **load average (1, 5, 15 min) at end**: {load}")
    return "\n".join(parts)


def _describe(config: ippo.Config, hparams: ippo.HParams) -> str:
    annealed = f" annealed over {config.total_timesteps:.0e} steps" if config.anneal_lr else ""
    return (f"{config.num_envs} envs x {config.num_steps} steps, {config.update_epochs} epochs x "
            f"{config.num_minibatches} minibatches, lr {hparams.lr:g}{annealed}, "
            f"ent_coef {hparams.ent_coef:g}")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags, run the benchmark, print the report and optionally write it."""
    args = build_parser().parse_args(argv)
    try:
        report = run(args, log=lambda message: print(message, file=sys.stderr, flush=True))
    except (FileNotFoundError, ValueError, GpuTargetUnavailableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report)
    if args.markdown:
        command = shlex.join(["python", "scripts/bench_train.py", *(sys.argv[1:] if argv is None else argv)])
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(f"Command: `{command}`\n\n{report}\n")
        print(f"\nwrote {args.markdown}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
