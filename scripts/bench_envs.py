"""Env throughput: ours (batch-native), our vmap fallback and JaxMARL, at several batch sizes.

    python scripts/bench_envs.py [--envs ID ...] [--batches 1 64 1024 4096] [--steps 128] [--repeats 3]
                                 [--no-jaxmarl] [--no-vmap] [--env-kwargs JSON] [--markdown PATH]

One env step = every agent of one env acting once. The logic lives in ``jaxmarl_suite.bench``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence

from jaxmarl_suite.bench import (
    GPU_TARGETS,
    GpuTargetUnavailableError,
    format_table,
    machine_info,
    run_benchmark,
    write_markdown,
)
from jaxmarl_suite.wrappers import AutoReset


def build_parser() -> argparse.ArgumentParser:
    """Command-line arguments."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--envs", nargs="+", default=["MPE_simple_spread_v3"], help="env ids (aliases work)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024, 4096], help="batch sizes")
    parser.add_argument("--steps", type=int, default=128, help="env steps per timed call (scan length)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats; the best is reported")
    parser.add_argument(
        "--min-repeat-s", type=float, default=0.2, help="chain calls until a repeat lasts this"
    )
    parser.add_argument("--no-jaxmarl", action="store_true", help="skip the JaxMARL comparison")
    parser.add_argument("--no-vmap", action="store_true", help="skip our jax.vmap fallback path")
    parser.add_argument("--no-reference", action="store_true", help="skip the one-env mpe2 reference timing")
    parser.add_argument(
        "--masked-actions", action="store_true", help="draw Discrete actions uniformly over the action mask"
    )
    parser.add_argument(
        "--env-kwargs", default="{}", metavar="JSON",
        help='constructor arguments for every env, e.g. \'{"enemy": "agents"}\' (SMAX vs JaxMARL\'s SMAX)',
    )
    parser.add_argument(
        "--reset-mode", choices=AutoReset.MODES, default="auto",
        help="our AutoReset's mode (see jaxmarl_suite.wrappers.AutoReset)",
    )
    parser.add_argument(
        "--gpu-target", choices=sorted(GPU_TARGETS), default=None,
        help="also count each side's kernels per step as compiled for this GPU, on this machine "
             "(needs JAX's CUDA plugin: pip install -e '.[gpu-target]'; no GPU)",
    )
    parser.add_argument("--markdown", default=None, metavar="PATH", help="also write the report to PATH")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the markdown table, optionally write it to a file."""
    args = build_parser().parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or min(args.batches) < 1:
        print("error: --steps, --repeats and --batches must be positive", file=sys.stderr)
        return 2
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as error:
        print(f"error: --env-kwargs is not JSON: {error}", file=sys.stderr)
        return 2
    if not isinstance(env_kwargs, dict):
        print("error: --env-kwargs must be a JSON object", file=sys.stderr)
        return 2
    try:
        rows = run_benchmark(
            args.envs,
            args.batches,
            args.steps,
            args.repeats,
            compare_jaxmarl=not args.no_jaxmarl,
            include_vmap=not args.no_vmap,
            masked_actions=args.masked_actions,
            min_repeat_s=args.min_repeat_s,
            compare_reference=not args.no_reference,
            env_kwargs=env_kwargs,
            reset_mode=args.reset_mode,
            gpu_target=args.gpu_target,
        )
    except (ValueError, TypeError, GpuTargetUnavailableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_table(rows, machine_info()))
    if args.markdown:
        command = shlex.join(["python", "scripts/bench_envs.py", *(sys.argv[1:] if argv is None else argv)])
        write_markdown(args.markdown, rows, command)
        print(f"\nwrote {args.markdown}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
