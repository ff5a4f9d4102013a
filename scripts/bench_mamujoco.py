"""Multi-agent MuJoCo throughput: our batched env, on MJX and on the C engine (``physics="c"``), against
Gymnasium-Robotics' ``mamujoco_v1``, in one process, per task, with the ratio; and IPPO's training steps/s
beside the env's.

    .venv/bin/python scripts/bench_mamujoco.py                      # every task but the many-segment ones
    .venv/bin/python scripts/bench_mamujoco.py --tasks HalfCheetah_6x1 Ant_4x2 --batches 256 1024
    .venv/bin/python scripts/bench_mamujoco.py --train HalfCheetah_6x1 --train-batch 64
    .venv/bin/python scripts/bench_mamujoco.py --physics c          # the C-engine backend only
    .venv/bin/python scripts/bench_mamujoco.py --quick              # a smoke run (the test's)

- **ours**: ``make("MaMuJoCo_<task>", num_envs=B, physics=P)`` under ``AutoReset``, random actions, a jitted
  ``lax.scan`` of ``--steps`` steps that reads every reward and observation; env steps/s = B x steps /
  seconds, compile excluded (reported apart).
- **mamujoco_v1**: one reference env in this process stepping random actions with resets, as its users
  run it (one env per process); env steps/s over ``--ref-steps`` steps after 100 untimed ones.
- **IPPO** (``--train``): the task's ``ippo_MaMuJoCo_<task>`` preset at ``--train-batch`` envs, env steps/s
  of the whole training loop (rollout and update) with compile excluded, beside the env alone at that batch.

- **JaxMARL's MABrax** (``--mabrax-python PATH``): MABrax needs ``brax``, which the suite does not install (a
  fresh ``pip install brax`` resolves its unpinned ``mujoco`` to 4.x), so it runs in a child process of the
  Python given (an environment with ``jaxmarl`` and ``brax``), on the same machine in the same run: its
  ``make(<MABrax id>)`` vmapped over B envs (its ``step`` resets ended episodes itself), random actions in
  its boxes, a jitted ``lax.scan`` of ``--steps`` steps reading every observation and reward. Only the five
  tasks MABrax has (``ant_4x2``, ``halfcheetah_6x1``, ``hopper_3x1``, ``humanoid_9|8``, ``walker2d_2x3``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

import jaxmarl_suite
from jaxmarl_suite.bench import machine_info
from jaxmarl_suite.wrappers import AutoReset

MABRAX = {"HalfCheetah_6x1": "halfcheetah_6x1", "Ant_4x2": "ant_4x2", "Hopper_3x1": "hopper_3x1",
          "Walker2d_2x3": "walker2d_2x3", "Humanoid_9|8": "humanoid_9|8"}
"""Our task names and JaxMARL's MABrax ids of the same partitions."""

MABRAX_SNIPPET = """
import json, sys, time
import jax, jax.numpy as jnp
import jaxmarl
task_id, batch, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
env = jaxmarl.make(task_id)

def rollout(key):
    obs, state = jax.vmap(env.reset)(jax.random.split(key, batch))
    def body(state, step_key):
        keys = jax.random.split(step_key, len(env.agents) + 1)
        actions = {a: jax.random.uniform(k, (batch, *env.action_space(a).shape), minval=-1.0, maxval=1.0)
                   for a, k in zip(env.agents, keys[1:])}
        obs, state, reward, done, info = jax.vmap(env.step)(jax.random.split(keys[0], batch), state, actions)
        return state, sum(r.sum() for r in reward.values()) + sum(o.sum() for o in obs.values())
    _, out = jax.lax.scan(body, state, jax.random.split(key, steps))
    return out.sum()

run = jax.jit(rollout)
start = time.perf_counter()
run(jax.random.key(0)).block_until_ready()
compile_s = time.perf_counter() - start
start = time.perf_counter()
run(jax.random.key(1)).block_until_ready()
print(json.dumps({"compile": compile_s, "rate": batch * steps / (time.perf_counter() - start)}))
"""


def mabrax(python: str, task: str, batch: int, steps: int) -> tuple[float, float]:
    """(compile seconds, env steps/s) of MABrax's env for ``task`` in a child process of ``python``."""
    import json
    import subprocess

    done = subprocess.run([python, "-c", MABRAX_SNIPPET, MABRAX[task], str(batch), str(steps)],
                          capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    if done.returncode != 0:
        raise RuntimeError(f"MABrax {MABRAX[task]} failed under {python}:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["compile"]), float(result["rate"])


TARGET = 3.0
"""The issue's target: at least 3x the reference's env steps/s at batch 1,024."""


def machine() -> str:
    """CPU model, cores, load, jax and mujoco versions (``bench.machine_info``) on one line."""
    info = machine_info(("mujoco",))
    load = info["load average (1, 5, 15 min) at start"]
    return (f"{info['cpu']}, {info['cores']}, load {load}, jax {info['jax']}, "
            f"mujoco {info['mujoco']}")


def ours(task: str, batch: int, steps: int, physics: str = "mjx") -> tuple[float, float]:
    """(compile seconds, env steps/s) of our batched env under AutoReset with random actions."""
    vec = jaxmarl_suite.make(f"MaMuJoCo_{task}", num_envs=batch, physics=physics)
    env = AutoReset(vec)

    def rollout(key: jax.Array) -> jax.Array:
        state, _ = env.reset(key)

        def body(state: Any, step_key: jax.Array) -> tuple[Any, jax.Array]:
            action_key, env_key = jax.random.split(step_key)
            state, timestep = env.step(env_key, state, vec.sample_actions(action_key))
            # the observations are consumed as a learner would: else XLA drops the work only they need
            seen = sum(o.sum() for o in timestep.obs.values())
            return state, sum(r.sum() for r in timestep.reward.values()) + seen

        _, rewards = jax.lax.scan(body, state, jax.random.split(key, steps))
        return rewards.sum()

    run = jax.jit(rollout)
    start = time.perf_counter()
    run(jax.random.key(0)).block_until_ready()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    run(jax.random.key(1)).block_until_ready()
    return compile_s, batch * steps / (time.perf_counter() - start)


def reference(task: str, steps: int) -> float:
    """Env steps/s of one ``mamujoco_v1`` env with random actions and resets."""
    from gymnasium_robotics import mamujoco_v1

    scenario, conf = jaxmarl_suite.env_spec(f"MaMuJoCo_{task}").kwargs.values()
    env = mamujoco_v1.parallel_env(scenario, conf)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    spaces = {agent: env.action_space(agent) for agent in env.possible_agents}
    for _ in range(min(100, steps)):  # warm up (the first task's first steps also pay for lazy imports)
        actions = {a: rng.uniform(s.low, s.high).astype(np.float32) for a, s in spaces.items()}
        _, _, terminated, truncated, _ = env.step(actions)
        if terminated["agent_0"] or truncated["agent_0"]:
            env.reset(seed=steps)
    start = time.perf_counter()
    for index in range(steps):
        actions = {a: rng.uniform(s.low, s.high).astype(np.float32) for a, s in spaces.items()}
        _, _, terminated, truncated, _ = env.step(actions)
        if terminated["agent_0"] or truncated["agent_0"]:
            env.reset(seed=index)
    return steps / (time.perf_counter() - start)


def train(task: str, batch: int, updates: int, physics: str = "mjx") -> float:
    """Env steps/s of IPPO's whole training loop on the task's preset at ``batch`` envs, compile excluded."""
    from jaxmarl_suite.baselines import ippo
    from jaxmarl_suite.training.kit import make_train
    from jaxmarl_suite.training.runner.config import build, load_preset

    data = load_preset(f"ippo_MaMuJoCo_{task}")
    per_update = batch * data["config"]["num_steps"]
    timings = []
    for count in (1, 1 + updates):  # the difference of two runs is the updates' time without compiling
        sizes = {"num_envs": batch, "total_timesteps": per_update * count, "env_kwargs": {"physics": physics}}
        config = build(ippo.Config, {**data["config"], **sizes})
        hparams = build(ippo.HParams, data["hparams"])
        run = jax.jit(make_train(ippo, config)).lower(jax.random.PRNGKey(0), hparams).compile()
        start = time.perf_counter()
        jax.block_until_ready(run(jax.random.PRNGKey(0), hparams))
        timings.append(time.perf_counter() - start)
    return per_update * updates / max(timings[1] - timings[0], 1e-9)


def main(argv: Sequence[str] | None = None) -> str:
    """Run the benchmark and print (and return) its markdown."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_tasks = [i.removeprefix("MaMuJoCo_") for i in jaxmarl_suite.registered_envs("mamujoco")
                     if "ManySegment" not in i]
    parser.add_argument("--tasks", nargs="+", default=default_tasks)
    parser.add_argument("--many-segment", action="store_true", help="add the many-segment robots")
    parser.add_argument("--batches", nargs="+", type=int, default=[256, 1024])
    parser.add_argument("--steps", type=int, default=20, help="steps per timed rollout")
    parser.add_argument("--ref-steps", type=int, default=5000, help="reference steps timed")
    parser.add_argument("--train", nargs="*", default=[], help="tasks to time IPPO's training loop on")
    parser.add_argument("--train-batch", type=int, default=64)
    parser.add_argument("--train-updates", type=int, default=2)
    parser.add_argument("--physics", nargs="+", choices=["mjx", "c"], default=["mjx", "c"],
                        help="our env's physics backends to time")
    parser.add_argument("--mabrax-python", default=None, metavar="PATH",
                        help="a Python with jaxmarl and brax: time JaxMARL's MABrax beside ours")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches, args.steps, args.ref_steps, args.train_batch, args.train_updates = [4], 2, 2, 2, 1
    tasks = list(args.tasks)
    if args.many_segment:
        tasks += [i.removeprefix("MaMuJoCo_") for i in jaxmarl_suite.registered_envs("mamujoco")
                  if "ManySegment" in i]
    columns = ["task", "physics", "compile (s)"] + [f"ours B={b}" for b in args.batches]
    columns += ["mamujoco_v1 (1 env)", f"ratio at B={args.batches[-1]}", f"target >= {TARGET:g}x"]
    lines = [f"machine: {machine()}", "", "env steps/s", "", "| " + " | ".join(columns) + " |",
             "|" + "---|" * len(columns)]
    for task in tasks:
        ref = reference(task, args.ref_steps)
        for physics in args.physics:
            rates, compiles = [], []
            for batch in args.batches:
                compile_s, rate = ours(task, batch, args.steps, physics)
                rates.append(rate)
                compiles.append(compile_s)
            ratio = rates[-1] / ref
            row = [task, physics, f"{max(compiles):.1f}", *[f"{r:,.0f}" for r in rates], f"{ref:,.0f}",
                   f"{ratio:.1f}x", "met" if ratio >= TARGET else "short"]
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    mabrax_tasks = [task for task in tasks if task in MABRAX] if args.mabrax_python else []
    if mabrax_tasks:
        lines += ["", "JaxMARL's MABrax (Brax), env steps/s, in a child process of "
                  f"{args.mabrax_python}", "",
                  "| task | MABrax id | compile (s) | " + " | ".join(f"B={b}" for b in args.batches) + " |",
                  "|---|---|---|" + "---|" * len(args.batches)]
        for task in mabrax_tasks:
            results = [mabrax(args.mabrax_python, task, batch, args.steps) for batch in args.batches]
            lines.append(f"| {task} | {MABRAX[task]} | {max(c for c, _ in results):.1f} | "
                         + " | ".join(f"{rate:,.0f}" for _, rate in results) + " |")
            print(lines[-1], flush=True)
    if args.train:
        lines += ["", f"IPPO training loop at {args.train_batch} envs (env steps/s, compile excluded)", "",
                  "| task | physics | env alone | IPPO (rollout + update) | IPPO's rate over the env's |",
                  "|---|---|---|---|---|"]
        for task in args.train:
            for physics in args.physics:
                _, env_rate = ours(task, args.train_batch, args.steps, physics)
                train_rate = train(task, args.train_batch, args.train_updates, physics)
                lines.append(f"| {task} | {physics} | {env_rate:,.0f} | {train_rate:,.0f} | "
                             f"{train_rate / env_rate:.0%} |")
                print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
