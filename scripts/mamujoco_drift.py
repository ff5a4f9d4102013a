"""How far MJX's float32 physics drifts from MuJoCo's C engine (float64) when both run free: our env is set to
``mamujoco_v1``'s state after its reset, then both step the same random actions with no re-injection.

    .venv/bin/python scripts/mamujoco_drift.py [--tasks HalfCheetah_6x1 Hopper_3x1 ...] [--steps 300]
    .venv/bin/python scripts/mamujoco_drift.py --x64     # MJX in float64: what is left is the algorithms
    .venv/bin/python scripts/mamujoco_drift.py --physics c [--x64]   # the C-engine backend

Prints, per task, the first step at which the largest ``qpos`` difference passes 1e-3, 1e-2 and 1e-1, and
the difference after 10, 100 and ``--steps`` steps (or at the episode's end, if either side ends first).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def drift(
    task: str, steps: int, seed: int, physics: str = "mjx"
) -> tuple[dict[float, int | None], dict[int, float]]:
    """(first step past each threshold, difference at each checkpoint) for one free-running episode."""
    import jax
    import numpy as np
    from gymnasium_robotics import mamujoco_v1

    import jaxmarl_suite
    from jaxmarl_suite.environments.mamujoco.parity import group_actions, state_from_mamujoco

    env = jaxmarl_suite.make(f"MaMuJoCo_{task}", physics=physics)
    ref = mamujoco_v1.parallel_env(env.scenario, env.agent_conf)
    ref.reset(seed=seed)
    state, params = state_from_mamujoco(ref, env)
    step = jax.jit(env.step)
    rng = np.random.default_rng(seed)
    first: dict[float, int | None] = {1e-3: None, 1e-2: None, 1e-1: None}
    at: dict[int, float] = {}
    for index in range(1, steps + 1):
        actions = {a: rng.uniform(-1, 1, ref.action_space(a).shape).astype(np.float32) for a in ref.agents}
        state, timestep = step(jax.random.key(index), state, group_actions(env, actions), params)
        _, _, terminated, truncated, _ = ref.step(actions)
        reference_qpos = ref.single_agent_env.unwrapped.data.qpos
        gap = float(np.max(np.abs(np.asarray(state.qpos, np.float64) - reference_qpos)))
        for threshold in first:
            if first[threshold] is None and gap > threshold:
                first[threshold] = index
        if index in (10, 100, steps):
            at[index] = gap
        ended = bool(next(iter(timestep.terminated.values())).any())
        if ended or terminated["agent_0"] or truncated["agent_0"]:
            at[index] = gap
            break
    return first, at


def main(argv: Sequence[str] | None = None) -> int:
    """Print the drift table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    tasks = ["HalfCheetah_6x1", "Hopper_3x1", "Walker2d_2x3", "Swimmer_2x1", "Reacher_2x1", "Ant_4x2",
             "Humanoid_9|8"]
    parser.add_argument("--tasks", nargs="+", default=tasks)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--x64", action="store_true",
                        help="run MJX in float64 (for --physics c: keep the env's state in float64)")
    parser.add_argument("--physics", choices=["mjx", "c"], default="mjx", help="our env's physics backend")
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", args.x64)
    precision = "float64" if args.x64 else "float32"
    ours = "MJX" if args.physics == "mjx" else "Our env on the C engine (physics='c')"
    print(f"{ours} in {precision} against MuJoCo's C engine (float64), free-running from the same reset\n")
    print("| task | seed | first step past 1e-3 / 1e-2 / 1e-1 | max qpos gap at step (10, 100, last) |")
    print("|---|---|---|---|")
    for task in args.tasks:
        for seed in range(args.seeds):
            first, at = drift(task, args.steps, seed, args.physics)
            passes = " / ".join("-" if step is None else str(step) for step in first.values())
            gaps = ", ".join(f"{step}: {gap:.1e}" for step, gap in sorted(at.items()))
            print(f"| {task} | {seed} | {passes} | {gaps} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
