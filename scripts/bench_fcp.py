"""FCP's training speed beside IPPO self-play's, same process, same batch: what the partner costs.

    python scripts/bench_fcp.py [--env Overcooked_counter_circuit] [--num-envs 16 64] [--population-seeds 4]
                                [--assignments balanced per_env]

For each batch size, both baselines run whole updates (rollout of ``--num-steps`` steps of every env, GAE,
``update_epochs`` x ``num_minibatches`` PPO steps) from the env's IPPO preset; FCP plays against a real
population folder (``jaxmarl-suite population ippo`` with ``--population-seeds`` seeds and the default
snapshots, so 3x that many members), trained for two updates here: its skill does not change the cost.
FCP runs once per ``--assignments`` value (``fcp.Config.partner_assignment``: balanced deals the envs
evenly over the members, each acting on its own envs; per_env gathers a member's parameters per env).
All are compiled first, then timed in turns (``bench.timing.time_interleaved``), the best repeat of each
kept. Prints env steps/s (env steps = every agent acting once) and each FCP's time per update over
IPPO's; the target is at most 1.3. Tables go to ``docs/benchmarks.md`` ("Zero-shot coordination").
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_suite.baselines import fcp, ippo
from jaxmarl_suite.bench.report import machine_info
from jaxmarl_suite.bench.timing import PreparedRollout, time_interleaved
from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.training.runner.config import build, load_preset


def prepared(module: Any, config: Any, hparams: Any, updates: int, min_repeat_s: float) -> PreparedRollout:
    """``updates`` whole updates of ``module`` per call, compiled and warmed up."""
    trainer = module.make_trainer(config, module.make_env(config))

    def init(key: jax.Array) -> Any:
        return trainer.init(key, hparams)

    def rollout(runner: Any) -> tuple[Any, jax.Array]:
        runner, metrics = jax.lax.scan(lambda r, _: trainer.update(r, hparams), runner, None, updates)
        return runner, jnp.sum(metrics["total_loss"])

    return PreparedRollout(init, rollout, min_repeat_s)


def main(argv: list[str] | None = None) -> int:
    """Parse flags, build the population, time both baselines at each batch and print the table."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Overcooked_counter_circuit")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--num-steps", type=int, default=128)
    parser.add_argument("--population-seeds", type=int, default=4)
    parser.add_argument("--updates", type=int, default=2, help="updates per timed call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--min-repeat-s", type=float, default=2.0)
    parser.add_argument("--assignments", nargs="+", choices=fcp.PARTNER_ASSIGNMENTS,
                        default=list(fcp.PARTNER_ASSIGNMENTS), help="FCP's partner_assignment values to time")
    args = parser.parse_args(argv)
    preset = load_preset(f"ippo_{args.env}")
    base = build(ippo.Config, dict(preset["config"]))
    hparams = build(ippo.HParams, preset["hparams"])
    info = machine_info()
    print("\n".join(f"- {k}: {v}" for k, v in info.items()))
    with tempfile.TemporaryDirectory() as folder:
        population = Path(folder) / "population"
        batch = base.num_envs * base.num_steps
        code = cli_main(["population", "ippo", "--env", args.env, "--seeds", str(args.population_seeds),
                         "--total-timesteps", str(2 * batch), "--artifacts", "none", "--no-progress",
                         "--run-dir", str(population)])
        if code != 0:
            return code
        members = 3 * args.population_seeds
        print(f"\nIPPO self-play vs FCP on {args.env}, {args.num_steps} steps per rollout, FCP against "
              f"{members} members ({args.population_seeds} seeds x start, middle, end)\n")
        header = "".join(f" FCP {a} env steps/s | FCP {a} time per update / IPPO's |"
                         for a in args.assignments)
        print(f"| envs | IPPO env steps/s |{header}")
        print("|---:|---:|" + "---:|---:|" * len(args.assignments))
        for num_envs in args.num_envs:
            minibatches = min(base.num_minibatches, num_envs * args.num_steps)
            common = {"num_envs": num_envs, "num_steps": args.num_steps, "num_minibatches": minibatches,
                      "total_timesteps": num_envs * args.num_steps * 100}
            ippo_config = dataclasses.replace(base, **common)
            shared = {f.name: getattr(ippo_config, f.name) for f in dataclasses.fields(ippo.Config)}
            fcp_hparams = fcp.HParams(**dataclasses.asdict(hparams))
            sides = [prepared(ippo, ippo_config, hparams, args.updates, args.min_repeat_s)]
            for assignment in args.assignments:
                fcp_config = fcp.Config(**shared, partners=str(population), partner_assignment=assignment)
                sides.append(prepared(fcp, fcp_config, fcp_hparams, args.updates, args.min_repeat_s))
            time_interleaved(sides, args.repeats)
            steps = num_envs * args.num_steps * args.updates
            cells = [f"{steps / sides[0].best_s:,.0f}"]
            for side in sides[1:]:
                cells += [f"{steps / side.best_s:,.0f}", f"{side.best_s / sides[0].best_s:.2f}"]
            print(f"| {num_envs} | {' | '.join(cells)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
