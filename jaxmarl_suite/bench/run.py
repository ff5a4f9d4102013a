"""``run_benchmark``: every env id and batch size of a benchmark, each row's sides prepared, timed in turns
and released before the next row."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from jaxmarl_suite.bench.report import _summary
from jaxmarl_suite.bench.rollouts import (
    bench_reference,
    gpu_rollout_kernels,
    jaxmarl_id,
    jaxmarl_kwargs,
    jaxmarl_rollout,
    ours_rollout,
    prepare_jaxmarl,
    prepare_ours,
)
from jaxmarl_suite.bench.timing import _jaxmarl_dropper, time_interleaved
from jaxmarl_suite.core.registry import env_spec, make
from jaxmarl_suite.core.vec import VecEnv

Progress = Callable[[str], None]

def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_benchmark(
    env_ids: Sequence[str],
    batches: Sequence[int] = (1, 64, 1024, 4096),
    steps: int = 128,
    repeats: int = 3,
    compare_jaxmarl: bool = True,
    *,
    include_vmap: bool = True,
    masked_actions: bool = False,
    min_repeat_s: float = 0.2,
    progress: Progress | None = _stderr,
    compare_reference: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    reset_mode: str = "auto",
    gpu_target: str | None = None,
) -> list[dict[str, Any]]:
    """Benchmark each env at each batch size. Returns one dict per (env, batch).

    Keys: ``env``, ``batch``, ``steps``, ``ours_sps``, ``ours_compile_s``, ``vmap_sps``,
    ``vmap_compile_s``, ``jaxmarl_id``, ``jaxmarl_sps``, ``jaxmarl_compile_s``, ``ours_kernels`` and
    ``jaxmarl_kernels`` (``KernelCounts.per_iteration``: kernels per env step), ``ratio_vs_jaxmarl``
    (ours / JaxMARL), ``native_gain`` (ours / vmap path), ``reference_sps`` and ``ratio_vs_reference``
    (with ``compare_reference``: the mpe2 reference stepping one env, once per env id) and ``notes``.
    Speeds are env steps/s (one env step = all agents acting once); a measurement not taken is None.

    ``masked_actions`` draws Discrete actions uniformly over the action mask instead of a plain
    ``randint`` (slower; needed for envs whose masks forbid actions, such as Hanabi's turns), and JaxMARL's
    side then draws over its own legal moves (else ``randint``/``uniform``, as its random-policy scripts
    do). ``env_kwargs`` go to every env's constructor (e.g. ``{"enemy": "agents"}`` for SMAX, to compare
    with JaxMARL's two-team SMAX).
    ``reset_mode`` is our ``AutoReset``'s mode. ``gpu_target`` (a ``GPU_TARGETS`` key) adds
    ``ours_gpu_kernels`` and ``jaxmarl_gpu_kernels``: kernels per step of each side's rollout compiled for
    that GPU on this machine (``compile_for_gpu``; needs JAX's CUDA plugin, not a GPU).
    """
    if steps < 1 or repeats < 1 or any(int(b) < 1 for b in batches):
        raise ValueError("steps, repeats and every batch size must be positive")
    say = progress or (lambda _message: None)
    specs = [env_spec(env_id) for env_id in env_ids]  # unknown ids fail here, before any timing
    rows: list[dict[str, Any]] = []
    for spec in specs:
        kwargs = dict(env_kwargs or {})
        counterpart = jaxmarl_id(spec.env_id, kwargs) if compare_jaxmarl else None
        batch_native = VecEnv(make(spec.env_id, **kwargs), 1).batch_native
        reference_sps = None
        if compare_reference:
            say(f"[bench] {spec.env_id}: reference, one env ...")
            reference_sps = bench_reference(spec.env_id)
        for batch in batches:
            batch = int(batch)
            row: dict[str, Any] = {
                "env": spec.env_id,
                "batch": batch,
                "steps": steps,
                "ours_sps": None,
                "ours_compile_s": None,
                "vmap_sps": None,
                "vmap_compile_s": None,
                "jaxmarl_id": counterpart,
                "jaxmarl_sps": None,
                "jaxmarl_compile_s": None,
                "ours_kernels": None,
                "jaxmarl_kernels": None,
                "ours_gpu_kernels": None,
                "jaxmarl_gpu_kernels": None,
                "ratio_vs_jaxmarl": None,
                "native_gain": None,
                "reference_sps": reference_sps,
                "ratio_vs_reference": None,
                "notes": [],
            }
            say(f"[bench] {spec.env_id} B={batch}: ours: compiling ...")
            sides = {"ours": prepare_ours(spec.env_id, batch, steps, False, masked_actions, min_repeat_s,
                                          reset_mode, **kwargs)}
            if include_vmap and batch_native:
                say(f"[bench] {spec.env_id} B={batch}: vmap path: compiling ...")
                sides["vmap"] = prepare_ours(spec.env_id, batch, steps, True, masked_actions, min_repeat_s,
                                             reset_mode, **kwargs)
            elif include_vmap:
                row["notes"].append("not batch-native: ours is the vmap path")
            if counterpart is not None:
                say(f"[bench] {spec.env_id} B={batch}: JaxMARL {counterpart}: compiling ...")
                try:
                    counterpart_kwargs = jaxmarl_kwargs(spec.env_id, kwargs)
                    sides["jaxmarl"] = prepare_jaxmarl(
                        counterpart, batch, steps, min_repeat_s, masked_actions, **counterpart_kwargs
                    )
                except Exception as error:  # report, keep benchmarking the rest
                    row["notes"].append(f"JaxMARL failed: {type(error).__name__}: {error}")
            elif compare_jaxmarl:
                row["notes"].append("no JaxMARL counterpart (or jaxmarl not installed)")
            say(f"[bench] {spec.env_id} B={batch}: timing {', '.join(sides)} in turn ...")
            time_interleaved(list(sides.values()), repeats, on_error=_jaxmarl_dropper(sides, row["notes"]))
            for name, side in sides.items():
                row[f"{name}_compile_s"] = side.compile_s
                row[f"{name}_sps"] = batch * steps / side.best_s
            row["ours_kernels"] = sides["ours"].kernels.per_iteration
            if "vmap" in sides:
                row["native_gain"] = row["ours_sps"] / row["vmap_sps"]
            if "jaxmarl" in sides:
                row["jaxmarl_kernels"] = sides["jaxmarl"].kernels.per_iteration
                row["ratio_vs_jaxmarl"] = row["ours_sps"] / row["jaxmarl_sps"]
            if reference_sps:
                row["ratio_vs_reference"] = row["ours_sps"] / reference_sps
            if gpu_target is not None:
                say(f"[bench] {spec.env_id} B={batch}: compiling for {gpu_target} ...")
                row["ours_gpu_kernels"] = gpu_rollout_kernels(*ours_rollout(
                    spec.env_id, batch, steps, False, masked_actions, reset_mode, **kwargs), gpu_target
                ).per_iteration
                if "jaxmarl" in sides and counterpart is not None:
                    row["jaxmarl_gpu_kernels"] = gpu_rollout_kernels(*jaxmarl_rollout(
                        counterpart, batch, steps, masked_actions, **jaxmarl_kwargs(spec.env_id, kwargs)),
                        gpu_target).per_iteration
            say(f"[bench]   -> {_summary(row)}")
            rows.append(row)
    return rows
