"""Rendering a whole episode compiles quickly: XLA folds no constant whose size grows with the episode."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import pytest

import jaxmarl_suite
from jaxmarl_suite.core.registry import env_spec, registered_envs

FIRST_OF_EACH_FAMILY = list({env_spec(e).family: e for e in reversed(registered_envs())}.values())
"""One env per family (its first registered), to keep the per-family checks cheap."""


@pytest.mark.parametrize("env_id", FIRST_OF_EACH_FAMILY)
def test_rendering_an_episode_folds_no_constant_per_frame(env_id: str, tmp_path: Path) -> None:
    """``jax.vmap(env.render)`` over an episode: XLA's constant folding must never produce an array with
    the episode's length in its shape. Hanabi's spectator view once did (an all-False face-down mask
    gathered over every card pixel and frame: seconds of compiling, and XLA's slow-operation alarm)."""
    frames = 67  # a length no family's frame size contains
    env = jaxmarl_suite.make(env_id)
    state = jax.eval_shape(env.reset, jax.random.PRNGKey(0))[0]
    assert frames not in jax.eval_shape(env.render, state).shape
    states = jax.tree.map(lambda leaf: jax.ShapeDtypeStruct((frames, *leaf.shape), leaf.dtype), state)
    dump = tmp_path / "hlo"
    jax.jit(jax.vmap(env.render)).lower(states).compile(
        compiler_options={"xla_dump_to": str(dump), "xla_dump_hlo_pass_re": "constant.folding"})
    folded = sorted(dump.glob("*after_constant_folding*.txt"))
    assert folded, "XLA dumped the module after constant folding"
    per_frame = []
    for path in folded:
        shapes = re.findall(r"= (\w+\[[\d,]*\])\S* constant\(", path.read_text())
        per_frame += [shape for shape in shapes if re.search(rf"[\[,]{frames}[,\]]", shape)]
    assert not per_frame, f"{env_id}: constants folded per frame: {per_frame[:3]}"
