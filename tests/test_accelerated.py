"""``jaxmarl_suite.accelerated``: the only module that forks on the platform, and each accelerator variant
run on the CPU (``forced("accelerator")``) against the plain code it replaces.

Where the variants are checked: here the fork itself, the loops over time, the MPE physics barrier with
AutoReset, and SMAX's unrolled sub-steps with its sums at targets; gradient clipping in
``tests/training/test_optimizer.py``; SMAX's sums at targets alone in ``tests/environments/test_smax.py``;
IPPO's towers side by side and the GRU's barrier in ``tests/training/test_networks.py``
(``test_ippo_off_the_cpu_equals_ippo_on_it``); MAPPO's GRU pair in ``tests/baselines/test_mappo_networks.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite import accelerated
from jaxmarl_suite.bench import sample_group_actions
from jaxmarl_suite.training.kit.gae import gae
from jaxmarl_suite.wrappers import AutoReset, episode_done

ROOT = Path(__file__).resolve().parents[1]


def platform_forks(source: str) -> list[int]:
    """Lines of ``source`` that name ``platform_dependent``."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if (isinstance(node, ast.Attribute) and node.attr == "platform_dependent")
            or (isinstance(node, ast.Name) and node.id == "platform_dependent")
            or (isinstance(node, ast.alias) and node.name.endswith("platform_dependent"))]


def test_no_other_module_forks_on_the_platform() -> None:
    found = {}
    for folder in ("jaxmarl_suite", "environments", "baselines"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "accelerated.py" and platform_forks(path.read_text()):
                found[str(path.relative_to(ROOT))] = platform_forks(path.read_text())
    assert not found, f"fork through jaxmarl_suite.accelerated instead: {found}"
    assert platform_forks((ROOT / "jaxmarl_suite" / "accelerated.py").read_text()), "the one fork moved?"


def test_the_source_check_catches_a_fork() -> None:
    """Negative control: both spellings are found."""
    assert platform_forks("import jax\njax.lax.platform_dependent(1, cpu=f, default=g)\n") == [2]
    assert platform_forks("from jax.lax import platform_dependent\n") == [1]
    assert not platform_forks("accelerated.fork(1, cpu=f, accelerator=g)\n")


def test_forcing_picks_a_branch_and_is_undone() -> None:
    def which() -> str:
        return accelerated.fork(cpu=lambda: "cpu", accelerator=lambda: "accelerator")

    with accelerated.forced("accelerator"):
        assert which() == "accelerator"
        with accelerated.forced("cpu"):
            assert which() == "cpu"
        assert which() == "accelerator"
    # unforced, the fork is XLA's: traced to both, the CPU's taken here
    unforced = jax.jit(lambda: accelerated.fork(cpu=lambda: jnp.int32(1), accelerator=lambda: jnp.int32(2)))
    assert int(unforced()) == 1
    with pytest.raises(ValueError, match="branch"), accelerated.forced("gpu"):  # type: ignore[arg-type]
        pass


def test_loops_unrolled_as_on_an_accelerator_give_the_same_gae() -> None:
    """``kit.loops.scan`` unrolls 16 steps a trip off the CPU: the same GAE up to float rounding."""
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    shape = (40, 8, 3)
    reward, value, next_value = (jax.random.normal(k, shape) for k in keys[:3])
    done = jax.random.uniform(keys[3], shape) < 0.1

    def run() -> tuple[jax.Array, jax.Array]:
        return jax.jit(lambda: gae(reward, value, next_value, done, done, 0.99, 0.95))()

    with accelerated.forced("cpu"):
        plain = run()
    with accelerated.forced("accelerator"):
        unrolled = run()
    for a, b in zip(plain, unrolled, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _rollout(env_id: str, steps: int, num_envs: int = 8) -> list[np.ndarray]:
    """Every step's observations, rewards and done flags of a random-action rollout, through ``AutoReset`` in
    its default (``auto``) mode."""
    env = AutoReset(jaxmarl_suite.make(env_id, num_envs=num_envs))

    def run(key: jax.Array) -> list[jax.Array]:
        state, _ = env.reset(key)

        def step(state: object, step_key: jax.Array) -> tuple[object, list[jax.Array]]:
            action_key, env_key = jax.random.split(step_key)
            state, timestep = env.step(env_key, state, sample_group_actions(action_key, env, num_envs))
            return state, [*jax.tree.leaves(timestep.obs), *jax.tree.leaves(timestep.reward),
                           episode_done(timestep)]

        return jax.lax.scan(step, state, jax.random.split(key, steps))[1]

    return [np.asarray(x) for x in jax.jit(run)(jax.random.PRNGKey(3))]


def test_mpe_with_the_physics_barrier_and_select_resets_steps_as_on_the_cpu() -> None:
    """MPE spread off the CPU: its positions and velocities behind a barrier and AutoReset's ``auto`` mode
    selecting fresh episodes every step instead of a ``cond``: the same trajectories over episodes that end
    and restart (25 steps each). Not bit for bit: with the barrier XLA fuses the physics and the
    observation apart, which moves the last bits of a few observations (7e-9 on the CPU)."""
    with accelerated.forced("cpu"):
        plain = _rollout("MPE_simple_spread_v3", 30)
    with accelerated.forced("accelerator"):
        barrier = _rollout("MPE_simple_spread_v3", 30)
    assert plain[-1].any(), "no episode ended: the resets were not compared"
    for a, b in zip(plain, barrier, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_smax_unrolled_with_sums_at_targets_steps_as_on_the_cpu() -> None:
    """SMAX 3m off the CPU: combat sub-steps unrolled and damage summed over units instead of scattered;
    the additions are reordered, so observations and rewards agree to float rounding."""
    with accelerated.forced("cpu"):
        plain = _rollout("SMAX_3m", 12)
    with accelerated.forced("accelerator"):
        unrolled = _rollout("SMAX_3m", 12)
    for a, b in zip(plain, unrolled, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
