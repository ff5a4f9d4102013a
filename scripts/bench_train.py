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

This file holds the ``identical`` and ``seeds`` sections, the tables and the command line; the modules
beside it hold the rest: ``bench_train_sides.py`` (both sides, the time to target, shared timing and
table helpers), ``bench_train_race.py`` (the SMAX race) and ``bench_train_profile.py`` (the trace profile
and the kernel counts).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

from jaxmarl_suite.baselines import ippo, mappo
from jaxmarl_suite.bench import (
    GPU_TARGETS,
    GpuTargetUnavailableError,
    machine_info,
)

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (tests), not run from scripts/
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_train_profile import (  # noqa: E402
    PHASES,
    StackOf,
    classify_op,
    kernel_comparison,
    parse_hlo_stacks,
    profile_sides,
    profile_update,
    trace_self_times,
)
from bench_train_race import (  # noqa: E402
    RACE_SIDES,
    SMAX_RACE_PRESET,
    SMAX_RACE_TARGET,
    SMAX_RACE_WINDOW,
    first_crossing,
    format_race,
    smax_race,
    window_mean,
)
from bench_train_sides import (  # noqa: E402
    DEFAULT_PRESET,
    ENV_ID,
    FAST_PRESET,
    JAXMARL_INT_KEYS,
    JAXMARL_TO_OURS,
    TARGET_RETURN,
    JaxMarlIPPO,
    StopTrainingError,
    UpdateClock,
    _compile,
    _num,
    _rate,
    _ratio,
    _table,
    _timed_run,
    find_jaxmarl_config,
    load_jaxmarl_ippo,
    load_ours,
    ours_from_jaxmarl,
    ours_train,
    read_jaxmarl_config,
    run_to_target,
    summarize_target,
    time_to_target,
)

Array = jax.Array

__all__ = [
    "DEFAULT_PRESET",
    "ENV_ID",
    "FAST_PRESET",
    "JAXMARL_INT_KEYS",
    "JAXMARL_TO_OURS",
    "JaxMarlIPPO",
    "PHASES",
    "RACE_SIDES",
    "SMAX_RACE_PRESET",
    "SMAX_RACE_TARGET",
    "SMAX_RACE_WINDOW",
    "StackOf",
    "StopTrainingError",
    "TARGET_RETURN",
    "UpdateClock",
    "classify_op",
    "find_jaxmarl_config",
    "first_crossing",
    "format_race",
    "kernel_comparison",
    "load_jaxmarl_ippo",
    "load_ours",
    "ours_from_jaxmarl",
    "ours_train",
    "parse_hlo_stacks",
    "profile_sides",
    "profile_update",
    "read_jaxmarl_config",
    "run_to_target",
    "smax_race",
    "summarize_target",
    "time_to_target",
    "trace_self_times",
    "window_mean",
]
"""What the tests and ``bench_gpu.py`` read of this script: most of it lives in the three ``bench_train_*``
modules beside it (the two sides and the time to target, the SMAX race, the profile)."""

SECTIONS = ("target", "identical", "seeds", "profile", "kernels")


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
