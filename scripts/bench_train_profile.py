"""Where an update's time goes, for the training benchmark (``bench_train.py``): an XLA trace of a few
updates, each HLO op attributed to the Python function that emitted it (``classify_op``), and the
kernels a compiled update launches on a GPU target (``kernel_comparison``)."""

from __future__ import annotations

import dataclasses
import glob
import gzip
import json
import os
import re
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.bench import (
    gpu_kernel_counts,
    kernel_counts,
)

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (tests), not run from scripts/
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_train_sides import (  # noqa: E402
    DEFAULT_PRESET,
    JaxMarlIPPO,
    _block,
    _timed_run,
    load_ours,
    ours_from_jaxmarl,
    ours_train,
)

PHASES = (
    "rollout: env step", "rollout: policy forward", "rollout: action sampling", "rollout: other",
    "bootstrap values", "GAE", "loss forward", "loss backward", "optimizer (clip + Adam)",
    "shuffle + minibatch split", "other",
)
"""Where an update's time goes; ``classify_op`` maps each HLO op to one of these."""

_HLO_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


StackOf = Callable[[int], list[tuple[str, str]]]


def parse_hlo_stacks(hlo_text: str) -> tuple[dict[str, tuple[str, int]], StackOf]:
    """From a compiled module's text: ``{op name: (op_name metadata, stack frame id)}`` and a function
    giving the Python stack ``[(file, function)]`` (innermost first) of a frame id.

    The text lists frames as ``id {file_location_id=L parent_frame_id=P}``, where ``P`` is the parent's id
    plus one and 0 means none (checked on jax 0.10.2 against a known call chain)."""
    tables: dict[str, dict[int, str]] = {name: {} for name in _HLO_SECTIONS}
    ops: dict[str, tuple[str, int]] = {}
    section = None
    for line in hlo_text.splitlines():
        stripped = line.strip()
        if stripped in tables:
            section = stripped
            continue
        if section and re.match(r"^\d+ ", stripped):
            index, rest = stripped.split(" ", 1)
            tables[section][int(index)] = rest
            continue
        section = None if stripped else section
        match = re.match(r"^(?:ROOT )?%([\w.\-]+) = .*metadata=\{([^}]*)\}", stripped)
        if match:
            op_name = re.search(r'op_name="([^"]*)"', match.group(2))
            frame = re.search(r"stack_frame_id=(\d+)", match.group(2))
            ops[match.group(1)] = (op_name.group(1) if op_name else "", int(frame.group(1)) if frame else 0)
    files = {i: v.strip('"') for i, v in tables["FileNames"].items()}
    functions = {i: v.strip('"') for i, v in tables["FunctionNames"].items()}
    locations = {i: tuple(int(n) for n in re.findall(r"(?:file_name_id|function_name_id)=(\d+)", v)[:2])
                 for i, v in tables["FileLocations"].items()}
    frames = {i: tuple(int(n) for n in re.findall(r"(?:file_location_id|parent_frame_id)=(\d+)", v))
              for i, v in tables["StackFrames"].items()}

    def stack(frame_id: int) -> list[tuple[str, str]]:
        out, seen = [], set()
        while frame_id in frames and frame_id not in seen:
            seen.add(frame_id)
            location, parent = frames[frame_id]
            file_id, function_id = locations[location]
            out.append((files.get(file_id, "?"), functions.get(function_id, "?")))
            frame_id = parent - 1
        return out

    return ops, stack


def trace_self_times(trace_file: str | os.PathLike[str]) -> Counter[str]:
    """Microseconds of self time (duration minus nested events) per event name, summed over threads."""
    with gzip.open(trace_file) as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by_thread[(event["pid"], event["tid"])].append(event)
    totals: Counter[str] = Counter()
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        open_events: list[list[Any]] = []  # [end, name, duration, nested duration]
        for event in thread_events:
            start, duration = event["ts"], event.get("dur", 0)
            while open_events and open_events[-1][0] <= start:
                _end, name, total, nested = open_events.pop()
                totals[name] += total - nested
            if open_events:
                open_events[-1][3] += duration
            open_events.append([start + duration, event["name"], duration, 0.0])
        for _end, name, total, nested in open_events:
            totals[name] += total - nested
    return totals


def classify_op(stack: Sequence[tuple[str, str]], op_name: str, algorithm_file: str) -> str:
    """The ``PHASES`` entry of one HLO op, from the functions on its Python stack (both files' names)."""
    # the algorithm's own frames, and the PPO pieces it calls in the kit (epochs, minibatches, the loss)
    chain = " ".join(function for file, function in stack
                     if file.endswith(algorithm_file) or file.endswith("training/kit/ppo.py"))
    files = " ".join(file for file, _ in stack)
    in_env = any("/environments/" in file or "/wrappers/" in file for file, _ in stack)
    if re.search(r"\brollout\b|_env_step", chain):
        if in_env:
            return "rollout: env step"
        if "ActorCritic" in chain:
            return "rollout: policy forward"
        if "distrax" in files or "action_distribution" in chain:
            return "rollout: action sampling"
        return "rollout: other"
    if "/training/kit/gae.py" in files or "_calculate_gae" in chain:
        return "GAE"
    if "loss_fn" in chain:
        return "loss backward" if "transpose(" in op_name else "loss forward"
    if "minibatch_step" in chain or "_update_minbatch" in chain:
        return "optimizer (clip + Adam)"
    if re.search(r"\bepoch\b|_update_epoch", chain):
        return "shuffle + minibatch split"
    if "bootstrap_values" in chain or "ActorCritic" in chain:
        return "bootstrap values"
    return "other"


def profile_update(train: Callable[..., Any], args: tuple[Any, ...], updates: int, algorithm_file: str
                   ) -> dict[str, Any]:
    """Trace one run of ``train(*args)`` (``updates`` updates) and return milliseconds per update by phase.

    The trace holds every XLA op execution; keep ``updates`` small (the profiler drops events past about a
    million). Tracing adds a fixed cost per op, so sides with many small ops look relatively slower."""
    compiled = jax.jit(train).lower(*args).compile()
    _block(compiled(*args))
    wall, _cpu = _timed_run(compiled, args)
    with tempfile.TemporaryDirectory() as directory:
        with jax.profiler.trace(directory):
            _block(compiled(*args))
        trace_files = glob.glob(os.path.join(directory, "**", "*.trace.json.gz"), recursive=True)
        if not trace_files:
            raise RuntimeError("jax.profiler wrote no trace")
        self_times = trace_self_times(trace_files[0])
    ops, stack = parse_hlo_stacks(compiled.as_text())
    phases: Counter[str] = Counter()
    for name, micros in self_times.items():
        if name in ops:
            op_name, frame = ops[name]
            phases[classify_op(stack(frame), op_name, algorithm_file)] += micros
    total = sum(phases.values())
    return {
        "ms_per_update": {phase: phases.get(phase, 0.0) / 1e3 / updates for phase in PHASES},
        "traced_ms_per_update": total / 1e3 / updates,
        "untraced_ms_per_update": wall * 1e3 / updates,
    }


def profile_sides(jaxmarl: JaxMarlIPPO | None, updates: int = 3,
                  ours: tuple[ippo.Config, ippo.HParams] | None = None,
                  num_envs: int | None = None) -> dict[str, dict[str, Any]]:
    """``profile_update`` for ours and JaxMARL with JaxMARL's config (``updates`` updates each), with
    ``NUM_ENVS`` replaced by ``num_envs`` when given."""
    if ours is None:
        ours = ours_from_jaxmarl(jaxmarl.config) if jaxmarl is not None else load_ours(DEFAULT_PRESET)
    envs = num_envs or ours[0].num_envs
    config = dataclasses.replace(ours[0], num_envs=envs, total_timesteps=envs * ours[0].num_steps * updates)
    key = jax.random.PRNGKey(0)
    results = {"ours": profile_update(ours_train(config), (key, ours[1]), updates, Path(ippo.__file__).name)}
    if jaxmarl is not None:
        results["JaxMARL"] = profile_update(
            jaxmarl.make_train(TOTAL_TIMESTEPS=config.total_timesteps, NUM_ENVS=envs), (key,), updates,
            jaxmarl.path.name,
        )
    return results


def kernel_comparison(jaxmarl: JaxMarlIPPO | None, num_envs: Sequence[int | None] = (None,),
                      ours: tuple[ippo.Config, ippo.HParams] | None = None,
                      log: Callable[[str], None] | None = print,
                      gpu_target: str | None = None) -> list[dict[str, Any]]:
    """Rows per side and env count: the kernels one update launches (``bench.kernel_counts`` of the
    compiled training program, two updates long) and those of each loop inside it, the first being the
    rollout. Launch overhead on a GPU, counted on whatever backend runs this, or with ``gpu_target`` (a
    ``bench.GPU_TARGETS`` key) as XLA's GPU compiler compiles the program for that GPU, here, without one
    (``bench.compile_for_gpu``)."""
    if ours is None:
        ours = ours_from_jaxmarl(jaxmarl.config) if jaxmarl is not None else load_ours(DEFAULT_PRESET)
    rows = []
    for envs in num_envs:
        envs = envs or ours[0].num_envs
        config = dataclasses.replace(ours[0], num_envs=envs, total_timesteps=2 * envs * ours[0].num_steps)
        key = jax.random.PRNGKey(0)
        sides: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
            ("ours", ours_train(config), (key, ours[1]))
        ]
        if jaxmarl is not None:
            sides.append(("JaxMARL", jaxmarl.make_train(TOTAL_TIMESTEPS=config.total_timesteps,
                                                        NUM_ENVS=envs), (key,)))
        for name, function, args in sides:
            if gpu_target is None:
                counts = kernel_counts(jax.jit(function).lower(*args).compile().as_text())
            else:
                counts = gpu_kernel_counts(function, *args, target=gpu_target)
            rows.append({"side": name, "envs": envs, "per_update": counts.per_iteration,
                         "loops": counts.loops})
            if log:
                log(f"  kernels: {name} {envs} envs: {counts.per_iteration} per update, loops {counts.loops}")
    return rows
