"""The ``jaxmarl-suite`` command: ``train``, ``sweep``, ``eval``, ``render``, ``collect``, ``report``,
``xplay``, ``list``, ``demo`` and ``bench``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _cmd_list(args: argparse.Namespace) -> int:
    from jaxmarl_suite.core.registry import env_spec, make, registered_envs

    ids = registered_envs(args.family)
    for env_id in ids:
        spec = env_spec(env_id)
        env = make(env_id)
        print(f"{env_id}  [{spec.family}]  {spec.description}")
        if spec.aliases:
            print(f"    aliases:   {', '.join(spec.aliases)}")
        print(f"    reference: {spec.reference or 'none'}")
        for group, names in env.groups.items():
            obs, act = env.observation_space(group), env.action_space(group)
            print(f"    group {group!r} x{len(names)}: obs {obs}  action {act}")
    print(f"{len(ids)} env(s) registered")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from jaxmarl_suite.render.gif import check_gif_options
    from jaxmarl_suite.rollout import random_rollout, render_random_episode

    check_gif_options(args.size, args.fps)  # before compiling anything
    out = Path(args.out)
    print(f"Random policy on {args.env}: {args.num_envs} envs x {args.steps} steps, one compiled program")
    report = random_rollout(args.env, args.num_envs, args.steps, seed=args.seed)
    print(f"  compile            {report.compile_s:8.2f} s")
    print(f"  run                {report.run_s:8.3f} s")
    print(f"  throughput         {report.steps_per_second:12,.0f} env steps/s")
    print(
        f"  finished episodes  {report.episodes:8d}, mean per-agent return {report.mean_episode_return:.2f}"
    )
    gif = render_random_episode(args.env, out / f"{args.env}_random.gif", seed=args.seed, fps=args.fps,
                                size=args.size)
    print(f"  rendered episode   {gif}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from jaxmarl_suite.bench import format_table, run_benchmark

    rows = run_benchmark(
        args.envs, args.batches, args.steps, args.repeats, compare_jaxmarl=not args.no_jaxmarl
    )
    print(format_table(rows))
    return 0


TRAIN_EXAMPLES = """\
examples:
  jaxmarl-suite train ippo --env MPE_simple_spread_v3 --seeds 8               8 seeds in one program
  jaxmarl-suite train mappo --env SMAX_3m                                     the env's preset (mappo_SMAX_3m)
  jaxmarl-suite train mappo --env MPE_simple_tag_v3 --lr 1e-3 3e-3 --seeds 4  a 2-point grid x 4 seeds
  jaxmarl-suite train ippo --resume runs/ippo_spread                          continue an interrupted run
  jaxmarl-suite train ippo --resume runs/ippo_spread --total-timesteps 4e6 --extend restart
                                                                              train a run longer
  jaxmarl-suite train ippo --run-dir runs/x --overwrite                       replace the run in runs/x

Each algorithm's flags, with their defaults: jaxmarl-suite train ALGORITHM --help"""


def train_help() -> str:
    """``jaxmarl-suite train --help``: every baseline with its summary line and presets, then examples."""
    import importlib

    from jaxmarl_suite.training.runner.config import available_presets, known_baselines

    lines = ["usage: jaxmarl-suite train ALGORITHM [flags...]", "", "algorithms:"]
    presets = available_presets()
    for name in known_baselines():
        module = importlib.import_module(f"jaxmarl_suite.baselines.{name}")
        summary = (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""
        lines.append(f"  {name:8s}{summary}")
        mine = [p for p in presets if p.startswith(f"{name}_")]
        if mine:
            lines.append(f"  {'':8s}presets: {', '.join(mine)}")
    return "\n".join([*lines, "", TRAIN_EXAMPLES])


def _cmd_train(args: argparse.Namespace) -> int:
    from jaxmarl_suite.errors import ConfigError
    from jaxmarl_suite.training.runner.config import baseline_module

    if args.algorithm in ("-h", "--help"):
        print(train_help())
        return 0
    try:
        module = baseline_module(args.algorithm)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return int(module.main(args.flags))


def _cmd_population(args: argparse.Namespace) -> int:
    from jaxmarl_suite.training.runner.config import POPULATION_SNAPSHOTS, population_flags

    flags = list(args.flags)
    if args.algorithm in ("-h", "--help") or "-h" in flags or "--help" in flags:
        print("usage: jaxmarl-suite population ALGO [train flags]\n\n"
              "Train ALGO's seeds (--seeds N) in one program as `train` does, keeping each seed's\n"
              f"checkpoints at --snapshots (default {POPULATION_SNAPSHOTS}: start, middle, end) for good,\n"
              "and list them as partners in RUN_DIR/population.json. FCP trains against it\n"
              "(jaxmarl-suite train fcp --partners RUN_DIR), xplay scores against it\n"
              "(jaxmarl-suite xplay EGO_RUN --partners RUN_DIR). Flags: jaxmarl-suite train ALGO --help.")
        return 0
    args.flags = population_flags(flags)
    return _cmd_train(args)


def _cmd_eval(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from jaxmarl_suite import zoo
    from jaxmarl_suite.evaluation.plots import grid_labels
    from jaxmarl_suite.evaluation.policy import eval_lines, evaluate_runs
    from jaxmarl_suite.training.runner.config import to_plain
    from jaxmarl_suite.training.runner.experiment import load_policies, select_run

    name = zoo.resolve(args.checkpoint)
    module, experiment, params, meta = (zoo.load_stacked(name) if name is not None
                                        else load_policies(Path(args.checkpoint)))
    num_seeds, grid_size = experiment.num_seeds, len(experiment.grid)
    # the runs asked for: every one, one grid point's seeds, one seed at every grid point, or one run
    runs = [(g, s) for g in range(grid_size) for s in range(num_seeds)
            if args.grid_index in (None, g) and args.seed_index in (None, s)]
    if not runs:  # an index out of range: select_run's error names it
        select_run(params, num_seeds, args.grid_index or 0, args.seed_index or 0)
    chosen = jax.tree.map(lambda x: x[np.array([g * num_seeds + s for g, s in runs])], params)
    reports = evaluate_runs(module, experiment.config, chosen, args.episodes, jax.random.PRNGKey(args.seed),
                            deterministic=args.deterministic)
    when = f"zoo entry {name}" if name is not None else f"update {meta['update']}"
    print(f"{experiment.algorithm} on {experiment.config.env_id}, {when}: {len(runs)} of "
          f"{grid_size * num_seeds} run(s) ({grid_size} grid point(s) x {num_seeds} seed(s)), evaluated "
          f"together, {args.episodes} episodes each on the same env draws")
    labels = grid_labels([to_plain(point) for point in experiment.grid])
    print("\n".join(eval_lines(labels, [(g, s, r) for (g, s), r in zip(runs, reports, strict=True)])))
    return 0


def _cmd_render(args: argparse.Namespace) -> int:
    import jax

    from jaxmarl_suite import zoo
    from jaxmarl_suite.evaluation.policy import render_policy
    from jaxmarl_suite.render.gif import check_gif_options
    from jaxmarl_suite.training.runner.experiment import load_policy

    check_gif_options(args.size, args.fps)  # before loading anything
    name = zoo.resolve(args.checkpoint)
    if name is not None:  # a zoo entry's GIF goes to the working directory, never into the package
        module, experiment, params, _ = zoo.load_run(name, args.grid_index, args.seed_index)
        out = Path(args.out) if args.out else Path(f"{name}.gif")
    else:
        module, experiment, params, _ = load_policy(Path(args.checkpoint), args.grid_index, args.seed_index)
        out = Path(args.out) if args.out else experiment.run_dir / "policy.gif"
    gif = render_policy(module, experiment.config, params, out, jax.random.PRNGKey(args.seed),
                        deterministic=args.deterministic, fps=args.fps, size=args.size)
    print(f"wrote {gif}")
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from jaxmarl_suite.evaluation.datasets import collect, read_vault

    path = collect(args.checkpoint, args.episodes, args.out, grid_index=args.grid_index,
                   seed_index=args.seed_index, seed=args.seed, deterministic=args.deterministic,
                   overwrite=args.overwrite)
    meta = read_vault(path).metadata
    score = meta["normalised_score"]
    shown = "" if score is None else f", normalised score {score:.2f}"
    print(f"wrote {path}: {meta['episodes']} episodes, {meta['steps']} steps, mean per-agent return "
          f"{meta['mean_return']:.3f}{shown}, quality {meta['quality']}")
    return 0


def _cmd_zoo(args: argparse.Namespace) -> int:
    from jaxmarl_suite import zoo
    from jaxmarl_suite.errors import ConfigError

    if args.action == "list" and args.markdown:
        print("| entry | env | algorithm | env steps | score [95% CI] |")
        print("|---|---|---|---:|---|")
        for name in zoo.names():
            c = zoo.card(name)
            print(f"| `{c.name}` | {c.env_id} | {c.algorithm} | {c.env_steps:,} | {c.score:.2f} "
                  f"[{c.ci_low:.2f}, {c.ci_high:.2f}] |")
        return 0
    if args.action == "list":
        print(f"{'name':<40} {'env':<28} {'algo':<6} {'env steps':>11} {'score':>9} [95% CI]")
        for name in zoo.names():
            print(zoo.card(name).line())
        return 0
    if args.action == "add":
        if not args.run_dir or not args.command:
            raise ConfigError("zoo add: give NAME, --run-dir (the finished run) and --command (what "
                              "trained it)")
        root = Path(args.root) if args.root else zoo.ENTRIES
        if args.root is None and not (zoo.ENTRIES.parents[2] / "pyproject.toml").is_file():
            raise ConfigError(f"zoo add: {zoo.ENTRIES} is inside an installed package; pass --root FOLDER, "
                              f"or run it from a source checkout")
        folder = zoo.add(args.run_dir, args.name or Path(args.run_dir).name, args.command,
                         episodes=args.episodes, overwrite=args.overwrite, root=root,
                         cpu_cores=args.cpu_cores)
        print(f"wrote {folder}: {zoo.card(folder.name, root).line()}")
        return 0
    if not args.name:
        raise ConfigError("zoo verify: name the entry (jaxmarl-suite zoo verify NAME)")
    result = zoo.verify(args.name)
    print(result.line())
    return 0 if result.passed else 1


def _add_gif_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", type=int, default=None, metavar="PIXELS",
                        help="the frame's shorter side in the GIF (default: the env's frame scaled up by a "
                        "whole factor to a legible size)")
    parser.add_argument("--fps", type=float, default=None, help="frames per second (default: the env's)")


def _add_run_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="run folder (its newest checkpoint) or a checkpoint folder")
    parser.add_argument("--grid-index", type=int, default=0, help="grid point to load")
    parser.add_argument("--seed-index", type=int, default=0, help="seed (of that grid point) to load")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the rollouts")
    parser.add_argument("--deterministic", action="store_true", help="take the most likely action")


def _cmd_report(args: argparse.Namespace) -> int:
    from jaxmarl_suite.evaluation.report import parse_range, run_report

    normalize = dict(parse_range(text) for text in args.normalize) if args.normalize else None
    output = run_report(args.run_dirs, args.out, normalize=normalize, final_fraction=args.final_fraction,
                        reps=args.reps, seed=args.seed, format=args.format,
                        marl_eval_metric=args.marl_eval_metric)
    print("\n".join(output.lines()))
    return 0


def _cmd_xplay(args: argparse.Namespace) -> int:
    from jaxmarl_suite.evaluation.xplay import run_cross_play

    output = run_cross_play(args.run_dirs, args.out, episodes=args.episodes, seed=args.seed,
                            deterministic=args.deterministic, partners=args.partners)
    for path in output.skipped:
        print(f"skipped {path}: it holds an earlier xplay or report, not a run")
    print(output.text)
    print(f"wrote {', '.join(str(path) for path in output.files)}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from jaxmarl_suite.pipeline import sweep_command as command

    return command(args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``jaxmarl-suite``: a mistake is one ``error:`` line (``CommandLineParser``)."""
    from jaxmarl_suite.training.runner.config import CommandLineParser  # light: no JAX import

    parser = CommandLineParser(prog="jaxmarl-suite", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser(
        "train", help="train a baseline: jaxmarl-suite train ippo --env MPE_simple_spread_v3 --seeds 8",
        add_help=False,
    )
    train.add_argument("algorithm", help="baseline name (jaxmarl-suite train --help lists them)")
    train.add_argument("flags", nargs=argparse.REMAINDER, help="the baseline's flags (see train ALGO --help)")
    train.set_defaults(run=_cmd_train)

    population = commands.add_parser(
        "population", help="train a population of partners: every seed's checkpoints at the start, middle "
        "and end (--snapshots), listed in population.json, for FCP and xplay --partners", add_help=False)
    population.add_argument("algorithm", help="baseline name")
    population.add_argument("flags", nargs=argparse.REMAINDER, help="train's flags (--seeds, --env, ...)")
    population.set_defaults(run=_cmd_population)

    evaluate = commands.add_parser("eval", help="mean episode return and 95%% CI of every seed and grid "
                                   "point of a run (one compiled program), and the mean over seeds")
    evaluate.add_argument("checkpoint", help="run folder (its newest checkpoint) or a checkpoint folder")
    evaluate.add_argument("--grid-index", "--grid-point", dest="grid_index", type=int, default=None,
                          help="evaluate only this grid point's seeds (default: every grid point)")
    evaluate.add_argument("--seed-index", type=int, default=None,
                          help="evaluate only this seed (of every grid point, or of --grid-index's)")
    evaluate.add_argument("--seed", type=int, default=0, help="random seed of the rollouts")
    evaluate.add_argument("--deterministic", action="store_true", help="take the most likely action")
    evaluate.add_argument("--episodes", type=int, default=100, help="episodes to run (in parallel)")
    evaluate.set_defaults(run=_cmd_eval)

    collect = commands.add_parser("collect", help="write a trained policy's episodes as an offline dataset "
                                  "in OG-MARL's format (a flashbax vault "
                                  "OUT/jaxmarl_suite/FAMILY/ENV_ID.vlt/QUALITY)")
    _add_run_selection(collect)
    collect.add_argument("--episodes", type=int, default=1000, help="episodes to play (in parallel)")
    collect.add_argument("--out", default="vaults", help="the vaults' folder (default: vaults)")
    collect.add_argument("--overwrite", action="store_true",
                         help="replace a vault of the same env and quality in --out")
    collect.set_defaults(run=_cmd_collect)

    zoo_parser = commands.add_parser("zoo", help="trained policies shipped with the package: list them, "
                                     "verify one by retraining it (eval, render, collect and xplay take "
                                     "zoo:NAME for a run folder)")
    zoo_parser.add_argument("action", choices=["list", "verify", "add"])
    zoo_parser.add_argument("name", nargs="?", default=None, help="the entry (verify, add)")
    zoo_parser.add_argument("--run-dir", default=None, help="add: the finished run to make the entry from")
    zoo_parser.add_argument("--command", action="append", default=None,
                            help="add: the command that trained it; repeat it, in order, for a run that took "
                            "several (population ... --run-dir NAME, then train fcp ... --partners NAME)")
    zoo_parser.add_argument("--episodes", type=int, default=500, help="add: episodes of its evaluation")
    zoo_parser.add_argument("--cpu-cores", type=int, default=None, metavar="N",
                            help="add: the CPU cores its training could use (taskset -c 1: 1), where it "
                            "trained on a CPU; verify then retrains on as many, which reproduces the entry")
    zoo_parser.add_argument("--overwrite", action="store_true", help="add: replace an entry of that name")
    zoo_parser.add_argument("--markdown", action="store_true", help="list: as a markdown table")
    zoo_parser.add_argument("--root", default=None,
                            help="add: the entries' folder (default: the package's, in a source checkout)")
    zoo_parser.set_defaults(run=_cmd_zoo)

    render = commands.add_parser("render", help="GIF of one episode of a trained policy")
    _add_run_selection(render)
    render.add_argument("--out", default=None,
                        help="GIF path (default: RUN_DIR/policy.gif, or NAME.gif here for zoo:NAME)")
    _add_gif_options(render)
    render.set_defaults(run=_cmd_render)

    report = commands.add_parser("report", help="compare run folders: aggregates with bootstrap CIs, "
                                 "probability of improvement, profiles and curves (report.md + PNGs)")
    report.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="run folders to compare, and marl-eval JSON files (Mava's, BenchMARL's, an "
                             "earlier report's marl_eval.json) whose runs join them (others, such as demo, "
                             "xplay and report outputs, are skipped)")
    report.add_argument("--out", default=None, help="output folder (default: report/ in the folder that "
                        "holds every run folder; the run folder itself for one run)")
    report.add_argument("--reps", type=int, default=2000, help="bootstrap resamples")
    report.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    from jaxmarl_suite.training.runner.logger import FINAL_FRACTION  # light: numpy only

    report.add_argument("--final-fraction", type=float, default=FINAL_FRACTION,
                        help="a run's score is its mean return over this last fraction of logged updates")
    report.add_argument("--normalize", action="append", default=None, metavar="ENV_ID=MIN:MAX",
                        help="returns that score 0 and 1 on a task (repeat per task); overrides the "
                        "package's reference scores (0 = random policy, 1 = a strong score)")
    report.add_argument("--format", choices=["markdown", "marl-eval"], default="markdown",
                        help="markdown: report.md, its figures and marl_eval.json (every run in marl-eval's "
                        "layout); marl-eval: marl_eval.json alone")
    report.add_argument("--marl-eval-metric", default=None, metavar="NAME",
                        help="the metric that scores runs read from marl-eval files (default: their return, "
                        "episode_return or mean_episode_return)")
    report.set_defaults(run=_cmd_report)

    xplay = commands.add_parser("xplay", help="cross-play for zero-shot coordination: agent 0 of every seed "
                                "with agent 1 of every seed (two-agent envs); matrix, heatmap, JSON, CSV")
    xplay.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders; every grid point and "
                       "seed in them is a seed of the matrix; zoo:NAME is a model-zoo entry, one seed")
    xplay.add_argument("--episodes", type=int, default=32, help="episodes per pair (in parallel)")
    xplay.add_argument("--out", default=None, help="output folder (default: xplay/ in the folder that holds "
                       "every run folder; xplay_RUN/ beside a single run folder; with zoo entries only, "
                       "xplay_NAME/ or xplay/ in the working directory)")
    xplay.add_argument("--seed", type=int, default=0, help="random seed of the rollouts (as eval's)")
    xplay.add_argument("--deterministic", action="store_true", help="take the most likely action")
    xplay.add_argument("--partners", default=None, metavar="DIR|zoo:NAME",
                       help="a held-out population (jaxmarl-suite population, trained with other seeds, or "
                            "zoo:NAME, one zoo policy): "
                            "every seed also plays each member in both seats; prints each partner's mean "
                            "return and the overall held-out score with 95%% CIs (one seed is enough)")
    xplay.set_defaults(run=_cmd_xplay)

    from jaxmarl_suite.training.runner.sweep import (
        add_arguments as add_sweep_arguments,  # light: no JAX import
    )

    sweep = commands.add_parser("sweep", help="train a YAML grid of tasks x algorithms x hparams x seeds, "
                                "one compiled program per (task, algorithm), then write a report")
    add_sweep_arguments(sweep)
    sweep.set_defaults(run=_cmd_sweep)

    listing = commands.add_parser("list", help="every registered env with its groups, spaces and reference")
    listing.add_argument("--family", default=None, help="only this family (e.g. mpe)")
    listing.set_defaults(run=_cmd_list)

    demo = commands.add_parser("demo", help="random-policy rollout: throughput plus a rendered GIF")
    demo.add_argument("--env", default="MPE_simple_spread_v3", help="env id")
    demo.add_argument("--num-envs", type=int, default=1024, help="envs stepped in parallel")
    demo.add_argument("--steps", type=int, default=500, help="steps per env")
    demo.add_argument("--seed", type=int, default=0, help="random seed")
    demo.add_argument("--out", default="runs/demo", help="folder for the GIF")
    _add_gif_options(demo)
    demo.set_defaults(run=_cmd_demo)

    bench = commands.add_parser("bench", help="env throughput benchmark (vs JaxMARL when installed)")
    bench.add_argument("envs", nargs="+", help="env ids")
    bench.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024, 4096], help="batch sizes")
    bench.add_argument("--steps", type=int, default=128, help="steps per timed call")
    bench.add_argument("--repeats", type=int, default=3, help="timed calls; the best is reported")
    bench.add_argument("--no-jaxmarl", action="store_true", help="skip the JaxMARL comparison")
    bench.add_argument("--markdown", default=None, metavar="PATH", help="also write the report to PATH")
    bench.set_defaults(run=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``jaxmarl-suite`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"] and (len(argv) == 1 or argv[1] in ("-h", "--help")):
        # `train` hands every later word to the baseline's own parser, so its --help is answered here
        print(train_help(), file=sys.stdout if len(argv) > 1 else sys.stderr)
        return 0 if len(argv) > 1 else 2
    args = build_parser().parse_args(argv)
    for name in ("num_envs", "steps"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            print(
                f"error: --{name.replace('_', '-')} must be a positive integer, got {value}", file=sys.stderr
            )
            return 2
    try:
        return int(args.run(args))
    except ValueError as error:  # ConfigError and CheckpointError are ValueErrors
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
