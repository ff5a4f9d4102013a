"""The one live mpe2 parity harness, for every MPE scenario, and the row types of the parity table.

``run_episode`` steps an mpe2 parallel env and our matching env side by side with the same actions for a
whole episode and raises AssertionError on the first mismatch in observations, rewards, terminations or
truncations. In ``injected`` mode mpe2's world is copied into our state before every step (each step's
error is its own); in ``free`` mode our env runs from its own state. Keyword hooks let a scenario steer
the actions (``policy``), arrange the reference world after its reset (``perturb_reference``), read the
reference after each step (``probe``) and adjust our post-step state where mpe2 draws what we cannot
(``after_step``); negative controls perturb our params or state, or tamper with our output.

``test_mpe_parity.py`` holds the table, a row per scenario: its name, our env id, and the scenario's
module, which names mpe2's reference and gives its configurations (the constructor's arguments), the
options of their rows (``ROW``, ``ROW_OPTIONS``) and their negative controls (``CONTROLS``). Each
configuration becomes a ``ParityCase``; a ``Control`` is one negative control. The per-scenario modules
also hold what is particular to a scenario: its policies, probes and rule tests.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.types import GroupDict, TimeStep
from jaxmarl_suite.environments.mpe.parity import (
    actions_to_mpe2,
    assert_timestep_matches,
    make_matching_env,
    observe,
    state_from_mpe2,
)

ATOL = 1e-5
"""Per-step tolerance on observations and rewards with mpe2's world injected before each step: every
scenario's, and its free-running one too unless contacts amplify float32 rounding."""
Mode = Literal["injected", "free"]
MODES: tuple[Mode, ...] = ("injected", "free")
INJECTED: tuple[Mode, ...] = ("injected",)
Tamper = Callable[[TimeStep], TimeStep]
Policy = Callable[[Any, Any, np.random.Generator], dict[str, np.ndarray]]
"""``policy(env, ref, rng) -> {group: actions}``, reading mpe2's world; replaces random actions when given."""
AfterStep = Callable[["Harness", Any, Any, TimeStep, Any, str], tuple[Any, TimeStep]]
"""``after_step(h, state_before, state, timestep, params, context) -> (state, timestep)``, run after both
sides stepped and before they are compared."""


@dataclasses.dataclass
class Harness:
    """One reference env and our matching env, with our step, observe and rewards compiled once."""

    ref: Any
    env: Any
    step: Callable[..., tuple[Any, TimeStep]]
    observe: Callable[[Any], GroupDict]
    rewards: Callable[[Any, Any], GroupDict]
    """Our per-env rewards of a state (jitted on first use), for scenarios that adjust a post-step state."""
    traces: list[int]
    """How often ``step`` was traced; params are a traced argument, so perturbed params must not retrace."""


def make_harness(reference: Any, **kwargs: Any) -> Harness:
    """mpe2's ``reference.parallel_env(**kwargs)`` (``reference`` is its module, its module name or the
    constructor itself) and our env built from it. A fresh pair: tests that mutate the reference world use
    their own, never a ``cached_harness``."""
    if isinstance(reference, str):
        reference = importlib.import_module(reference)
    ref = getattr(reference, "parallel_env", reference)(**kwargs)
    env = make_matching_env(ref)
    traces = [0]

    def counted_step(*args: Any) -> tuple[Any, TimeStep]:
        traces[0] += 1
        return env.step(*args)

    def rewards(state: Any, params: Any) -> GroupDict:
        batched = jax.tree.map(lambda x: x[..., None], state)  # our envs are batch-native: a batch of one
        return {group: value[..., 0] for group, value in env.rewards(batched, params).items()}

    observe_jit = jax.jit(functools.partial(observe, env))
    return Harness(ref, env, jax.jit(counted_step), observe_jit, jax.jit(rewards), traces)


@functools.cache
def cached_harness(reference: str, **kwargs: Any) -> Harness:
    """A shared, unmutated pair per (reference, arguments): one compilation for every test in a process."""
    return make_harness(reference, **kwargs)


def random_actions(
    env: Any, rng: np.random.Generator, silence_prob: float | None = 0.0
) -> dict[str, np.ndarray]:
    """Uniform legal actions per group. Continuous actions are drawn in ``[-0.25, 1.25]`` so that
    clipping is exercised; with probability ``silence_prob`` an agent's whole action is zero (an all-zero
    message, which some rewards treat specially). ``None`` skips that draw, which keeps the episodes of
    the scenarios whose tolerances and pinned cases were measured without it."""
    actions = {}
    for group, names in env.groups.items():
        space = env.action_space(group)
        if isinstance(space, Discrete):
            actions[group] = rng.integers(0, space.n, len(names))
            continue
        assert isinstance(space, Box)
        values = rng.uniform(-0.25, 1.25, (len(names), *space.shape)).astype(np.float32)
        if silence_prob is not None:
            silent = rng.random(len(names)) < silence_prob
            values = np.where(silent[:, None], np.float32(0.0), values)
        actions[group] = values
    return actions


def toward(env: Any, group: str, direction: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Actions of ``group`` moving along ``direction`` ``[n, 2]`` (dominant axis), in its action format."""
    axis = np.argmax(np.abs(direction), axis=1)
    sign = np.take_along_axis(direction, axis[:, None], 1)[:, 0] > 0
    move = 1 + 2 * axis + sign  # 1 left, 2 right, 3 down, 4 up
    space = env.action_space(group)
    if isinstance(space, Box):
        actions = 0.3 * rng.random((len(move), *space.shape), dtype=np.float32)
        actions[np.arange(len(move)), move] = 1.0
        return actions
    comm = rng.integers(0, space.n // 5, len(move))
    return move + 5 * comm


@dataclasses.dataclass
class EpisodeReport:
    """What one compared episode saw."""

    max_error: float = 0.0
    errors: list[float] = dataclasses.field(default_factory=list)
    """Largest absolute obs/reward error at every step."""
    ref_rewards: list[dict[str, float]] = dataclasses.field(default_factory=list)
    """mpe2's rewards at every step, for tests that check which reward terms the episode exercised."""
    probes: list[Any] = dataclasses.field(default_factory=list)
    """``probe(ref)`` after every step."""


def run_episode(
    h: Harness,
    seed: int,
    mode: Mode,
    atol: float,
    *,
    perturb_params: Callable[[Any], Any] = lambda p: p,
    perturb_state: Callable[[Any], Any] = lambda s: s,
    perturb_reference: Callable[[Any], None] = lambda ref: None,
    tamper: Tamper = lambda ts: ts,
    silence_prob: float | None = 0.0,
    policy: Policy | None = None,
    probe: Callable[[Any], Any] = lambda ref: None,
    after_step: AfterStep | None = None,
) -> EpisodeReport:
    """One whole episode side by side; raises AssertionError on any mismatch.

    ``perturb_reference`` edits mpe2's world right after its reset (both sides then start from it).
    ``perturb_state`` is applied to every state handed to our step (the injected ones and, in free mode,
    the initial one), so it can falsify scenario state such as goals.
    """
    h.ref.reset(seed=seed)
    perturb_reference(h.ref)
    state, params = state_from_mpe2(h.ref, h.env)
    state, params = perturb_state(state), perturb_params(params)
    rng = np.random.default_rng(seed)
    report = EpisodeReport()
    for t in range(h.ref.unwrapped.max_cycles):
        actions = random_actions(h.env, rng, silence_prob) if policy is None else policy(h.env, h.ref, rng)
        if mode == "injected":
            state = perturb_state(state_from_mpe2(h.ref, h.env)[0])
        before = state
        key = jax.random.fold_in(jax.random.key(seed), t)
        state, timestep = h.step(key, state, {group: jnp.asarray(a) for group, a in actions.items()}, params)
        obs, rewards, terminations, truncations, _ = h.ref.step(actions_to_mpe2(h.env, actions))
        context = f"{mode} seed={seed} step={t + 1}"
        if after_step is not None:
            state, timestep = after_step(h, before, state, timestep, params, context)
        error = assert_timestep_matches(
            h.env, tamper(timestep), obs, rewards, terminations, truncations, atol=atol, context=context
        )
        report.max_error = max(report.max_error, error)
        report.errors.append(error)
        report.ref_rewards.append(dict(rewards))
        report.probes.append(probe(h.ref))
    if h.ref.agents:
        raise AssertionError("mpe2 did not end the episode where ours truncates")
    return report


def assert_no_near_ties(
    seeds: Sequence[int],
    reports: list[EpisodeReport],
    gap_of: Callable[[Any], float],
    factor: float,
    rule: str,
) -> None:
    """Rounding decided no threshold rule: at every step, the closest approach to a threshold in mpe2's
    world (``gap_of(probe)``) exceeds ``factor`` times that step's largest error."""
    for seed, report in zip(seeds, reports, strict=True):
        for step, (probe, error) in enumerate(zip(report.probes, report.errors, strict=True), 1):
            gap = gap_of(probe)
            assert gap > factor * error, f"seed {seed} step {step}: {rule} ({gap:.2g}, error {error:.2g})"


def refuses_changed(ref: Any, env: Any, changes: list[tuple[Any, str, Any]]) -> None:
    """``state_from_mpe2`` refuses a reference whose static constants (compiled into ``env``) changed: for
    each ``(entity, attribute, value)`` in turn, that change alone raises a ValueError naming it."""
    for entity, attribute, value in changes:
        before = getattr(entity, attribute)
        setattr(entity, attribute, value)
        with pytest.raises(ValueError, match=attribute):
            state_from_mpe2(ref, env)
        setattr(entity, attribute, before)


def reset_matches(h: Harness, seed: int, atol: float) -> float:
    """Our observations of mpe2's freshly reset world equal mpe2's initial observations, and the injected
    state is float32 with a position per mpe2 entity, at step 0."""
    ref_obs, _ = h.ref.reset(seed=seed)
    state, _ = state_from_mpe2(h.ref, h.env)
    assert state.pos.dtype == jnp.float32 and state.vel.dtype == jnp.float32
    assert state.pos.shape == (len(h.ref.unwrapped.world.entities), 2) and int(state.step) == 0
    timestep = TimeStep(h.observe(state), {}, {}, {}, {}, {})
    return assert_timestep_matches(h.env, timestep, ref_obs, atol=atol, context=f"reset seed={seed}")


def one_step(
    h: Harness, ref: Any, seed: int, arrange: Callable[[Any], None], **param_overrides: Any
) -> tuple[TimeStep, tuple[Any, ...]]:
    """One no-op step of both sides from ``ref`` reset with ``seed`` and arranged by ``arrange``, through
    ``h``'s compiled step (``ref`` may be another reference with the same static shapes: constructor
    options that are params, like ``terminate_on_success``, need no new compilation). Returns our
    TimeStep and mpe2's step output."""
    ref.reset(seed=seed)
    arrange(ref)
    state, params = state_from_mpe2(ref, h.env)
    params = params.replace(**param_overrides)
    no_op = {group: np.zeros(len(names), int) for group, names in h.env.groups.items()}
    ours = {group: jnp.asarray(value, jnp.int32) for group, value in no_op.items()}
    _, timestep = h.step(jax.random.key(seed), state, ours, params)
    return timestep, ref.step(actions_to_mpe2(h.env, no_op))


def jaxmarl_space_sizes(env: Any, jaxmarl_env: Any) -> list[tuple[str, Any, Any]]:
    """``(agent, ours, jaxmarl)`` for every obs shape and action size that differs between the two."""
    differences = []
    for group, names in env.groups.items():
        obs_shape, action = env.observation_space(group).shape, env.action_space(group)
        for name in names:
            theirs_obs = tuple(jaxmarl_env.observation_space(name).shape)
            if tuple(obs_shape) != theirs_obs:
                differences.append((f"{name} obs", tuple(obs_shape), theirs_obs))
            theirs_action = jaxmarl_env.action_space(name)
            ours = action.n if isinstance(action, Discrete) else tuple(action.shape)
            theirs = theirs_action.n if hasattr(theirs_action, "n") else tuple(theirs_action.shape)
            if ours != theirs:
                differences.append((f"{name} action", ours, theirs))
    return differences


def check_jaxmarl_spaces(env: Any, jaxmarl_id: str, **jaxmarl_kwargs: Any) -> None:
    """JaxMARL's agents, in order, and their observation shapes and action sizes equal our groups'."""
    jaxmarl = pytest.importorskip("jaxmarl")
    theirs = jaxmarl.make(jaxmarl_id, **jaxmarl_kwargs)
    assert list(theirs.agents) == list(env.agents)
    assert jaxmarl_space_sizes(env, theirs) == []


# ------------------------------------------------------------------------------------------------------
# Tampering with our output, for negative controls


def swap_obs(group: str, first: list[int], second: list[int]) -> Tamper:
    """Swap two sets of observation entries of ``group`` (an ordering mistake)."""

    def tamper(ts: TimeStep) -> TimeStep:
        obs = ts.obs[group]
        return ts._replace(obs={**ts.obs, group: obs.at[:, first + second].set(obs[:, second + first])})

    return tamper


def set_obs(group: str, entries: slice, value: float) -> Tamper:
    """Overwrite observation entries of ``group`` (a dropped or constant feature)."""
    return lambda ts: ts._replace(obs={**ts.obs, group: ts.obs[group].at[:, entries].set(value)})


def shift_reward(group: str, amount: float) -> Tamper:
    return lambda ts: ts._replace(reward={**ts.reward, group: ts.reward[group] + amount})


def flip_truncation(group: str) -> Tamper:
    return lambda ts: ts._replace(truncated={**ts.truncated, group: ~ts.truncated[group]})


def output_controls(
    obs: tuple[str, Tamper], reward: tuple[str, float], truncation: str, atol: float | None = None
) -> tuple[Control, ...]:
    """The usual three tampering controls, in both modes: ``obs`` = (group, a tamper of its observations),
    ``reward`` = (group, a shift of its reward) and a flipped truncation flag of group ``truncation``;
    ``atol`` replaces the row's tolerances (a shift below the free-running one shows only at ``atol``)."""
    (obs_group, obs_tamper), (reward_group, shift) = obs, reward
    tampers = {
        ("obs", rf"obs\[{obs_group}\]: differs"): obs_tamper,
        ("reward", rf"reward\[{reward_group}\]: differs"): shift_reward(reward_group, shift),
        ("truncation", rf"truncated\[{truncation}\]: "): flip_truncation(truncation),
    }
    return tuple(Control(name, match, {"tamper": t}, atol=atol) for (name, match), t in tampers.items())


def perturbed(
    match: str, modes: tuple[Mode, ...], seeds: Sequence[int] = (0,), **fields: float
) -> tuple[Control, ...]:
    """One control per field: that param of ours changed to the given value must raise ``match``."""
    return tuple(
        Control(name, match, params(**{name: value}), modes, seeds) for name, value in fields.items()
    )


def params(**fields: Any) -> dict[str, Any]:
    """``run_episode`` keywords that perturb our params."""
    return {"perturb_params": lambda p: p.replace(**fields)}


def reward_off(group: str, amount: float, modes: tuple[Mode, ...] = MODES) -> Control:
    """Our reward of ``group`` shifted by ``amount`` must be caught."""
    return Control("reward", rf"reward\[{group}\]: differs", {"tamper": shift_reward(group, amount)}, modes)


def kind(continuous: bool) -> str:
    """A configuration's action kind, for row names."""
    return "continuous" if continuous else "discrete"


# ------------------------------------------------------------------------------------------------------
# The table's row types


@dataclasses.dataclass(frozen=True)
class Control:
    """A negative control: run with these ``run_episode`` keywords, the comparison must raise ``match``
    in every one of ``modes`` (on one of ``seeds``: several where the perturbed rule is rare)."""

    name: str
    match: str
    episode: dict[str, Any]
    modes: tuple[Mode, ...] = MODES
    seeds: Sequence[int] = (0,)
    atol: float | None = None
    """The tolerance in both modes, if not the row's."""


@dataclasses.dataclass(frozen=True)
class ParityCase:
    """One row of the parity table: a scenario in one configuration against mpe2, live."""

    name: str
    """Test id: the scenario and its configuration."""
    env_id: str
    """Our registered env id for the scenario; its registry entry names ``reference``."""
    reference: str
    """mpe2's module; its ``parallel_env`` is the reference constructor."""
    kwargs: dict[str, Any]
    """The reference constructor's arguments (our env is built from the constructed reference)."""
    seeds: Sequence[int]
    atol: float = ATOL
    """Per-step tolerance on observations and rewards with mpe2's world injected before every step."""
    free_atol: float | None = None
    """Free-running tolerance (float32 drift through contacts), if looser than ``atol``."""
    reset_atol: float = 1e-6
    """Initial observations: only the float64 -> float32 cast of positions separates the two."""
    episode: dict[str, Any] = dataclasses.field(default_factory=dict)
    """``run_episode`` keywords for every episode of the row (policy, silence, probe, after_step)."""
    reset_probe: Callable[[Harness], Any] | None = None
    """Runs after each seed's reset comparison (it may assert on the injected state) and returns what the
    seed exercised, such as the goal drawn."""
    resets_cover: Callable[[list[Any]], bool] | None = None
    """Whether the seeds' ``reset_probe`` values exercise every case the scenario has."""
    check_episodes: Callable[[Sequence[int], list[EpisodeReport]], None] | None = None
    """Assertions on a mode's episodes: the rules they must exercise, near-ties rounding could decide."""
    controls: tuple[Control, ...] = ()
    slow: bool = False
    """Outside the default suite's budget (docs/testing.md): runs under ``-m slow``."""

    def harness(self) -> Harness:
        """The row's shared pair."""
        return cached_harness(self.reference, **self.kwargs)

    def tolerance(self, mode: Mode) -> float:
        """The row's tolerance in ``mode``."""
        return self.free_atol if mode == "free" and self.free_atol is not None else self.atol
