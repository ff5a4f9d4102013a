"""IPPO learning curves on multi-agent MuJoCo: ours (MJX) beside JaxMARL's MABrax IPPO (Brax), at equal env
steps, with each side's own config.

JaxMARL's MABrax needs ``brax``, which the suite does not install (in a fresh environment pip resolves
brax's unpinned ``mujoco`` to 4.x; beside the suite's ``mujoco==3.17.0`` it may keep 3.17, not tried
here). The two sides therefore run as two processes on the same machine, one after the other, each writing
JSON; ``--merge`` prints the table:

    .venv/bin/python scripts/mamujoco_curves.py --side ours --task HalfCheetah_6x1 --timesteps 576000 \\
        --json /tmp/ours_hc.json [--physics c]
    BRAXVENV/bin/python scripts/mamujoco_curves.py --side jaxmarl --task HalfCheetah_6x1 --timesteps 576000 \\
        --jaxmarl-ippo /tmp/JaxMARL/baselines/IPPO/ippo_ff_mabrax.py --json /tmp/jaxmarl_hc.json
    .venv/bin/python scripts/mamujoco_curves.py --merge /tmp/ours_hc.json /tmp/jaxmarl_hc.json

- **ours**: ``baselines/ippo.py`` with the preset ``ippo_MaMuJoCo_<task>`` (JaxMARL's MABrax settings: 64 envs
  x 300 steps, 4 epochs x 4 minibatches, lr 1e-3 annealed, entropy 2e-6, value coefficient 4.5, tanh
  64-64), ``total_timesteps`` set to ``--timesteps``. Metric: the mean per-agent return of the episodes that
  finished in an update.
- **jaxmarl**: JaxMARL's ``baselines/IPPO/ippo_ff_mabrax.py`` with its YAML config (``ENV_NAME`` set to the
  task's MABrax id, ``TOTAL_TIMESTEPS`` to ``--timesteps``), imported with ``hydra`` and ``wandb`` stubbed.
  Metric: its logged ``returned_episode_returns``, the return of each env's last finished episode averaged
  over the update's steps (0 before an env's first episode ends, so it lags ours early on).

Every agent receives the team's reward on both sides, so a per-agent return is the team's. The physics
differ (MuJoCo's v5 models on MJX against Brax's generalized pipeline), so the returns are not the same
quantity: the table shows how each side learns per env step, not that the numbers should agree.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MABRAX_IDS = {"HalfCheetah_6x1": "halfcheetah_6x1", "Ant_4x2": "ant_4x2"}
"""Our task names and JaxMARL's MABrax ids for them, for the tasks with an ``ippo_MaMuJoCo_<task>`` preset
(MABrax registers only these partitions of HalfCheetah and Ant: no HalfCheetah 2x3)."""


def run_ours(task: str, timesteps: int, seed: int, physics: str = "mjx") -> dict[str, Any]:
    """Train our IPPO preset for ``task``; per-update env steps and mean finished-episode return."""
    import jax
    import numpy as np

    from jaxmarl_suite.baselines import ippo
    from jaxmarl_suite.training.kit import make_train
    from jaxmarl_suite.training.runner.config import build, load_preset

    data = load_preset(f"ippo_MaMuJoCo_{task}")
    config = build(ippo.Config, {**data["config"], "total_timesteps": timesteps,
                                 "env_kwargs": {"physics": physics}})
    hparams = build(ippo.HParams, data["hparams"])
    start = time.perf_counter()
    out = jax.jit(make_train(ippo, config))(jax.random.PRNGKey(seed), hparams)
    returns = np.asarray(out.metrics["return_mean"])
    seconds = time.perf_counter() - start
    per_update = config.num_envs * config.num_steps
    steps = [(i + 1) * per_update for i in range(len(returns))]
    return {"side": f"ours ({physics})", "task": task, "steps": steps, "returns": [float(r) for r in returns],
            "seconds": seconds}


def run_jaxmarl(task: str, timesteps: int, seed: int, script: str) -> dict[str, Any]:
    """Train JaxMARL's ``ippo_ff_mabrax.py`` with its own config on the task's MABrax id."""
    import jax
    import numpy as np
    from omegaconf import OmegaConf

    for name in ("wandb", "hydra"):  # the script imports both at module level; neither is used here
        stub = types.ModuleType(name)
        stub.log = lambda *args, **kwargs: None  # type: ignore[attr-defined]
        stub.init = lambda *args, **kwargs: None  # type: ignore[attr-defined]
        stub.main = lambda *args, **kwargs: (lambda f: f)  # type: ignore[attr-defined]
        sys.modules[name] = stub
    spec = importlib.util.spec_from_file_location("ippo_ff_mabrax", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config_path = Path(script).parent / "config" / "ippo_ff_mabrax.yaml"
    config = OmegaConf.to_container(OmegaConf.load(config_path))
    assert isinstance(config, dict)
    config.update(ENV_NAME=MABRAX_IDS[task], TOTAL_TIMESTEPS=timesteps, WANDB_MODE="disabled")
    rng = jax.random.PRNGKey(seed)
    start = time.perf_counter()
    out = jax.jit(module.make_train(config, rng))(rng)
    metric = out["metrics"]
    returns = np.asarray(metric["returned_episode_returns"])
    steps = np.asarray(metric["env_step"])
    seconds = time.perf_counter() - start
    return {"side": "jaxmarl", "task": task, "steps": [int(s) for s in steps],
            "returns": [float(r) for r in returns], "seconds": seconds}


def _held(returns: Sequence[float]) -> list[float]:
    """Each update's return, or the last one logged where no episode finished (NaN): our updates of 300
    steps end a 1,000-step episode only every third or fourth update."""
    held, last = [], float("nan")
    for value in returns:
        last = value if value == value else last
        held.append(last)
    return held


def merge(paths: Sequence[str]) -> str:
    """Markdown: each side's return at every common logged env step (their update sizes match: 64 x 300)."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    lines = []
    for task in dict.fromkeys(run["task"] for run in runs):
        sides = [run for run in runs if run["task"] == task]
        lines += [f"**{task}**", "", "| env steps | " + " | ".join(run["side"] for run in sides) + " |",
                  "|---|" + "---|" * len(sides)]
        tables = [dict(zip(run["steps"], _held(run["returns"]), strict=True)) for run in sides]
        common = sorted(set.intersection(*(set(t) for t in tables)))
        stride = max(1, len(common) // 10)
        for step in common[stride - 1 :: stride]:
            lines.append(f"| {step:,} | " + " | ".join(f"{t[step]:.1f}" for t in tables) + " |")
        walls = ", ".join(f"{r['side']} {r['seconds']:.0f} s" for r in sides)
        lines += ["", f"wall time with compilation: {walls}", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one side, or merge the sides' JSON files into a table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--side", choices=("ours", "jaxmarl"))
    parser.add_argument("--task", default="HalfCheetah_6x1", choices=sorted(MABRAX_IDS))
    parser.add_argument("--timesteps", type=int, default=576_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--physics", choices=("mjx", "c"), default="mjx", help="our env's physics backend")
    parser.add_argument("--jaxmarl-ippo", default="/tmp/JaxMARL/baselines/IPPO/ippo_ff_mabrax.py")
    parser.add_argument("--json", default=None, help="write the side's curve here")
    parser.add_argument("--merge", nargs="+", default=None, help="JSON files of runs to tabulate")
    args = parser.parse_args(argv)
    if args.merge:
        print(merge(args.merge))
        return 0
    if args.side is None:
        parser.error("give --side ours|jaxmarl, or --merge FILES")
    if args.side == "ours":
        result = run_ours(args.task, args.timesteps, args.seed, args.physics)
    else:
        result = run_jaxmarl(args.task, args.timesteps, args.seed, args.jaxmarl_ippo)
    text = json.dumps(result)
    if args.json:
        Path(args.json).write_text(text)
    final, seconds = result["returns"][-1], result["seconds"]
    print(f"{result['side']} {args.task}: final return {final:.2f}, {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
