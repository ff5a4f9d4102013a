"""Level-Based Foraging and the Multi-Robot Warehouse: our batch-native envs against Jumanji's JAX versions
(``jax.vmap``, same process, same batch) and against the original packages (``lbforaging`` 2.0.0,
``rware`` 2.0.0, one env), per task and batch, with the ratios and the issue's targets (at least 3x
Jumanji at batch 4,096, at least 1,000x the original package's one env).

    .venv/bin/python scripts/bench_lbf_rware.py                              # the four tasks at B=4096
    .venv/bin/python scripts/bench_lbf_rware.py --tasks rware-tiny-4ag-v2 --batches 1024 4096 16384
    .venv/bin/python scripts/bench_lbf_rware.py --no-reference --markdown /tmp/lbf_rware.md
    .venv/bin/python scripts/bench_lbf_rware.py --quick                      # a smoke run (the test's)

A task is one of our ids, which are also the original packages' gymnasium ids: ``Foraging-...-v3``
(lbforaging's) or ``rware-...-v2`` (rware's). The defaults are Foraging-8x8-2p-2f-coop-v3,
Foraging-15x15-4p-4f-coop-v3 (``-coop`` on every side, as Jumanji's LBF default is), rware-tiny-4ag-v2 and
rware-small-4ag-v2.

- **ours**: ``AutoReset(VecEnv(make(task), B))`` (``reset_batch``/``step_batch`` with the batch as the
  trailing axis inside, batch-first at the boundary, as ``make(task, num_envs=B)`` gives it), random actions,
  a jitted ``lax.scan`` of ``--steps`` steps that folds every reward and observation into the returned scalar
  (so XLA keeps all the work they need); env steps/s = B x steps / seconds, the best of ``--repeats``
  repeats, compile excluded and reported apart.
- **Jumanji**: ``jumanji.make("LevelBasedForaging-v0" | "RobotWarehouse-v0", generator=RandomGenerator(...),
  time_limit=...)`` configured like the task (below), ``jax.vmap`` of ``AutoResetWrapper(env).reset/step``
  (what ``VmapAutoResetWrapper`` is), random actions, the same scan, steps and batch, reading every reward
  and every observation field but ``action_mask`` (ours returns its mask apart, and neither side's is read).
  Ours and Jumanji's are compiled first and then take turns, one repeat each per round
  (``bench.time_interleaved``), so a slow spell of a shared machine falls on both.
- **original**: ``gymnasium.make(task)`` of lbforaging or rware, one env in this process, random actions
  (numpy, drawn up front) with a reset when an episode ends, as its users run it; env steps/s over
  ``--ref-steps`` steps after ``min(100, ref-steps)`` untimed ones.

Jumanji like for like: LBF ``RandomGenerator(grid_size=N, fov=N, num_agents=p, num_food=f,
max_agent_level=2, force_coop=...)`` with ``time_limit=50`` (ours and lbforaging: 50 steps, full view, levels
1-2); RWARE ``RandomGenerator(shelf_rows, shelf_columns=3, column_height=8, num_agents, sensor_range=1,
request_queue_size)`` as rware's id gives them (tiny: 1 shelf row, small: 2; queue = agents) with
``time_limit=500``. Jumanji's RWARE ends an episode on any collision, so its batch resets far more often
than ours or rware's (which only end at 500 steps); the table's last column counts episode ends per 1,000
env steps on each side so the difference is visible.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxmarl_suite
from jaxmarl_suite.bench import (
    OBS_WEIGHT,
    PreparedRollout,
    machine_info,
    sample_group_actions,
    time_interleaved,
)
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers import AutoReset
from jaxmarl_suite.wrappers.base import episode_done

Array = jax.Array
Carry = Any
Rollout = tuple[Callable[[Array], Carry], Callable[[Carry], tuple[Carry, Array]]]
"""``PreparedRollout``'s ``(init, rollout)``: ``init(key)`` makes the carry, ``rollout(carry)`` scans."""

DEFAULT_TASKS = ("Foraging-8x8-2p-2f-coop-v3", "Foraging-15x15-4p-4f-coop-v3", "rware-tiny-4ag-v2",
                 "rware-small-4ag-v2")
JUMANJI_TARGET = 3.0
"""The issue's target: at least 3x Jumanji's env steps/s at batch 4,096."""
ORIGINAL_TARGET = 1000.0
"""The issue's target: at least 1,000x the original package's one-env steps/s."""


@dataclass
class Row:
    """One (task, batch) measurement; None where a side was not run."""

    task: str
    batch: int
    ours: float
    ours_compile: float
    ours_ends: float
    jumanji: float | None = None
    jumanji_compile: float | None = None
    jumanji_ends: float | None = None
    original: float | None = None


def _leaf_sum(tree: Any) -> Array:
    leaves = [jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(tree)]
    return sum(leaves, jnp.float32(0.0))


def family(task: str) -> str:
    """``"lbf"`` or ``"rware"``: the family of one of our task ids (ValueError for anything else)."""
    name = jaxmarl_suite.env_spec(task).family
    if name not in ("lbf", "rware"):
        raise ValueError(f"{task!r} is neither a Level-Based Foraging nor a warehouse id")
    return name


def rware_import_error() -> str | None:
    """Why ``jaxmarl_suite.environments.rware`` does not import, or None when it does."""
    try:
        import jaxmarl_suite.environments.rware  # noqa: F401
    except Exception as error:  # a half-written module can fail in any way; the rows are skipped, not the run
        return f"{type(error).__name__}: {error}"
    return None


def ours_rollout(task: str, batch: int, steps: int) -> Rollout:
    """``(init, rollout)`` of our env: ``bench.ours_rollout``'s measurement, with the carry also counting
    env steps and episode ends (two scalar adds a step) for the table's resets column."""
    env = AutoReset(VecEnv(jaxmarl_suite.make(task), batch))

    def init(key: Array) -> Carry:
        state, _ = env.reset(key)
        return state, key, jnp.zeros(2, jnp.int32)

    def body(carry: Carry, _: None) -> tuple[Carry, Array]:
        state, key, counts = carry
        key, action_key, step_key = jax.random.split(key, 3)
        state, timestep = env.step(step_key, state, sample_group_actions(action_key, env, batch))
        ends = jnp.sum(episode_done(timestep), dtype=jnp.int32)
        value = _leaf_sum(timestep.reward) + OBS_WEIGHT * _leaf_sum(timestep.obs)
        return (state, key, counts + jnp.stack([jnp.int32(batch), ends])), value

    def rollout(carry: Carry) -> tuple[Carry, Array]:
        carry, values = jax.lax.scan(body, carry, None, length=steps)
        return carry, jnp.sum(values)

    return init, rollout


def jumanji_env(task: str) -> Any:
    """Jumanji's LevelBasedForaging or RobotWarehouse configured like our ``task`` (module docstring)."""
    import jumanji

    kwargs = jaxmarl_suite.env_spec(task).kwargs
    if family(task) == "lbf":
        from jumanji.environments.routing.lbf.generator import RandomGenerator as LBFGenerator

        rows, cols = kwargs["field_size"]
        if rows != cols or kwargs["max_player_level"] != 2 or kwargs["observation_type"] != "vector":
            raise ValueError(f"Jumanji's LBF has no counterpart of {task} (square grids, levels 1-2, "
                             "vector observations only)")
        generator = LBFGenerator(grid_size=rows, fov=min(kwargs["sight"], rows),
                                 num_agents=kwargs["num_agents"], num_food=kwargs["max_num_food"],
                                 max_agent_level=2, force_coop=kwargs["force_coop"])
        return jumanji.make("LevelBasedForaging-v0", generator=generator, time_limit=kwargs["max_steps"],
                            penalty=kwargs["penalty"])
    from jumanji.environments.routing.robot_warehouse.generator import RandomGenerator as RwareGenerator

    generator = RwareGenerator(shelf_rows=kwargs["shelf_rows"], shelf_columns=kwargs["shelf_columns"],
                               column_height=kwargs["column_height"], num_agents=kwargs["num_agents"],
                               sensor_range=kwargs["sensor_range"],
                               request_queue_size=kwargs["request_queue_size"])
    return jumanji.make("RobotWarehouse-v0", generator=generator, time_limit=kwargs["max_steps"])


def jumanji_rollout(task: str, batch: int, steps: int) -> Rollout:
    """``(init, rollout)`` of Jumanji's env for ``task``: ``jax.vmap`` of its auto-resetting reset/step under
    the same scan, random actions, every reward and observation field but the action mask read."""
    from jumanji.wrappers import AutoResetWrapper

    env = AutoResetWrapper(jumanji_env(task))
    num_values = jnp.asarray(env.action_spec.num_values)

    def seen(observation: Any) -> Array:
        fields = observation._asdict() if hasattr(observation, "_asdict") else {"obs": observation}
        return _leaf_sum({k: v for k, v in fields.items() if k != "action_mask"})

    def init(key: Array) -> Carry:
        state, _ = jax.vmap(env.reset)(jax.random.split(key, batch))
        return state, key, jnp.zeros(2, jnp.int32)

    def body(carry: Carry, _: None) -> tuple[Carry, Array]:
        state, key, counts = carry
        key, action_key = jax.random.split(key)  # Jumanji's step draws from the key in its state
        actions = jax.random.randint(action_key, (batch, *num_values.shape), 0, num_values, jnp.int32)
        state, timestep = jax.vmap(env.step)(state, actions)
        ends = jnp.sum(timestep.last(), dtype=jnp.int32)
        value = _leaf_sum(timestep.reward) + OBS_WEIGHT * seen(timestep.observation)
        return (state, key, counts + jnp.stack([jnp.int32(batch), ends])), value

    def rollout(carry: Carry) -> tuple[Carry, Array]:
        carry, values = jax.lax.scan(body, carry, None, length=steps)
        return carry, jnp.sum(values)

    return init, rollout


def _ends_per_1k(prepared: PreparedRollout) -> float:
    taken, ends = (int(x) for x in np.asarray(prepared.carry[-1]))
    return 1000.0 * ends / max(taken, 1)


def original_rate(task: str, steps: int, seed: int = 0) -> float:
    """Env steps/s of one ``gymnasium.make(task)`` env of lbforaging or rware with random actions, resetting
    when an episode ends."""
    import gymnasium

    if family(task) == "lbf":
        import lbforaging  # noqa: F401  (registers the Foraging ids)
    else:
        import rware  # noqa: F401  (registers the rware ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's checker on their tuple spaces
        env = gymnasium.make(task)
        env.reset(seed=seed)
        counts = [space.n for space in env.action_space]
        warmup = min(100, steps)
        actions = np.random.default_rng(seed).integers(0, counts, (warmup + steps, len(counts))).tolist()
        for index in range(warmup + steps):
            if index == warmup:  # the first steps pay for gymnasium's checks and lazy imports
                start = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(actions[index])
            if terminated or truncated:
                env.reset()
        rate = steps / (time.perf_counter() - start)
        env.close()
    return rate


def measure(task: str, batch: int, steps: int, repeats: int, with_jumanji: bool,
            min_repeat_s: float = 0.2) -> Row:
    """Ours and (``with_jumanji``) Jumanji's env steps/s for ``task`` at ``batch``, timed in turns."""
    ours = PreparedRollout(*ours_rollout(task, batch, steps), min_repeat_s)
    sides = [ours]
    if with_jumanji:
        sides.append(PreparedRollout(*jumanji_rollout(task, batch, steps), min_repeat_s))
    time_interleaved(sides, repeats)
    row = Row(task, batch, batch * steps / ours.best_s, ours.compile_s, _ends_per_1k(ours))
    if with_jumanji:
        theirs = sides[1]
        row.jumanji, row.jumanji_compile = batch * steps / theirs.best_s, theirs.compile_s
        row.jumanji_ends = _ends_per_1k(theirs)
    return row


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _ratio(ours: float, other: float | None, target: float) -> str:
    if other is None:
        return "—"
    ratio = ours / other
    return f"{ratio:,.1f}x ({'met' if ratio >= target else 'short'})"


def _pair(ours: float, theirs: float | None) -> str:
    return f"{ours:.1f}" + ("" if theirs is None else f" / {theirs:.1f}")


def format_row(row: Row) -> str:
    """The markdown line of one row."""
    compile_s, ends = _pair(row.ours_compile, row.jumanji_compile), _pair(row.ours_ends, row.jumanji_ends)
    cells = [row.task, f"{row.batch:,}", _rate(row.ours), _rate(row.jumanji),
             _ratio(row.ours, row.jumanji, JUMANJI_TARGET), _rate(row.original),
             _ratio(row.ours, row.original, ORIGINAL_TARGET), compile_s, ends]
    return "| " + " | ".join(cells) + " |"


COLUMNS = ["task", "batch", "ours (env steps/s)", "Jumanji vmap (env steps/s)",
           f"ours / Jumanji (target >= {JUMANJI_TARGET:g}x)", "original, 1 env (env steps/s)",
           f"ours / original (target >= {ORIGINAL_TARGET:,.0f}x)", "compile s (ours / Jumanji)",
           "episode ends per 1k env steps (ours / Jumanji)"]


def main(argv: Sequence[str] | None = None) -> str:
    """Run the benchmark, print its markdown (and write it to ``--markdown``), and return it."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(DEFAULT_TASKS),
                        help="our ids (= the original packages' gymnasium ids)")
    parser.add_argument("--batches", nargs="+", type=int, default=[4096])
    parser.add_argument("--steps", type=int, default=64, help="env steps per timed rollout (scan length)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per side; the best counts")
    parser.add_argument("--ref-steps", type=int, default=2000, help="original package's steps timed")
    parser.add_argument("--no-jumanji", action="store_true", help="skip Jumanji's side")
    parser.add_argument("--no-reference", action="store_true", help="skip the original packages")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (batch 8, 4 steps, 20 ref steps)")
    parser.add_argument("--markdown", metavar="PATH", default=None, help="also write the output here")
    args = parser.parse_args(argv)
    min_repeat_s = 0.2
    if args.quick:
        args.batches, args.steps, args.ref_steps, args.repeats, min_repeat_s = [8], 4, 20, 1, 0.01
    for task in args.tasks:
        family(task)  # unknown ids fail before anything is timed
    with_jumanji = not args.no_jumanji
    notes = []
    if with_jumanji:
        try:
            import jumanji  # noqa: F401
        except ImportError:
            with_jumanji = False
            notes.append("Jumanji skipped: jumanji is not installed (`pip install jumanji==1.1.2`).")
    rware_error = rware_import_error() if any(family(t) == "rware" for t in args.tasks) else None
    if rware_error is not None:
        notes.append(f"RWARE rows skipped: jaxmarl_suite.environments.rware failed to import "
                     f"({rware_error}).")

    info = machine_info(("jumanji", "lbforaging", "rware", "gymnasium"))
    words = sys.argv if argv is None else ["scripts/bench_lbf_rware.py", *argv]
    command = "python " + " ".join(shlex.quote(word) for word in words)
    lines = [f"command: `{command}`", "", *[f"- {key}: {value}" for key, value in info.items()], "",
             f"Env steps/s (one env step = every agent acting once), {args.steps} steps per jitted scan, "
             f"best of {args.repeats}; ours and Jumanji's timed in turns; original = one gymnasium env, "
             f"{args.ref_steps} steps. Coop LBF on every side. Jumanji's RWARE ends episodes on collisions "
             "(so it resets more often: see the last column).", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    print("\n".join(lines), flush=True)
    for note in notes:
        print(note, flush=True)
    for task in args.tasks:
        if family(task) == "rware" and rware_error is not None:
            continue
        original = None if args.no_reference else original_rate(task, args.ref_steps)
        for batch in args.batches:
            row = measure(task, batch, args.steps, args.repeats, with_jumanji, min_repeat_s)
            row.original = original
            lines.append(format_row(row))
            print(lines[-1], flush=True)
    lines += ["", *notes] if notes else []
    text = "\n".join(lines)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(text + "\n")
    return text


if __name__ == "__main__":
    main()
