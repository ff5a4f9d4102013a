"""Zero-shot coordination on one two-player env: IPPO self-play agents and FCP agents, both scored with a
held-out partner population.

    python scripts/zsc_result.py --env Overcooked_counter_circuit --out runs/zsc [--seeds 4] [--fcp-seeds 4]

The protocol, each step skipped when its folder already holds a finished run (so the table can be
rebuilt from earlier runs):

1. ``OUT/train_pop``: ``jaxmarl-suite population ippo --seeds S --seed 0`` with the env's IPPO preset:
   S self-play seeds, each kept at its start, middle and end. Their final policies are the **self-play**
   egos.
2. ``OUT/fcp``: ``jaxmarl-suite train fcp --partners OUT/train_pop --seeds F --seed 50`` with the same
   env steps per seed (the FCP preset is IPPO's): the **FCP** egos.
3. ``OUT/held_out``: ``jaxmarl-suite population ippo --seeds S --seed 100``, trained apart from both.
4. ``xplay EGOS --partners OUT/held_out`` for both kinds of ego, both seats, ``--episodes`` each.

Prints a markdown table: each method's self-play score, its held-out score over every member (start,
middle and end of each held-out seed) and over the trained members only (middle and end), each a mean over
(ego, partner) pairs with a 95% Student-t interval over the pair means. Mean per-agent episode return:
on Overcooked, 20 per soup served.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.evaluation.policy import mean_ci
from jaxmarl_suite.evaluation.xplay import run_cross_play
from jaxmarl_suite.training.runner.run_folder import is_finished


def _train(command: list[str], run_dir: Path) -> None:
    if is_finished(run_dir):
        print(f"{run_dir} is finished: kept", file=sys.stderr)
        return
    code = cli_main([*command, "--run-dir", str(run_dir), "--artifacts", "none", "--no-progress"])
    if code != 0:
        raise SystemExit(f"{' '.join(command)} failed with exit code {code}")


def _interval(values: np.ndarray) -> str:
    mean, low, high = mean_ci(values.reshape(-1))
    return f"{mean:.1f} ({low:.1f} .. {high:.1f})"


def scores(ego_dir: Path, partners: Path, episodes: int, out: Path) -> dict[str, Any]:
    """Self-play and held-out pair means of the egos in ``ego_dir`` (every member, and trained members)."""
    output = run_cross_play([ego_dir], out, episodes=episodes, partners=partners)
    held = output.held_out
    assert held is not None
    trained = [j for j, p in enumerate(held.partners) if (p.source.get("update") or 0) > 0]
    return {"egos": len(held.egos), "self_play": np.diag(output.result.matrix),
            "all": held.pair_means, "trained": held.pair_means[:, trained], "partners": len(held.partners),
            "trained_partners": len(trained)}


def result(env: str, out: Path, seeds: int = 4, fcp_seeds: int = 4, episodes: int = 32,
           flags: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Run (or reuse) the four steps under ``out``; each method's ``scores``."""
    train_pop, fcp_dir, held_out = out / "train_pop", out / "fcp", out / "held_out"
    common = ["--env", env, *flags]
    _train(["population", "ippo", *common, "--seeds", str(seeds), "--seed", "0"], train_pop)
    _train(["train", "fcp", *common, "--partners", str(train_pop), "--seeds", str(fcp_seeds), "--seed", "50"],
           fcp_dir)
    _train(["population", "ippo", *common, "--seeds", str(seeds), "--seed", "100"], held_out)
    return {"IPPO self-play": scores(train_pop, held_out, episodes, out / "xplay_self_play"),
            "FCP": scores(fcp_dir, held_out, episodes, out / "xplay_fcp")}


def main(argv: list[str] | None = None) -> int:
    """Run (or reuse) the four steps and print the table."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Overcooked_counter_circuit")
    parser.add_argument("--out", default="runs/zsc")
    parser.add_argument("--seeds", type=int, default=4, help="seeds of each population")
    parser.add_argument("--fcp-seeds", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=32, help="episodes per pair and seat")
    parser.add_argument("--flags", nargs=argparse.REMAINDER, default=[],
                        help="extra training flags for every run (e.g. --total-timesteps 1e6)")
    args = parser.parse_args(argv)
    rows = result(args.env, Path(args.out), args.seeds, args.fcp_seeds, args.episodes, args.flags)
    first = next(iter(rows.values()))
    print(f"\n{args.env}: mean per-agent episode return, 95% CI over (ego, partner) pairs; held-out "
          f"population of {first['partners']} members ({first['trained_partners']} trained), "
          f"{args.episodes} episodes per pair and seat\n")
    print("| method | egos | self-play | held-out, every member | held-out, trained members |")
    print("|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['egos']} | {_interval(row['self_play'])} | {_interval(row['all'])} | "
              f"{_interval(row['trained'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
