"""Both sides of the IPPO training benchmark (``bench_train.py``): JaxMARL's ``ippo_ff_mpe.py`` loaded
from a checkout with its config translated to ours (``JAXMARL_TO_OURS``), our IPPO from a preset,
training either until a per-agent return is first reached, compile included (``time_to_target``), and
the timing and table helpers the other sections share."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import logging
import math
import os
import re
import time
import types
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml

from jaxmarl_suite.baselines import ippo, mappo
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


def _compile(function: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, float]:
    start = time.perf_counter()
    compiled = jax.jit(function).lower(*args).compile()
    return compiled, time.perf_counter() - start


def _timed_run(compiled: Any, args: tuple[Any, ...]) -> tuple[float, float]:
    """``(wall_s, process_cpu_s)`` of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    _block(compiled(*args))
    return time.perf_counter() - start, time.process_time() - cpu


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
