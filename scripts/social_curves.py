"""Learning on the social dilemmas: IPPO and MAPPO presets with the measures those fields report.

    python scripts/social_curves.py [--presets ippo_MatrixGame ippo_CoinGame ...] [--seeds 3] \\
        [--markdown /tmp/social_curves.md]

Each preset (``baselines/configs/<name>.yaml``) trains ``--seeds`` seeds vmapped in one compiled program
(keys ``PRNGKey(0..seeds-1)``), its wall-clock compile included. The table gives, per preset, the mean over
seeds of: the return per agent on the first update that finished episodes (the untrained, near-uniform
policy) and at the end (the
last 10% of updates, ``tests/preset_training.tail_mean``), the random-policy return from
``reference_scores.yaml``, and at the end the win rate (Switch Riddle's true announcements) and the social
measures the env reports (``collective_return``,
``equality``, ``cooperative_share``, pick-ups per agent; see docs/api.md). JaxMARL ships no baselines for
these envs except IPPO-FF on Switch Riddle, which ``scripts/ippo_curves.py --env switch_riddle`` compares.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from collections.abc import Sequence

import jax
import numpy as np

from jaxmarl_suite.bench import machine_info
from jaxmarl_suite.evaluation.reference import reference_for
from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.runner.config import baseline_module, build, load_preset

DEFAULT_PRESETS = ("ippo_MatrixGame", "mappo_MatrixGame", "ippo_CoinGame", "mappo_CoinGame",
                   "ippo_SwitchRiddle", "mappo_SwitchRiddle", "ippo_STORM_2p", "mappo_STORM_2p")
MEASURES = ("win_rate", "collective_return", "equality", "cooperative_share", "cooperative_pickups",
            "defecting_pickups")
TAIL = 0.1


def tail(values: np.ndarray) -> np.ndarray:
    """Per seed, the mean of the finite values over the last ``TAIL`` of the updates (``[seeds]``)."""
    window = values[:, -max(1, math.ceil(TAIL * values.shape[1])):]
    with np.errstate(invalid="ignore"):
        return np.array([np.nanmean(row) if np.isfinite(row).any() else math.nan for row in window])


def train_preset(name: str, seeds: int) -> dict[str, object]:
    """Train one preset's seeds in one program; the row of the table."""
    data = load_preset(name)
    module = baseline_module(str(data["algorithm"]))
    config = build(module.Config, dict(data["config"]))
    hparams = build(module.HParams, data["hparams"])
    start = time.perf_counter()
    train = jax.jit(jax.vmap(make_train(module, config), in_axes=(0, None)))
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(seeds))
    metrics = jax.tree.map(np.asarray, train(keys, hparams).metrics)
    seconds = time.perf_counter() - start
    reference = reference_for(config.env_id)
    row: dict[str, object] = {
        "preset": name, "env": config.env_id, "steps": config.num_updates * config.batch_size,
        "random": reference.random if reference is not None else math.nan,
        "first": float(np.mean([row[np.isfinite(row)][0] for row in metrics["return_mean"]])),
        "final": tail(metrics["return_mean"]), "seconds": seconds,
    }
    for measure in MEASURES:
        if measure in metrics:
            row[measure] = tail(metrics[measure])
    return row


def _cell(value: object) -> str:
    if isinstance(value, np.ndarray):
        finite = value[np.isfinite(value)]
        if finite.size == 0:
            return "-"
        spread = f" ({finite.min():.3g} to {finite.max():.3g})" if finite.size > 1 else ""
        return f"{finite.mean():.3g}{spread}"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.3g}"
    return str(value)


def format_table(rows: Sequence[dict[str, object]], seeds: int) -> str:
    """The markdown table: one row per preset; final values are the mean over seeds (min to max)."""
    header = ["preset", "env steps", "random policy", "first update", "final return", "win rate",
              "collective", "equality", "cooperative share", "coop. pick-ups", "defect. pick-ups", "wall s"]
    lines = [f"Mean over {seeds} seed(s), the range over seeds in brackets; per-agent returns.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row["preset"], f"{row['steps']:.2g}", row["random"], row["first"], row["final"],
                 *(row.get(m, math.nan) for m in MEASURES), f"{row['seconds']:.0f}"]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Train every preset, print the table (and write it with ``--markdown``)."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", default=list(DEFAULT_PRESETS), help="preset names or paths")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per preset, vmapped in one program")
    parser.add_argument("--markdown", default=None, help="also write the report here")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    rows = []
    for name in args.presets:
        rows.append(train_preset(name, args.seeds))
        print(f"{name}: done in {rows[-1]['seconds']:.0f} s", file=sys.stderr)
    machine = machine_info()
    command = shlex.join(argv if argv is not None else sys.argv[1:])
    text = "\n".join([
        f"Machine: {machine.get('cpu', '?')} ({machine.get('cores', '?')}), jax {machine.get('jax', '?')} on "
        f"{machine.get('backend', '?')}, {machine.get('date', '?')}.",
        f"Command: `python scripts/social_curves.py {command}`",
        "", format_table(rows, args.seeds), ""])
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
