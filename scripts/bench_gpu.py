"""Issue 18's whole GPU measurement in one call: the env table, the AutoReset modes and the training
comparison, written as one markdown report.

    python scripts/bench_gpu.py --jaxmarl-ippo PATH/TO/JaxMARL/baselines/IPPO/ippo_ff_mpe.py \\
        --jaxmarl-mappo PATH/TO/JaxMARL/baselines/MAPPO/mappo_rnn_smax.py --out report.md
    python scripts/bench_gpu.py --quick --out /tmp/smoke.md          # a minute-long smoke run, any backend
    python scripts/bench_gpu.py --sections envs --out envs.md        # one part (a GPU call lasts <= 10 min)

Sections, each with JaxMARL 0.2.0 in the same process so every ratio comes from one run:

- ``envs``: env steps/s and kernels per step for spread, tag, world_comm, SMAX 3m and 2s3z at batches
  4,096 to 1,048,576 (``jaxmarl_suite.bench.run_benchmark``; SMAX against JaxMARL's ``HeuristicEnemySMAX``).
- ``resets``: our ``AutoReset`` under ``cond`` and ``select`` for each env at one batch, to pick the mode
  the accelerator prefers (``auto`` is what runs by default).
- ``accelerated``: every accelerator variant of ``jaxmarl_suite.accelerated`` (the forks on the platform)
  timed against the plain code it replaces, both compiled for this device: MPE and SMAX env steps, GAE,
  gradient clipping, IPPO's actor-critic and MAPPO's GRU pair (no peer: a choice between ours).
- ``train``: IPPO with JaxMARL's ``ippo_ff_mpe`` hyperparameters at 1,024 and 4,096 envs against JaxMARL's
  own script, compile time beside, our MAPPO next to it; 256 vmapped seeds; the kernels one update
  launches (``scripts/bench_train.py``'s sections).
- ``mamujoco`` (only when named; the ``mujoco`` extra): multi-agent MuJoCo on MJX, HalfCheetah 6x1 and Ant
  4x2, env steps/s at batches 4,096 and 16,384 with compile time (``scripts/bench_mamujoco.py``'s rollout;
  the C-engine reference has no GPU, so no peer column).
- ``race``: MAPPO on SMAX 3m, our ``mappo_SMAX_3m`` preset (feed-forward, and the same on its GRU path)
  against JaxMARL's ``baselines/MAPPO/mappo_rnn_smax.py`` with its config (``--jaxmarl-mappo``): seconds to
  a 0.9 win rate (5-update mean) with compile included, and the final win rate (``bench_train.smax_race``).

On the GPU machine, carry ``.gpu`` (``bash ../shared/gpu/prepare.sh``, with JaxMARL's ``baselines/IPPO``
and ``baselines/MAPPO`` copied into ``.gpu/``, each with its ``config/``) and run ``bash .gpu/setup.sh &&
. .gpu/env.sh && python3 scripts/bench_gpu.py ... --out $OUT/gpu.md``. Without ``--jaxmarl-ippo`` the
training section runs our side only, and without ``--jaxmarl-mappo`` so does the race. A GPU call lasts
at most 10 minutes: run the sections in separate calls (``--sections race`` alone takes JaxMARL's 1e7
steps, about 4 minutes on an H200 by the issue's figures, plus ours twice; ``--race-sides jaxmarl`` and
``--race-sides ff gru`` split it over two calls).
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxmarl_suite.bench import format_table, machine_info, run_benchmark

SECTIONS = ("envs", "resets", "accelerated", "train", "race", "mamujoco")
DEFAULT_SECTIONS = ("envs", "resets", "accelerated", "train", "race")
"""What runs without ``--sections``; ``mamujoco`` (the ``mujoco`` extra) runs when named."""
MAMUJOCO_TASKS = ("HalfCheetah_6x1", "Ant_4x2")
ENVS = ("MPE_simple_spread_v3", "MPE_simple_tag_v3", "MPE_simple_world_comm_v3", "SMAX_3m", "SMAX_2s3z")
FULL = {"batches": (4096, 65536, 1048576), "steps": 32, "repeats": 3, "reset_batch": 65536,
        "train_envs": (1024, 4096), "train_timesteps": 50_000_000, "seeds": (256,),
        "seed_timesteps": 2_000_000, "race": None, "race_max_s": 420.0,
        "mamujoco_batches": (4096, 16384), "mamujoco_steps": 20, "accelerated_batch": 4096}
QUICK = {"batches": (64,), "steps": 4, "repeats": 1, "reset_batch": 64,
         "train_envs": (8,), "train_timesteps": 8 * 128 * 2, "seeds": (2,), "seed_timesteps": 16 * 128,
         "race": {"num_envs": 4, "num_steps": 8, "total_timesteps": 64}, "race_max_s": 120.0,
        "mamujoco_batches": (8,), "mamujoco_steps": 2, "accelerated_batch": 32}
"""Sizes of a full GPU run and of the smoke run (``--quick``), which only checks that everything runs. The
full race runs each side's own config (ours 1.5e7 env steps, JaxMARL's 1e7), each side stopped after
``race_max_s``."""
Log = Callable[[str], None]


def load_bench_train() -> ModuleType:
    """``scripts/bench_train.py`` as a module (scripts are not a package)."""
    path = Path(__file__).resolve().parent / "bench_train.py"
    spec = importlib.util.spec_from_file_location("bench_train", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_train"] = module
    spec.loader.exec_module(module)
    return module


def env_section(sizes: dict[str, Any], envs: Sequence[str], log: Log) -> str:
    """The env table: every env at every batch, kernels per step, JaxMARL alongside."""
    rows = run_benchmark(envs, sizes["batches"], sizes["steps"], sizes["repeats"], include_vmap=False,
                         progress=log)
    return "\n".join(["## Env throughput", "", format_table(rows, machine={})])


def reset_section(sizes: dict[str, Any], envs: Sequence[str], log: Log) -> str:
    """Our env under each ``AutoReset`` mode at one batch (no JaxMARL: this is a choice between ours)."""
    lines = ["## AutoReset modes", "",
             f"Batch {sizes['reset_batch']}; `auto` picks `cond` for envs whose episodes end together (MPE) "
             "and `select` for the rest (SMAX).", "",
             "| env | cond steps/s | select steps/s | select/cond | kernels/step cond "
             "| kernels/step select |",
             "|---|---:|---:|---:|---:|---:|"]
    from jaxmarl_suite.bench import bench_ours

    for env_id in envs:
        timing = {mode: bench_ours(env_id, sizes["reset_batch"], sizes["steps"], sizes["repeats"],
                                   reset_mode=mode) for mode in ("cond", "select")}
        cond, select = timing["cond"], timing["select"]
        log(f"[resets] {env_id}: cond {cond.steps_per_s:,.0f}/s, select {select.steps_per_s:,.0f}/s")
        lines.append(f"| {env_id} | {cond.steps_per_s:,.0f} | {select.steps_per_s:,.0f} "
                     f"| {select.steps_per_s / cond.steps_per_s:.2f}x | {cond.kernels.per_iteration} "
                     f"| {select.kernels.per_iteration} |")
    return "\n".join(lines)


def train_section(sizes: dict[str, Any], jaxmarl_ippo: str | None, log: Log) -> str:
    """IPPO (and MAPPO) against JaxMARL's IPPO-FF at GPU-sized batches, vmapped seeds, kernels."""
    bench = load_bench_train()
    jaxmarl = bench.load_jaxmarl_ippo(jaxmarl_ippo) if jaxmarl_ippo else None
    identical = bench.identical_config(jaxmarl, (sizes["train_timesteps"],), repeats=1, log=log,
                                       num_envs=sizes["train_envs"], with_mappo=True)
    seeds = bench.seed_scaling(jaxmarl, sizes["seeds"], sizes["seed_timesteps"], log=log)
    kernels = bench.kernel_comparison(jaxmarl, sizes["train_envs"], log=log)
    return "\n".join([
        "## Training: JaxMARL's ippo_ff_mpe hyperparameters", "",
        "JaxMARL: " + (f"`{jaxmarl_ippo}`" if jaxmarl else "not compared (no --jaxmarl-ippo)"), "",
        bench.format_identical(identical), "", "### Vmapped seeds", "", bench.format_seeds(seeds), "",
        "### Kernels an update launches", "", bench.format_kernels(kernels),
    ])


def race_section(sizes: dict[str, Any], jaxmarl_mappo: str | None, log: Log,
                 sides: Sequence[str] = ("ff", "gru", "jaxmarl")) -> str:
    """MAPPO on SMAX 3m: our preset (feed-forward and recurrent) against JaxMARL's MAPPO-RNN, time to a 0.9
    win rate with compile included, and the final win rate; ``sides`` picks which of them run."""
    bench = load_bench_train()
    jaxmarl = bench.load_jaxmarl_ippo(jaxmarl_mappo) if jaxmarl_mappo else None
    rows = bench.smax_race(jaxmarl, sizes=sizes["race"], max_seconds=sizes["race_max_s"], log=log,
                           sides=sides)
    return "\n".join([
        "## MAPPO race on SMAX 3m", "",
        "JaxMARL: " + (f"`{jaxmarl_mappo}` with `MAP_NAME: 3m`" if jaxmarl else
                       "not compared (no --jaxmarl-mappo)"), "",
        bench.format_race(rows),
    ])


def mamujoco_section(sizes: dict[str, Any], log: Log) -> str:
    """Multi-agent MuJoCo (MJX) env steps/s from batch 4,096 up, with compile time (the mujoco extra)."""
    path = Path(__file__).resolve().parent / "bench_mamujoco.py"
    spec = importlib.util.spec_from_file_location("bench_mamujoco", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    batches = sizes["mamujoco_batches"]
    header = "| task | compile (s) | " + " | ".join(f"env steps/s B={b:,}" for b in batches) + " |"
    lines = ["## Multi-agent MuJoCo (MJX)", "", header, "|---|---|" + "---|" * len(batches)]
    for task in MAMUJOCO_TASKS:
        results = [bench.ours(task, batch, sizes["mamujoco_steps"]) for batch in batches]
        log(f"mamujoco {task}: {results}")
        lines.append(f"| {task} | {max(c for c, _ in results):.1f} | "
                     + " | ".join(f"{rate:,.0f}" for _, rate in results) + " |")
    return "\n".join(lines)


def _best_seconds(function: Callable[..., Any], *args: Any, repeats: int) -> float:
    """The fastest of ``repeats`` calls of ``function`` (compiled by a first call), in seconds."""
    import jax

    jax.block_until_ready(function(*args))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(function(*args))
        best = min(best, time.perf_counter() - start)
    return best


def accelerated_section(sizes: dict[str, Any], log: Log) -> str:
    """Each accelerator variant of ``jaxmarl_suite.accelerated`` timed against the plain code it replaces,
    both compiled for this device (``accelerated.forced``), so a GPU run can keep or drop each on evidence."""
    import jax
    import jax.numpy as jnp

    from jaxmarl_suite import accelerated
    from jaxmarl_suite.baselines import ippo, mappo
    from jaxmarl_suite.bench import bench_ours
    from jaxmarl_suite.training.kit.gae import gae

    batch, steps, repeats = sizes["accelerated_batch"], sizes["steps"], sizes["repeats"]
    key = jax.random.PRNGKey(0)

    def env_step(env_id: str) -> Callable[[], float]:
        return lambda: batch / bench_ours(env_id, batch, steps, repeats).steps_per_s

    def gae_call() -> float:
        shape = (128, batch, 3)
        reward, value, next_value = (jax.random.normal(k, shape) for k in jax.random.split(key, 3))
        flags = jax.random.uniform(key, shape) < 0.02
        run = jax.jit(lambda r, v, n, d: gae(r, v, n, d, d, 0.99, 0.95))
        return _best_seconds(run, reward, value, next_value, flags, repeats=repeats)

    def clip_call() -> float:
        widths = [(18, 64), (64,), (64, 64), (64,), (64, 5), (5,)] * 2 + [(5,)]
        grads = [jax.random.normal(k, w) for k, w in zip(jax.random.split(key, len(widths)), widths,
                                                               strict=True)]
        clip = accelerated.clip_by_global_norm(0.5)
        run = jax.jit(jax.vmap(lambda g: clip.update(g, clip.init(g))[0]))
        stacked = jax.tree.map(lambda x: jnp.broadcast_to(x, (256, *x.shape)), grads)
        return _best_seconds(run, stacked, repeats=repeats)

    def towers_call() -> float:
        net = ippo.ActorCritic(5, (64, 64), "tanh", False, 64)
        obs, hidden = jnp.ones((1, batch, 3, 18)), jnp.zeros((batch, 3, 1))
        starts = jnp.zeros((1, batch, 3), bool)
        params = net.init(key, hidden, obs, starts)
        loss = lambda p: sum(jnp.sum(x) for x in net.apply(p, hidden, obs, starts)[1:])  # noqa: E731
        return _best_seconds(jax.jit(jax.grad(loss)), params, repeats=repeats)

    def gru_pair_call() -> float:
        actor = mappo.Actor((64, 64), "relu", True, 64, head_width=5)
        critic = mappo.Critic((64, 64), "relu", True, 64)
        both = mappo.actor_and_critic(actor, critic)
        envs, length = max(batch // 32, 1), 128
        hidden, obs = jnp.zeros((envs, 3, 64)), jnp.ones((length, envs, 3, 30))
        starts = jnp.zeros((length, envs, 3), bool)
        params = (actor.init(key, hidden, obs, starts), critic.init(key, hidden, obs, starts))
        loss = lambda p: sum(jnp.sum(x) for x in both(p, hidden, hidden, obs, obs, starts)[2:])  # noqa: E731
        return _best_seconds(jax.jit(jax.grad(loss)), params, repeats=repeats)

    cases = [
        (f"MPE spread env step, B={batch:,} (physics barrier, AutoReset)", env_step("MPE_simple_spread_v3")),
        (f"SMAX 3m env step, B={batch:,} (unrolled sub-steps, sums at targets)", env_step("SMAX_3m")),
        (f"GAE over [128, {batch:,}, 3] (loops unrolled)", gae_call),
        ("gradient clip, 13 leaves x 256 runs (one norm reduction)", clip_call),
        (f"IPPO actor-critic gradient, B={batch:,} (towers side by side)", towers_call),
        (f"MAPPO GRU pair gradient, 128 x {max(batch // 32, 1):,} envs (one loop for both)", gru_pair_call),
    ]
    lines = ["## Accelerator variants against the plain code", "",
             "Each row compiles the same program twice on this device, once with every fork of "
             "`jaxmarl_suite.accelerated` forced to its plain (CPU) branch and once to its accelerator "
             "branch.",
             "", "| program | plain (ms) | accelerator (ms) | plain / accelerator |", "|---|---:|---:|---:|"]
    for name, measure in cases:
        times = {}
        for branch in ("cpu", "accelerator"):
            with accelerated.forced(branch):
                times[branch] = measure()
        log(f"[accelerated] {name}: plain {times['cpu'] * 1e3:.3f} ms, "
            f"accelerator {times['accelerator'] * 1e3:.3f} ms")
        lines.append(f"| {name} | {times['cpu'] * 1e3:.3f} | {times['accelerator'] * 1e3:.3f} "
                     f"| {times['cpu'] / times['accelerator']:.2f}x |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Command-line arguments."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(DEFAULT_SECTIONS),
                        help="what to run (mamujoco only when named)")
    parser.add_argument("--envs", nargs="+", default=list(ENVS),
                        help="env ids for the env and reset sections")
    parser.add_argument("--jaxmarl-ippo", default=None, metavar="PATH",
                        help="JaxMARL's baselines/IPPO/ippo_ff_mpe.py (without it the training is ours only)")
    parser.add_argument("--jaxmarl-mappo", default=None, metavar="PATH",
                        help="JaxMARL's baselines/MAPPO/mappo_rnn_smax.py for the race (else ours only)")
    parser.add_argument("--race-sides", nargs="+", choices=("ff", "gru", "jaxmarl"),
                        default=["ff", "gru", "jaxmarl"],
                        help="which sides the race runs (each may take minutes: split them over calls)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run on any backend")
    parser.add_argument("--out", default=None, metavar="PATH", help="write the markdown report here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen sections, print the report and write it to ``--out``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if "race" in args.sections and set(args.race_sides) == {"jaxmarl"} and not args.jaxmarl_mappo:
        parser.error("--race-sides jaxmarl needs --jaxmarl-mappo PATH (JaxMARL's mappo_rnn_smax.py); "
                     "without it the race would run no side")
    sizes = QUICK if args.quick else FULL

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    command = shlex.join(["python", "scripts/bench_gpu.py", *(sys.argv[1:] if argv is None else argv)])
    parts = ["# GPU benchmark (issue 18)", "", f"Command: `{command}`", "",
             *(f"- **{name}**: {value}" for name, value in machine_info().items())]
    if args.quick:
        parts += ["- **sizes**: `--quick` smoke run; the figures mean nothing"]
    start = time.perf_counter()
    try:
        if "envs" in args.sections:
            parts += ["", env_section(sizes, args.envs, log)]
        if "resets" in args.sections:
            parts += ["", reset_section(sizes, args.envs, log)]
        if "accelerated" in args.sections:
            parts += ["", accelerated_section(sizes, log)]
        if "train" in args.sections:
            parts += ["", train_section(sizes, args.jaxmarl_ippo, log)]
        if "race" in args.sections:
            parts += ["", race_section(sizes, args.jaxmarl_mappo, log, args.race_sides)]
        if "mamujoco" in args.sections:
            parts += ["", mamujoco_section(sizes, log)]
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    parts += ["", f"Wall time of this report: {time.perf_counter() - start:.0f} s"]
    report = "\n".join(parts) + "\n"
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report)
        log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
