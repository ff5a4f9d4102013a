"""A run and the steps after it: ``train`` writes the run folder, then the returns plot and the policy GIF;
``run_sweep`` trains every block, then writes the report.

This module sits above the runner (``jaxmarl_suite.training.runner``), which writes run folders and never
imports evaluation, and above evaluation, which reads them. The command line (``jaxmarl-suite train``,
``sweep``) and each baseline's ``main`` come through here.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import jax

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import CheckpointError, ConfigError
from jaxmarl_suite.evaluation.plots import plot_returns
from jaxmarl_suite.evaluation.policy import render_policy
from jaxmarl_suite.evaluation.report import run_report, task_scales
from jaxmarl_suite.training.runner.config import ARTIFACTS, Experiment, parse_experiment
from jaxmarl_suite.training.runner.experiment import (
    RunResult,
    finished_message,
    finished_update,
    first_run_params,
    interrupted_message,
    run_experiment,
)
from jaxmarl_suite.training.runner.run_folder import read_summary
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


def write_artifacts(module: ModuleType, experiment: Experiment, result: RunResult,
                    what: str = "all") -> dict[str, float]:
    """After the run: the returns plot (every grid point, mean and 95% band over seeds) and, with ``what``
    ``all``, a GIF of the trained policy of grid point 0, seed 0, where the env renders; ``plot`` writes the
    plot only and ``none`` nothing. Every process calls it; process 0 writes. Returns the seconds each
    took (``plot``, ``gif``)."""
    if what not in ARTIFACTS:
        raise ConfigError(f"artifacts: must be one of {list(ARTIFACTS)}, got {what!r}")
    timings: dict[str, float] = {}
    if what == "none":
        return timings
    params = first_run_params(module, result, experiment.num_seeds) if what == "all" else None
    if is_primary():
        timings = _write_plot_and_gif(module, experiment, params)
    # No process leaves (to shut jax.distributed down, or to start a sweep's next block) before they exist.
    barrier("artifacts written")
    return timings


def _write_plot_and_gif(module: ModuleType, experiment: Experiment, params: Any) -> dict[str, float]:
    run_dir = experiment.run_dir
    start = time.perf_counter()
    plot = plot_returns(run_dir, run_dir / "returns.png",
                        title=f"{experiment.algorithm.upper()} on {experiment.config.env_id}")
    timings = {"plot": time.perf_counter() - start}
    print(f"returns plot      {plot}", file=sys.stderr)
    if params is None:
        return timings
    start = time.perf_counter()
    try:
        gif = render_policy(module, experiment.config, params, run_dir / "policy.gif", jax.random.PRNGKey(0))
        print(f"policy GIF        {gif}", file=sys.stderr)
    except ValueError as error:
        print(f"no policy GIF: {error}", file=sys.stderr)
    timings["gif"] = time.perf_counter() - start
    return timings


def train(module: ModuleType, experiment: Experiment, env: MultiAgentEnv | None = None, *,
          artifacts: bool | str = True) -> RunResult:
    """``run_experiment``, then what ``artifacts`` asks for: ``True`` (the experiment's ``artifacts``, by
    default the returns plot and the policy GIF), ``False`` (nothing), or ``all``/``plot``/``none``."""
    result = run_experiment(module, experiment, env)
    what = experiment.artifacts if artifacts is True else ("none" if artifacts is False else artifacts)
    write_artifacts(module, experiment, result, what)
    return result


_previous_command_end: float | None = None
"""``time.perf_counter()`` when this process's last ``run_from_command_line`` returned, if one has."""


def startup_seconds() -> float:
    """Seconds from this process's start to now (Linux's ``/proc``), or, where that cannot be read, from the
    first import of ``jaxmarl_suite``. After an earlier command in the same process (a script calling the
    CLI several times), from the end of that command, whose own line counted the time before it."""
    if _previous_command_end is not None:
        return time.perf_counter() - _previous_command_end
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        import jaxmarl_suite

        return time.perf_counter() - jaxmarl_suite.IMPORTED_AT


def run_from_command_line(module: ModuleType, algorithm: str, argv: Sequence[str] | None = None) -> int:
    """Parse a baseline's flags and train it; configuration and checkpoint errors exit with status 2, and
    Ctrl-C with status 130 after one line naming the last checkpoint and the command that resumes it. The
    last line gives what the whole command took: start-up, set-up, compile, training, plot and GIF."""
    global _previous_command_end
    try:
        return _run_from_command_line(module, algorithm, argv)
    finally:
        _previous_command_end = time.perf_counter()


def _run_from_command_line(module: ModuleType, algorithm: str, argv: Sequence[str] | None) -> int:
    startup = startup_seconds()
    start = time.perf_counter()
    experiment = None
    try:
        experiment = parse_experiment(algorithm, module.Config, module.HParams, argv)
        done = finished_update(experiment)
        if done is not None:  # nothing to train: leave the folder, its plot and its GIF as they are
            print(finished_message(experiment, done))
            return 0
        result = run_experiment(module, experiment)
        after = write_artifacts(module, experiment, result, experiment.artifacts)
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
    summary = read_summary(result.run_dir) or {}
    print(f"{command_timings(startup, time.perf_counter() - start, result, after)}; final "
          f"{summary.get('score_metric', 'return_mean')} per grid point and seed: "
          f"{summary.get('final_score', summary.get('final_return_mean'))}; run folder {result.run_dir}")
    return 0


def command_timings(startup: float, since_start: float, result: RunResult, after: Mapping[str, float]) -> str:
    """``done in T s (start-up a, set-up b, compile c, training d, plot e, GIF f)``: the whole command,
    process start to now, and its parts; set-up is what is left (config, env, init, checkpoint loading)."""
    total = startup + since_start
    setup = since_start - result.compile_s - result.train_s - sum(after.values())
    parts = [("start-up", startup), ("set-up", setup), ("compile", result.compile_s),
             ("training", result.train_s), *((("GIF" if k == "gif" else k), v) for k, v in after.items())]
    return f"done in {total:.1f} s (" + ", ".join(f"{name} {value:.1f} s" for name, value in parts) + ")"


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
        output = run_report(finished, sweep.out / "report", **dataclasses.asdict(sweep.report))
        result.report = output.path
        print(f"report: {result.report}", file=stream, flush=True)
        for note in output.notes:  # as `jaxmarl-suite report` prints them, not only in report.md
            print(f"note: {note.replace('`', '')}", file=stream, flush=True)
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
