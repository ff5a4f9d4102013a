"""Value-based learning beside JaxMARL's, in one process: IQL, VDN, QMIX or PQN with the hyperparameters of
JaxMARL's own config for that algorithm and env family, at the same env steps, with the wall time of each.

    python scripts/q_curves.py --algorithm vdn --env MPE_simple_spread_v3 --timesteps 2e6 \\
        --points 5e5 1e6 2e6 [--seeds 1] [--sides ours jaxmarl] [--jaxmarl-dir /tmp/JaxMARL] \\
        [--ours-preset NAME] [--set key=value ...] [--json out.json]

- **jaxmarl**: ``baselines/QLearning/<script>.py`` from a JaxMARL checkout (its baseline scripts are not in
  its pip package: ``git clone https://github.com/FLAIROx/JaxMARL``), imported with hydra and wandb stubbed
  (``jaxmarl_suite.compat.jaxmarl_scripts.import_jaxmarl_script``), on ``config/config.yaml`` merged with
  its ``config/alg`` YAML for the pair (``PAIRS``), ``TOTAL_TIMESTEPS`` set to ``--timesteps``. Scripts:
  IQL ``iql_rnn``, VDN ``vdn_rnn``, QMIX ``qmix_rnn`` (config ``ql_rnn_<family>``), PQN ``pqn_vdn_ff`` on
  MPE and ``pqn_vdn_rnn`` on SMAX (PQN-VDN).
- **ours**: ``baselines/<algorithm>.py`` with the same hyperparameters translated from that YAML
  (``ours_settings``; ``--ours-preset`` instead takes one of our presets), ``--set`` overriding either.
- **Scores** are greedy episodes on both sides. JaxMARL tests 512 (MPE) or 128-512 (SMAX) greedy episodes
  every 5% of its updates; the score at a point is its last test at or before it. Its MPE log wrapper
  multiplies rewards by the agent count, so MPE returns are divided by it, making both per agent. Ours
  plays ``num_envs`` greedy envs alongside training; the score at a point is the episode-weighted mean of
  ``greedy_return_mean`` (or ``greedy_win_rate`` on SMAX) over the updates in the 5% of the run before it.
- **Seconds** are the whole run, compile included, one seed at a time on each side. JaxMARL's scripts
  return no metrics: they hand them to ``wandb.log`` from a per-update callback, which runs here into a
  recorder (``_WandbRecorder``), so its time includes that callback; ours logs nothing from inside.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (tests), not run from scripts/
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from ippo_curves import read_jaxmarl_config  # noqa: E402

from jaxmarl_suite.bench import machine_info  # noqa: E402
from jaxmarl_suite.compat.jaxmarl_scripts import import_jaxmarl_script, stdout_to_stderr  # noqa: E402
from jaxmarl_suite.training.kit import make_train  # noqa: E402
from jaxmarl_suite.training.runner.config import baseline_module, build_experiment, load_preset  # noqa: E402

ALGORITHMS = ("iql", "vdn", "qmix", "pqn")
PAIRS = {
    ("iql", "mpe"): ("iql_rnn", "ql_rnn_mpe"), ("vdn", "mpe"): ("vdn_rnn", "ql_rnn_mpe"),
    ("qmix", "mpe"): ("qmix_rnn", "ql_rnn_mpe"), ("pqn", "mpe"): ("pqn_vdn_ff", "pqn_vdn_ff_mpe"),
    ("iql", "smax"): ("iql_rnn", "ql_rnn_smax"), ("vdn", "smax"): ("vdn_rnn", "ql_rnn_smax"),
    ("qmix", "smax"): ("qmix_rnn", "ql_rnn_smax"), ("pqn", "smax"): ("pqn_vdn_rnn", "pqn_vdn_rnn_smax"),
}
"""(algorithm, env family) -> (JaxMARL script, its alg config)."""
WINDOW = 0.05
"""Ours is scored over the updates in this fraction of the run before each point (JaxMARL's TEST_INTERVAL)."""


def family_of(env_id: str) -> str:
    """``mpe`` or ``smax``: the env families JaxMARL has value-based configs for."""
    for family in ("mpe", "smax"):
        if env_id.lower().startswith(family):
            return family
    raise SystemExit(f"{env_id}: JaxMARL has value-based configs for MPE and SMAX only")


def jaxmarl_config(jaxmarl_dir: Path, algorithm: str, env_id: str, timesteps: int) -> dict[str, Any]:
    """JaxMARL's merged config for the pair, on ``env_id`` for ``timesteps`` env steps, wandb off."""
    folder = jaxmarl_dir / "baselines" / "QLearning" / "config"
    config = {**read_jaxmarl_config(folder / "config.yaml"),
              **read_jaxmarl_config(folder / "alg" / f"{PAIRS[algorithm, family_of(env_id)][1]}.yaml")}
    if family_of(env_id) == "smax":
        config["MAP_NAME"] = env_id.split("_", 1)[1]
    else:
        config["ENV_NAME"] = env_id
    config.update(TOTAL_TIMESTEPS=int(timesteps), TEST_DURING_TRAINING=True)
    return config


def ours_settings(algorithm: str, env_id: str, jaxmarl: dict[str, Any]
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Our ``Config`` and ``HParams`` values with JaxMARL's hyperparameters (``jaxmarl``, its merged config).

    JaxMARL's recurrent Q-network is dense, GRU, head: ours with no dense layers after the GRU
    (``hidden_sizes=[]``). What has no counterpart: PQN on SMAX uses batch norm; ours has layer norm only.
    JaxMARL's MEMORY_WINDOW (PQN-RNN's extra steps of context) has none either.
    """
    env_kwargs = dict(jaxmarl.get("ENV_KWARGS") or {}) if family_of(env_id) == "smax" else {}
    hparams = {"lr": jaxmarl["LR"], "gamma": jaxmarl["GAMMA"], "epsilon_start": jaxmarl["EPS_START"],
               "epsilon_end": jaxmarl["EPS_FINISH"], "epsilon_decay": jaxmarl["EPS_DECAY"],
               "max_grad_norm": jaxmarl["MAX_GRAD_NORM"], "reward_scale": 1.0}
    if family_of(env_id) == "mpe" and (algorithm in ("vdn", "qmix", "pqn")):
        # JaxMARL's team reward on MPE is the sum of the agents' rewards; ours is their mean.
        from jaxmarl_suite import make

        hparams["reward_scale"] = float(make(env_id).num_agents)
    if family_of(env_id) == "smax":
        # JaxMARL's SMAX pays at most about 2 per episode and REW_SCALE 10 restores SMAC's scale of 20,
        # which our SMAX pays already (its reward_scale parameter): 10 here is 1 for us.
        hparams["reward_scale"] = float(jaxmarl.get("REW_SCALE", 10.0)) / 10.0
    config: dict[str, Any] = {
        "env_id": env_id, "env_kwargs": env_kwargs, "num_envs": int(jaxmarl["NUM_ENVS"]),
        "num_steps": int(jaxmarl["NUM_STEPS"]), "anneal_lr": bool(jaxmarl["LR_LINEAR_DECAY"]),
        "activation": "relu", "agent_ids": True, "optimizer": "radam"}
    width = int(jaxmarl["HIDDEN_SIZE"])
    if algorithm == "pqn":
        recurrent = "rnn" in PAIRS[algorithm, family_of(env_id)][0]
        config.update(hidden_sizes=[width] * int(jaxmarl.get("NUM_LAYERS", 2)), recurrent=recurrent,
                      gru_size=width, layer_norm=True, vdn=True, update_epochs=int(jaxmarl["NUM_EPOCHS"]),
                      num_minibatches=int(jaxmarl["NUM_MINIBATCHES"]))
        hparams["q_lambda"] = jaxmarl["LAMBDA"]
    else:
        config.update(hidden_sizes=[], recurrent=True, gru_size=width,
                      buffer_size=int(jaxmarl["BUFFER_SIZE"]),
                      buffer_batch_size=int(jaxmarl["BUFFER_BATCH_SIZE"]),
                      learning_starts=int(jaxmarl["LEARNING_STARTS"]),
                      gradient_steps=int(jaxmarl["NUM_EPOCHS"]),
                      target_update_interval=int(jaxmarl["TARGET_UPDATE_INTERVAL"]), double_q=True)
        hparams["tau"] = jaxmarl["TAU"]
        if algorithm == "qmix":
            config.update(mixer_embedding=int(jaxmarl["MIXER_EMBEDDING_DIM"]),
                          mixer_hypernet_hidden=int(jaxmarl["MIXER_HYPERNET_HIDDEN_DIM"]),
                          mixer_init_scale=float(jaxmarl["MIXER_INIT_SCALE"]))
    return config, hparams


@dataclasses.dataclass
class Curve:
    """One run's greedy score against env steps, and its wall time (compile included)."""

    side: str
    seed: int
    env_steps: list[int]
    scores: list[float]
    weights: list[float]
    seconds: float
    times: list[float]
    """Seconds from the start (compile included) to the end of each update."""

    def at(self, point: float, total: int) -> float:
        """The score at ``point`` env steps (see the module docstring)."""
        steps = np.asarray(self.env_steps, np.float64)
        before = np.flatnonzero(steps <= point)
        return float(self.smoothed(total)[before[-1]]) if before.size else float("nan")

    def smoothed(self, total: int) -> np.ndarray:
        """The score as measured at the end of every update: JaxMARL's last test (its rows repeat it
        between tests), ours the episode-weighted window mean."""
        scores = np.asarray(self.scores, np.float64)
        if self.side == "jaxmarl":
            return scores
        steps = np.asarray(self.env_steps, np.float64)
        weights = np.where(np.isfinite(scores), np.asarray(self.weights, np.float64), 0.0)
        weighted = np.concatenate([[0.0], np.cumsum(np.nan_to_num(scores) * weights)])
        counts = np.concatenate([[0.0], np.cumsum(weights)])
        first = np.searchsorted(steps, steps - WINDOW * total, side="right")
        last = np.arange(1, len(steps) + 1)
        count = counts[last] - counts[first]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, (weighted[last] - weighted[first]) / count, np.nan)

    def time_to(self, score: float, total: int) -> float:
        """Seconds (compile included) until the score, measured as ``at`` measures it, first reaches
        ``score``; NaN if it never does."""
        reached = np.flatnonzero(self.smoothed(total) >= score)
        return float(self.times[reached[0]]) if reached.size else float("nan")


class _WandbRecorder:
    """Stands in for ``wandb`` in a JaxMARL script: its scripts return no metrics and hand them to
    ``wandb.log`` from a per-update callback, so the curve is what this records."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.start = time.perf_counter()

    def log(self, metrics: dict[str, Any], step: int | None = None) -> None:
        row = {k: float(np.mean(np.asarray(v, np.float64))) for k, v in metrics.items()
               if np.size(v) >= 1 and not isinstance(v, str)}
        self.rows.append({**row, "seconds": time.perf_counter() - self.start})


def _test_score(row: dict[str, float], metric: str) -> float:
    """JaxMARL's greedy test ``metric`` in one logged row; with LOG_AGENTS_SEPARATELY (its IQL) the mean of
    the per-agent entries ``test_<metric>_<agent>``."""
    if f"test_{metric}" in row:
        return row[f"test_{metric}"]
    per_agent = [value for key, value in row.items() if key.startswith(f"test_{metric}_")]
    return float(np.mean(per_agent)) if per_agent else float("nan")


def train_jaxmarl(module: Any, config: dict[str, Any], seed: int, metric: str, per_agent: bool) -> Curve:
    """JaxMARL's ``make_train(config, env)`` on the env its ``env_from_config`` builds, with its wandb
    callback on (into ``_WandbRecorder``): the one way its scripts report."""
    # Not wandb: any mode but "disabled" makes the script call wandb.log, which is the local recorder here.
    config = {**copy.deepcopy(config), "WANDB_MODE": "online"}
    recorder = _WandbRecorder()
    module.wandb = recorder
    start = recorder.start = time.perf_counter()
    with stdout_to_stderr():
        env, _ = module.env_from_config(copy.deepcopy(config))
        jax.block_until_ready(jax.jit(module.make_train(config, env))(jax.random.PRNGKey(seed)))
        jax.effects_barrier()
    seconds = time.perf_counter() - start
    rows = sorted(recorder.rows, key=lambda row: row["update_steps"])
    steps = [int(row["update_steps"]) * int(config["NUM_ENVS"]) * int(config["NUM_STEPS"]) for row in rows]
    scores = np.array([_test_score(row, metric) for row in rows])
    if per_agent:
        scores = scores / env.num_agents
    return Curve("jaxmarl", seed, steps, scores.tolist(), [1.0] * len(steps), seconds,
                 [row["seconds"] for row in rows])


def train_ours(algorithm: str, config_values: dict[str, Any], hparam_values: dict[str, Any], seed: int,
               metric: str) -> Curve:
    """Our baseline's ``make_train`` on one seed."""
    module = baseline_module(algorithm)
    experiment = build_experiment(algorithm, module.Config, module.HParams, config=config_values,
                                  hparams={k: [v] for k, v in hparam_values.items()}, seeds=1, seed=seed,
                                  default_preset=False, progress=False, wandb="disabled")
    config, hparams = experiment.config, experiment.grid[0]
    times: list[float] = []

    def record(update: Any, metrics: Any) -> None:  # the same per-update host call JaxMARL's side makes
        times.append(time.perf_counter() - start)

    start = time.perf_counter()
    train = jax.jit(make_train(module, config, on_update=record))
    output = jax.block_until_ready(train(jax.random.PRNGKey(seed), hparams))
    jax.effects_barrier()
    seconds = time.perf_counter() - start
    updates = np.arange(1, config.num_updates + 1)
    return Curve("ours", seed, (updates * config.batch_size).tolist(),
                 np.asarray(output.metrics[f"greedy_{metric}"], np.float64).tolist(),
                 np.asarray(output.metrics["greedy_episodes"], np.float64).tolist(), seconds, times)


def format_table(curves: Sequence[Curve], points: Sequence[float], total: int, metric: str) -> str:
    """A markdown table: one row per run, the score at each point, seconds and env steps per second."""
    header = ["side", "seed", *[f"{metric} @ {p:.3g}" for p in points], "seconds", "steps/s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for curve in curves:
        cells = [curve.side, str(curve.seed), *[f"{curve.at(p, total):.3f}" for p in points],
                 f"{curve.seconds:.0f}", f"{total / curve.seconds:,.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    sides = {c.side for c in curves}
    if sides == {"ours", "jaxmarl"}:
        ours = [c for c in curves if c.side == "ours"]
        theirs = [c for c in curves if c.side == "jaxmarl"]
        ratio = np.mean([c.seconds for c in theirs]) / np.mean([c.seconds for c in ours])
        lines.append(f"\nwall-time ratio (JaxMARL / ours, compile included): {ratio:.2f}x")
        final = float(np.nanmean([c.at(total, total) for c in theirs]))
        ours_time = np.mean([c.time_to(final, total) for c in ours])
        theirs_time = np.mean([c.time_to(final, total) for c in theirs])
        lines.append(f"time to JaxMARL's final {metric} ({final:.3f}), compile included: ours "
                     f"{ours_time:.0f} s, JaxMARL {theirs_time:.0f} s "
                     f"({theirs_time / ours_time:.2f}x sooner)")
    return "\n".join(lines)


def parse_value(text: str) -> Any:
    """``--set`` values as JSON where they parse (numbers, lists, booleans), else as strings."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: Sequence[str] | None = None) -> int:
    """Run the requested sides and print the table (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algorithm", choices=ALGORITHMS, required=True)
    parser.add_argument("--env", default="MPE_simple_spread_v3")
    parser.add_argument("--timesteps", type=float, default=2e6)
    parser.add_argument("--points", type=float, nargs="+", default=None)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--sides", nargs="+", choices=("ours", "jaxmarl"), default=["ours", "jaxmarl"])
    parser.add_argument("--jaxmarl-dir", type=Path, default=Path("/tmp/JaxMARL"))
    parser.add_argument("--ours-preset", default=None,
                        help="one of our presets instead of JaxMARL's settings")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="override ours (lowercase keys) or JaxMARL's (UPPERCASE keys)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    timesteps = int(args.timesteps)
    points = args.points or [timesteps / 4, timesteps / 2, timesteps]
    family = family_of(args.env)
    metric = "returned_won_episode" if family == "smax" else "returned_episode_returns"
    ours_metric = "win_rate" if family == "smax" else "return_mean"
    overrides = dict(item.split("=", 1) for item in args.set)
    jaxmarl = jaxmarl_config(args.jaxmarl_dir, args.algorithm, args.env, timesteps)
    jaxmarl.update({k: parse_value(v) for k, v in overrides.items() if k.isupper()})
    if args.ours_preset:
        preset = load_preset(args.ours_preset)
        config_values, hparam_values = dict(preset["config"]), dict(preset["hparams"])
    else:
        config_values, hparam_values = ours_settings(args.algorithm, args.env, jaxmarl)
    config_values["total_timesteps"] = timesteps
    module = baseline_module(args.algorithm)
    hparam_names = {f.name for f in dataclasses.fields(module.HParams)}
    for key, value in overrides.items():
        if not key.isupper():
            (hparam_values if key in hparam_names else config_values)[key] = parse_value(value)

    script = None
    if "jaxmarl" in args.sides:
        path = args.jaxmarl_dir / "baselines" / "QLearning" / f"{PAIRS[args.algorithm, family][0]}.py"
        if not path.is_file():
            raise SystemExit(f"{path} does not exist: clone FLAIROx/JaxMARL and pass --jaxmarl-dir")
        script = import_jaxmarl_script(path)

    curves = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        if "ours" in args.sides:
            curves.append(train_ours(args.algorithm, config_values, hparam_values, seed, ours_metric))
            print(f"ours seed {seed}: {curves[-1].seconds:.0f} s", file=sys.stderr)
        if script is not None:
            curves.append(train_jaxmarl(script, jaxmarl, seed, metric, per_agent=family == "mpe"))
            print(f"jaxmarl seed {seed}: {curves[-1].seconds:.0f} s", file=sys.stderr)

    machine = machine_info()
    print(f"{args.algorithm} on {args.env}, {timesteps:.3g} env steps, greedy {ours_metric} "
          f"({machine.get('cpu', '')}, jax {jax.__version__})\n")
    print(format_table(curves, points, timesteps, ours_metric))
    if args.json:
        args.json.write_text(json.dumps({
            "algorithm": args.algorithm, "env": args.env, "timesteps": timesteps, "points": points,
            "machine": machine, "command": " ".join(sys.argv), "ours": {"config": config_values,
                                                                       "hparams": hparam_values},
            "jaxmarl_config": {k: v for k, v in jaxmarl.items() if isinstance(v, int | float | str | bool)},
            "curves": [dataclasses.asdict(c) for c in curves]}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
