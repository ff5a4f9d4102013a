"""Live parity with Gymnasium-Robotics' ``mamujoco_v1`` (MuJoCo's C engine, float64): from the reference's
state at every step of random-action episodes, one step of ours (MJX in float32, or the C engine) gives every
agent's observation, the reward, termination, truncation and the world state (``state()``) of the reference.

Tolerances, and why:

- ``TOL``, relative (``|ours - reference| / (1 + |reference|)``): float32 against float64 through a frame
  skip of MuJoCo substeps. Contact-free steps of every robot, and every step of the planar robots, stay
  inside it (about 1e-4 for the small robots, a few 1e-3 absolute on the 20-segment swimmer's velocities).
- **Ant-like robots with a foot on the floor.** MJX builds a contact's pyramidal friction cone on another
  tangent frame than the C engine, so a sliding foot's friction, and the step after it, differ (up to
  about 1 in velocities). Whether a step touched the floor is decided by an oracle: a copy of the
  reference's MuJoCo data, with every geom's margin widened by 3 cm so that a Runge-Kutta stage's brief
  touch counts, stepped substep by substep with the same controls. Contact steps (about 60% of an ant's
  random-action steps, more with the wide margin) are compared only in kind (shapes, finite values); the
  contact-free ones value by value, and the test requires an eighth of the steps to be such. The chain
  of six ants (ManySegmentAnt 2x3) lies on the floor in nearly every step, so little of it is compared
  by value.
- **Humanoids**: MJX has no PGS solver, so the Humanoids run under Newton (``env.solver_replaced``):
  constraint forces agree to the solvers' convergence, and the observations (whose ``cinert``/``cvel``
  values reach the hundreds) to ``HUMANOID_TOL`` relative.

The C-engine backend (``physics="c"``) is the reference's own engine: every task's case runs by default,
every step compared by value, contacts included, within ``C_TOL`` (the state reaches it rounded to
float32). Its whole-episode, x64 and batching checks are in test_mamujoco_c.py.

Negative controls (a wrong partition, a wrong ``agent_obsk``, a wrong reward weight) must fail the same
comparison. The default suite runs HalfCheetah 6x1 (``agent_obsk`` 0 and 1), the controls and the time
limit, all on the two cheetah programs those compile (MJX compiles slowly on a CPU: a new program costs
10 to 20 s); every other task, Ant 4x2 (the contact oracle) among them, is ``slow``.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import jax
import numpy as np
import pytest

pytest.importorskip("mujoco.mjx", reason="the mujoco extra (mujoco, mujoco-mjx) is not installed")
robotics = pytest.importorskip("gymnasium_robotics", reason="gymnasium-robotics is not installed")
mujoco = pytest.importorskip("mujoco")
mamujoco_v1 = robotics.mamujoco_v1

from jaxmarl_suite.environments.mamujoco import MaMuJoCo  # noqa: E402
from jaxmarl_suite.environments.mamujoco.parity import (  # noqa: E402
    agent_observations,
    group_actions,
    reference_task,
    state_from_mamujoco,
)

TOL = 2e-3
HUMANOID_TOL = 5e-2
CHAIN_TOL = 1e-2
"""The 20-link swimmer: float32 rounding compounds along the chain (about 4e-3 relative measured)."""
C_TOL = 1e-4
"""``physics="c"``: the reference's own engine from the reference's state rounded to float32."""
CONTACT_ROBOTS = ("Ant", "ManySegmentAnt")
DEFAULT_STEPS = 30
SLOW_STEPS = 120

_STEPS: dict[tuple[Any, ...], Any] = {}


def _jitted_step(env: MaMuJoCo, key: tuple[Any, ...]) -> Any:
    if key not in _STEPS:
        _STEPS[key] = jax.jit(env.step)
    return _STEPS[key]


def _touches_floor(ref: Any, actions: dict[str, np.ndarray], frame_skip: int) -> bool:
    """Whether any MuJoCo substep of the coming step has a contact, on a copy of the reference's data."""
    task = reference_task(ref)
    if task.data.ncon > 0:  # contacts of the state the step starts from (its first forward pass)
        return True
    # A Runge-Kutta step can touch the floor in an intermediate stage and leave it by the substep's end,
    # where ``ncon`` is read: the oracle widens every geom's margin so near-touches count too.
    model = _ORACLE_MODELS.setdefault(id(task.model), _widened(task.model))
    data = mujoco.MjData(model)
    mujoco.mj_copyData(data, task.model, task.data)
    data.ctrl[:] = ref.map_local_actions_to_global_action(actions)
    for _ in range(frame_skip):
        mujoco.mj_step(model, data)
        if data.ncon > 0:
            return True
    return False


_ORACLE_MODELS: dict[int, Any] = {}


def _widened(model: Any) -> Any:
    wide = copy.deepcopy(model)
    wide.geom_margin[:] = model.geom_margin + 0.03
    return wide


def compare_episode(
    env: MaMuJoCo, ref: Any, steps: int, seed: int = 0, params_change: dict[str, Any] | None = None,
    cache_key: tuple[Any, ...] | None = None,
) -> dict[str, int]:
    """Step ``ref`` with random actions and ours from its state each step; assert every compared step
    agrees. Returns how many steps were compared and how many were contact steps left uncompared."""
    step = _jitted_step(env, cache_key or (env.scenario, env.agent_conf, env.agent_obsk, id(env)))
    rng = np.random.default_rng(seed)
    ref.reset(seed=seed)
    if env.physics_backend == "c":
        tol = C_TOL
    else:
        chain = env.scenario == "ManySegmentSwimmer"
        tol = HUMANOID_TOL if env.solver_replaced else CHAIN_TOL if chain else TOL
    counts = {"compared": 0, "contact": 0}
    for index in range(steps):
        state, params = state_from_mamujoco(ref, env)
        if params_change:
            params = dataclasses.replace(params, **params_change)
        actions = {a: rng.uniform(-1, 1, ref.action_space(a).shape).astype(np.float32) for a in ref.agents}
        contact = (
            env.physics_backend == "mjx"
            and env.scenario in CONTACT_ROBOTS
            and _touches_floor(ref, actions, env.robot.frame_skip)
        )
        _, timestep = step(jax.random.key(index), state, group_actions(env, actions), params)
        ref_obs, ref_reward, ref_term, ref_trunc, _ = ref.step(actions)
        if contact:  # compared only in kind: the same shapes, finite values
            counts["contact"] += 1
            ours = agent_observations(env, timestep.obs)
            assert all(ours[a].shape == o.shape and np.isfinite(ours[a]).all() for a, o in ref_obs.items())
        else:
            counts["compared"] += 1
            ours = agent_observations(env, timestep.obs)
            for agent, expected in ref_obs.items():
                assert ours[agent].shape == expected.shape, (agent, ours[agent].shape, expected.shape)
                scale = 1.0 + np.abs(expected)
                error = np.max(np.abs(ours[agent] - expected) / scale)
                assert error <= tol, f"step {index} {agent}: observation off by {error:.3g}"
            world = np.asarray(timestep.info["world_state"])
            scale = 1.0 + np.abs(ref.state())
            assert np.max(np.abs(world - ref.state()) / scale) <= tol, f"step {index}: world state"
            reward = float(next(iter(timestep.reward.values()))[0])
            assert abs(reward - ref_reward["agent_0"]) <= tol * max(1.0, abs(ref_reward["agent_0"])), (
                f"step {index}: reward {reward} against {ref_reward['agent_0']}"
            )
            for group in env.groups:
                assert bool(timestep.terminated[group].all()) == ref_term["agent_0"], f"{index}: terminated"
                assert bool(timestep.truncated[group].all()) == ref_trunc["agent_0"], f"{index}: truncated"
        if ref_term["agent_0"] or ref_trunc["agent_0"]:
            ref.reset(seed=seed + index + 1)
    return counts


def _check(scenario: str, conf: str, obsk: int, steps: int, physics: str = "mjx", **categories: Any) -> None:
    env = MaMuJoCo(scenario, conf, agent_obsk=obsk, physics=physics, **categories)
    ref = mamujoco_v1.parallel_env(scenario, conf, agent_obsk=obsk, **categories)
    counts = compare_episode(env, ref, steps, cache_key=(scenario, conf, obsk, physics, repr(categories)))
    if physics == "c":  # the reference's engine: every step compared by value, contacts included
        assert counts["compared"] == steps, counts
        return
    # an ant stands on the floor for most steps (about 60% of them under random actions); the chain of six
    # ants nearly always (118 of 120 steps), so its few contact-free steps are all there is to compare
    enough = {"Ant": steps // 8, "ManySegmentAnt": 1}.get(scenario, steps)
    assert counts["compared"] >= enough, f"only {counts} of {steps} steps were compared"


@pytest.mark.parametrize("obsk", [0, 1])
def test_halfcheetah_6x1_matches_the_reference(obsk: int) -> None:
    _check("HalfCheetah", "6x1", obsk, DEFAULT_STEPS)


SLOW_CASES = [
    ("HalfCheetah", "6x1", 2), ("HalfCheetah", "2x3", 1), ("Ant", "2x4", 1), ("Ant", "2x4d", 2),
    ("Ant", "4x2", 0), ("Ant", "4x2", 1), ("Hopper", "3x1", 1), ("Walker2d", "2x3", 1),
    ("Humanoid", "9|8", 1), ("HumanoidStandup", "9|8", 1), ("Reacher", "2x1", 1), ("Swimmer", "2x1", 1),
    ("ManySegmentSwimmer", "10x2", 1), ("ManySegmentAnt", "2x3", 1),
]
MJX_SLOW_CASES = [
    ("ManySegmentSwimmer", "6x2", 1) if case[0] == "ManySegmentSwimmer" else case for case in SLOW_CASES
]
"""MJX's 20-link swimmer is checked at 12 links: XLA's CPU backend runs MJX's step of a long chain in time
that grows steeply with its links inside a loop (one env step: 19 ms at 12 links, 0.56 s at 16, 46 s at
20), so the registered 10x2 task's MJX case would take hours; the C engine's case keeps 10x2."""


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "conf", "obsk"), MJX_SLOW_CASES)
def test_every_task_matches_the_reference(scenario: str, conf: str, obsk: int) -> None:
    _check(scenario, conf, obsk, SLOW_STEPS)


@pytest.mark.slow
def test_non_default_categories_match_the_reference() -> None:
    _check("HalfCheetah", "2x3", 1, SLOW_STEPS,
           local_categories=[["qpos", "qvel", "cinert", "cvel", "qfrc_actuator"], ["qpos", "qvel"]],
           global_categories=("qpos",))


def test_truncation_on_the_references_last_step() -> None:
    """The 1,000th step truncates every agent on both sides (and not the 999th); Reacher's limit is the
    reference's 50."""
    env = MaMuJoCo("HalfCheetah", "6x1")
    ref = mamujoco_v1.parallel_env("HalfCheetah", "6x1")
    step = _jitted_step(env, ("HalfCheetah", "6x1", 1, "mjx", "{}"))
    actions = {a: np.zeros(ref.action_space(a).shape, np.float32) for a in ref.agents}
    for elapsed in (998, 999):
        ref.reset(seed=3)
        ref.single_agent_env._elapsed_steps = elapsed
        state, params = state_from_mamujoco(ref, env)
        assert int(state.time) == elapsed and params.max_steps == 1000
        _, timestep = step(jax.random.key(0), state, group_actions(env, actions), params)
        _, _, _, truncated, _ = ref.step(actions)
        assert truncated["agent_0"] == (elapsed == 999)
        assert all(bool(t.all()) == (elapsed == 999) for t in timestep.truncated.values())
    reacher = mamujoco_v1.parallel_env("Reacher", "2x1")
    assert MaMuJoCo("Reacher", "2x1").default_params.max_steps == reacher.single_agent_env._max_episode_steps


def _swapped(scenario: str, conf: str, first: int, second: int) -> dict[str, Any]:
    """``mamujoco_v1``'s factorisation of the task with two agents' joints swapped."""
    from gymnasium_robotics.envs.multiagent_mujoco.obsk import get_parts_and_edges

    parts, edges, globals_ = get_parts_and_edges(scenario, conf)
    parts = list(parts)
    parts[first], parts[second] = parts[second], parts[first]
    return {"partition": parts, "edges": edges, "globals": globals_}


def test_negative_controls_fail_the_comparison() -> None:
    """A wrong partition, a wrong observation depth and a wrong reward weight must each be caught."""
    cheetah = MaMuJoCo("HalfCheetah", "6x1")
    # agents 0 and 3 (the back and front thighs) observe nine values each: only the values can differ
    factorisation = _swapped("HalfCheetah", "6x1", 0, 3)  # agent_conf is ignored when it is given
    swapped = mamujoco_v1.parallel_env("HalfCheetah", "6x1", agent_factorization=factorisation)
    with pytest.raises(AssertionError, match="observation off by"):
        compare_episode(cheetah, swapped, 4, cache_key=("HalfCheetah", "6x1", 1, "mjx", "{}"))
    shallow = MaMuJoCo("HalfCheetah", "6x1", agent_obsk=0)
    with pytest.raises(AssertionError):
        compare_episode(shallow, mamujoco_v1.parallel_env("HalfCheetah", "6x1", agent_obsk=1), 4,
                        cache_key=("HalfCheetah", "6x1", 0, "mjx", "{}"))
    reference = mamujoco_v1.parallel_env("HalfCheetah", "6x1")
    with pytest.raises(AssertionError, match="reward"):
        compare_episode(cheetah, reference, 4, params_change={"ctrl_cost_weight": 0.2},
                        cache_key=("HalfCheetah", "6x1", 1, "mjx", "{}"))


@pytest.mark.parametrize(("scenario", "conf", "obsk"), SLOW_CASES)
def test_the_c_engine_matches_the_reference_on_every_task(scenario: str, conf: str, obsk: int) -> None:
    _check(scenario, conf, obsk, SLOW_STEPS, physics="c")
