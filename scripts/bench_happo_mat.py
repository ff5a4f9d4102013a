"""HAPPO and MAT beside MAPPO: time per training update at the same batch, on one env, in one process.

    .venv/bin/python scripts/bench_happo_mat.py              # SMAX 2s3z (5 agents), 64 envs x 64 steps
    .venv/bin/python scripts/bench_happo_mat.py --env SMAX_3m --num-envs 256 --markdown /tmp/happo_mat.md
    .venv/bin/python scripts/bench_happo_mat.py --quick      # a smoke run (the test's)

Each baseline gets the same ``Config`` fields (env, envs, steps, epochs, minibatches, hidden sizes, team
returns) and its own defaults otherwise (HAPPO: every agent its own actor and critic, its premise; MAPPO:
shared per group; MAT: one transformer for all agents). Each compiles ``--updates`` updates in one jitted
``lax.scan`` (``kit.baseline.scan_updates``), and the three then take turns, one timed repeat each per round,
so a slow spell of a shared machine falls on all. Time per update = best repeat / updates; env steps/s =
envs x steps / time per update. The issue's targets: HAPPO within 1.5x of MAPPO's time per update for 5
agents, MAT within 2x. "flops / MAPPO's" is XLA's cost analysis of the same compiled program, which counts
each loop's body once: the arithmetic of one rollout step and one minibatch's gradient step, beside
MAPPO's. Where arithmetic dominates, the time ratio cannot fall much below it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax

from jaxmarl_suite.bench import machine_info
from jaxmarl_suite.training.kit.baseline import scan_updates
from jaxmarl_suite.training.runner.config import baseline_module

ALGORITHMS = ("mappo", "happo", "mat")
TARGETS = {"happo": 1.5, "mat": 2.0}


def xla_flops(compiled: Any) -> float:
    """XLA's count of floating-point operations in a compiled program (each loop body counted once), or
    NaN where the backend gives none."""
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older jax: one dict per device
        analysis = analysis[0] if analysis else None
    return float((analysis or {}).get("flops", float("nan")))


def prepared_updates(name: str, env_id: str, num_envs: int, num_steps: int, epochs: int, minibatches: int,
                     updates: int) -> tuple[Callable[[], Any], float, float]:
    """A function that runs ``updates`` compiled updates of baseline ``name`` from a fixed start and
    blocks on the result, its compile time in seconds and XLA's flop count of the program."""
    module = baseline_module(name)
    config = module.Config(env_id=env_id, num_envs=num_envs, num_steps=num_steps, update_epochs=epochs,
                           num_minibatches=minibatches, total_timesteps=num_envs * num_steps * updates,
                           team_returns=True)
    trainer = module.make_trainer(config, module.make_env(config))
    hparams = module.HParams()
    runner = jax.jit(trainer.init)(jax.random.PRNGKey(0), hparams)
    run = jax.jit(lambda r: scan_updates(trainer.update, r, hparams, updates)[1])
    start = time.perf_counter()
    compiled = run.lower(runner).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(runner))  # the first run pays allocation, not compute
    return lambda: jax.block_until_ready(compiled(runner)), compile_s, xla_flops(compiled)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table (and write it with ``--markdown``)."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="SMAX_2s3z")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--num-steps", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--minibatches", type=int, default=4)
    parser.add_argument("--updates", type=int, default=3, help="updates per timed run (one compiled scan)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per baseline; the best counts")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (MPE spread, 4 envs x 8 steps)")
    parser.add_argument("--markdown", metavar="PATH", default=None, help="also write the output here")
    args = parser.parse_args(argv)
    if args.quick:
        args.env, args.num_envs, args.num_steps = "MPE_simple_spread_v3", 4, 8
        args.epochs, args.minibatches, args.updates, args.repeats = 1, 2, 1, 1

    runs, compile_s, flops = {}, {}, {}
    for name in ALGORITHMS:
        runs[name], compile_s[name], flops[name] = prepared_updates(
            name, args.env, args.num_envs, args.num_steps, args.epochs, args.minibatches, args.updates)
    best = dict.fromkeys(ALGORITHMS, float("inf"))
    for _ in range(args.repeats):
        for name in ALGORITHMS:
            start = time.perf_counter()
            runs[name]()
            best[name] = min(best[name], time.perf_counter() - start)

    per_update = {name: best[name] / args.updates for name in ALGORITHMS}
    batch = args.num_envs * args.num_steps
    lines = [
        f"# HAPPO and MAT beside MAPPO on {args.env}: {args.num_envs} envs x {args.num_steps} steps, "
        f"{args.epochs} epochs x {args.minibatches} minibatches",
        "",
        "Machine: " + ", ".join(f"{key} {value}" for key, value in machine_info().items()),
        "",
        "| baseline | s per update | env steps/s | / MAPPO's time (target) | flops / MAPPO's | compile s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ALGORITHMS:
        ratio = per_update[name] / per_update["mappo"]
        target = "" if name not in TARGETS else (
            f" ({'met' if ratio <= TARGETS[name] else 'missed'}: <= {TARGETS[name]}x)")
        lines.append(f"| {name} | {per_update[name]:.3f} | {batch / per_update[name]:,.0f} | "
                     f"{ratio:.2f}x{target} | {flops[name] / flops['mappo']:.2f}x | {compile_s[name]:.1f} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
