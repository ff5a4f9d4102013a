"""What XLA makes of an MPE step: on the CPU the program the physics always compiled to; for a GPU (H200
target, compiled here without one where JAX's CUDA plugin is installed, as CI installs it) a rollout that
writes the carried positions and velocities in place instead of copying them every step."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

from jaxmarl_suite import bench
from jaxmarl_suite.environments.mpe import base as mpe_base

ENV_ID, NUM_ENVS = "MPE_simple_spread_v3", 4096
ENTITIES = 6  # simple_spread: 3 agents and 3 landmarks


def _rollout() -> tuple[object, object]:
    init, rollout = bench.ours_rollout(ENV_ID, NUM_ENVS, steps=8)
    return rollout, jax.eval_shape(init, jax.ShapeDtypeStruct((2,), jnp.uint32))


def _state_copies_in_loops(hlo: str) -> list[str]:
    """Unfused copies of an ``f32[entities, 2, envs]`` array (positions or velocities) outside the entry
    computation, which copies the undonated initial state once."""
    copy = re.compile(rf"= {re.escape(f'f32[{ENTITIES},2,{NUM_ENVS}]')}\S* copy\(")
    found, in_entry = [], False
    for line in hlo.splitlines():
        if line and not line.startswith(" "):
            in_entry = line.startswith("ENTRY")
        elif not in_entry and copy.search(line):
            found.append(line.strip())
    return found


def _compiled(gpu: bool) -> str:
    rollout, carry = _rollout()  # a new env and rollout each time, traced afresh
    program = bench.compile_for_gpu(rollout, carry) if gpu else jax.jit(rollout).lower(carry).compile()
    return program.as_text()


def _instructions(hlo: str) -> list[str]:
    """The program's instructions without source locations or the numbers XLA appends to names."""
    lines = [line for line in hlo.splitlines() if line.startswith(" ")]
    return [re.sub(r"\.\d+\b", "", re.sub(r", metadata=\{[^}]*\}", "", line)) for line in lines]


def test_the_cpu_rollout_program_is_the_same_with_or_without_the_gpu_barrier(monkeypatch) -> None:
    cpu = _compiled(gpu=False)
    # XLA drops the barrier once fusion is done; its op name stays in the metadata
    assert "optimization_barrier" not in cpu
    monkeypatch.setattr(mpe_base, "_apart_on_gpu", lambda pos, vel: (pos, vel))
    assert _instructions(_compiled(gpu=False)) == _instructions(cpu), "the CPU program is unchanged"


def test_an_h200_rollout_writes_the_state_in_place(monkeypatch, gpu_target: object) -> None:
    gpu = _compiled(gpu=True)
    assert "optimization_barrier" in gpu
    assert _state_copies_in_loops(gpu) == [], "a GPU rollout should write positions and velocities in place"
    monkeypatch.setattr(mpe_base, "_apart_on_gpu", lambda pos, vel: (pos, vel))
    assert _state_copies_in_loops(_compiled(gpu=True)), "without the barrier XLA copies the state every step"
