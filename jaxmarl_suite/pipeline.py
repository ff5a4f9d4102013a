"""A run and the steps after it: ``train`` writes the run folder, then the returns plot and the policy GIF;
``run_sweep`` trains every block, then writes the report.

This module sits above the runner (``jaxmarl_suite.training.runner``), which writes run folders and never
imports evaluation, and above evaluation, which reads them. The command line (``jaxmarl-suite train``,
``sweep``) and each baseline's ``main`` come through here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import jax

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import CheckpointError, ConfigError
from jaxmarl_suite.evaluation.plots import plot_returns
from jaxmarl_suite.evaluation.policy import render_policy
from jaxmarl_suite.evaluation.report import task_scales, write_report
from jaxmarl_suite.training.runner.config import Experiment, parse_experiment
from jaxmarl_suite.training.runner.experiment import (
    RunResult,
    first_run_params,
    interrupted_message,
    run_experiment,
)
from jaxmarl_suite.training.runner.sharding import barrier, is_primary
from jaxmarl_suite.training.runner.sweep import (
    Block,
    Sweep,
    SweepResult,
    finished_run_dirs,
    format_plan,
    load_sweep,
    plan_sweep,
    train_blocks,
)
from jaxmarl_suite.training.runner.sweep import add_arguments as add_sweep_arguments


def write_artifacts(module: ModuleType, experiment: Experiment, result: RunResult) -> None:
    """The returns plot (every grid point, mean and 95% band over seeds) and a GIF of the trained policy of
    grid point 0, seed 0, where the env renders. Every process calls it; process 0 writes."""
    params = first_run_params(module, result, experiment.num_seeds)
    if is_primary():
        _write_plot_and_gif(module, experiment, params)
    # No process leaves (to shut jax.distributed down, or to start a sweep's next block) before they exist.
    barrier("artifacts written")


def _write_plot_and_gif(module: ModuleType, experiment: Experiment, params: Any) -> None:
    run_dir = experiment.run_dir
    plot = plot_returns(run_dir, run_dir / "returns.png",
                        title=f"{experiment.algorithm.upper()} on {experiment.config.env_id}")
    print(f"returns plot      {plot}", file=sys.stderr)
    try:
        gif = render_policy(module, experiment.config, params, run_dir / "policy.gif", jax.random.PRNGKey(0))
        print(f"policy GIF        {gif}", file=sys.stderr)
    except ValueError as error:
        print(f"no policy GIF: {error}", file=sys.stderr)


def train(module: ModuleType, experiment: Experiment, env: MultiAgentEnv | None = None, *,
          artifacts: bool = True) -> RunResult:
    """``run_experiment``, then (unless ``artifacts`` is False) the returns plot and the policy GIF."""
    result = run_experiment(module, experiment, env)
    if artifacts:
        write_artifacts(module, experiment, result)
    return result


def run_from_command_line(module: ModuleType, algorithm: str, argv: Sequence[str] | None = None) -> int:
    """Parse a baseline's flags and train it; configuration and checkpoint errors exit with status 2, and
    Ctrl-C with status 130 after one line naming the last checkpoint and the command that resumes it."""
    experiment = None
    try:
        experiment = parse_experiment(algorithm, module.Config, module.HParams, argv)
        result = train(module, experiment)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if experiment is None:
            print("\ninterrupted", file=sys.stderr, flush=True)
        else:
            print("\n" + interrupted_message(experiment), file=sys.stderr, flush=True)
        sys.stdout.flush()
        # Leave at once: the compiled loop's threads and orbax's event loop would otherwise outlive the
        # interrupted call and print tracebacks while the interpreter tears down.
        os._exit(130)
    summary = json.loads((result.run_dir / "summary.json").read_text())
    print(f"done in {summary['wall_s']:.1f} s; final return_mean per grid point and seed: "
          f"{summary.get('final_return_mean')}; run folder {result.run_dir}")
    return 0


# ------------------------------------------------------------------------------------------------ sweeps
def check_report_scales(sweep: Sweep) -> None:
    """A report over several tasks needs each task's scale (a ``normalize`` range or a reference score):
    found before the first block trains, not after the last."""
    if sweep.report is None or len(sweep.tasks) <= 1:
        return
    try:
        task_scales(sweep.tasks, [], sweep.report.normalize)
    except ValueError as error:
        raise ConfigError(f"{sweep.source}: report: {error} In a sweep file: report: {{normalize: {{TASK: "
                          "[MIN, MAX]}}}}") from None


def run_sweep(
    source: str | Path | Mapping[str, Any],
    *,
    out: str | Path | None = None,
    dry_run: bool = False,
    keep_going: bool = False,
    stream: TextIO | None = None,
) -> SweepResult:
    """Validate the whole sweep, train its blocks one after the other (each with its plot and GIF unless
    the file sets ``artifacts: false``), and write the report.

    ``source`` is a sweep file or its parsed mapping; ``out`` overrides its ``out``. ``dry_run`` prints the
    plan and trains nothing. By default the first block that fails stops the sweep (the blocks before it
    stay done, so a re-run carries on); ``keep_going`` trains the others and reports on the finished ones.
    """
    stream = stream or sys.stdout
    sweep = load_sweep(source, out=out)
    check_report_scales(sweep)
    plan = plan_sweep(sweep)
    if dry_run:
        print(format_plan(plan), file=stream)
        return SweepResult(plan)

    def run_block(block: Block) -> RunResult:
        return train(block.module, block.experiment, block.env, artifacts=sweep.artifacts)

    result = train_blocks(plan, run_block, keep_going=keep_going, stream=stream)
    finished = finished_run_dirs(result)
    if sweep.report is not None and finished:
        result.report = write_report(finished, sweep.out / "report", **dataclasses.asdict(sweep.report))
        print(f"report: {result.report}", file=stream, flush=True)
    if result.failed:
        print(f"{len(result.failed)} block(s) failed: {', '.join(b.name for b, _ in result.failed)}",
              file=stream, flush=True)
    return result


def sweep_command(args: argparse.Namespace) -> int:
    """Run the sweep that ``args`` (from ``add_sweep_arguments``) describes. Exit status: 0 done, 1 some
    block failed (``--keep-going``), 2 an invalid sweep."""
    try:
        result = run_sweep(args.sweep_file, out=args.out, dry_run=args.dry_run, keep_going=args.keep_going)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted; finished blocks are kept and the interrupted one resumes from its last "
              f"checkpoint. Continue with: jaxmarl-suite sweep {args.sweep_file}"
              + (f" --out {args.out}" if args.out else ""), file=sys.stderr, flush=True)
        # as `train`: leave before the compiled loop's threads print tracebacks during teardown
        os._exit(130)
    return 1 if result.failed else 0


def sweep_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``scripts/sweep.py`` (the same as ``jaxmarl-suite sweep``)."""
    from jaxmarl_suite.training.runner import sweep as sweep_module

    parser = argparse.ArgumentParser(prog="sweep", description=sweep_module.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_sweep_arguments(parser)
    return sweep_command(parser.parse_args(argv))
