"""Live mpe2 parity harness for any MPE scenario with any groups (used by the per-scenario parity tests).

``run_episode`` steps an mpe2 parallel env and our matching env side by side with the same random
actions for a whole episode and raises AssertionError on the first mismatch in observations, rewards,
terminations or truncations. In ``injected`` mode mpe2's world is copied into our state before every
step (each step's error is its own); in ``free`` mode our env runs from its own state.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.spaces import Box, Discrete
from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.environments.mpe.parity import (
    actions_to_mpe2,
    assert_timestep_matches,
    make_matching_env,
    observe,
    state_from_mpe2,
)

Mode = Literal["injected", "free"]
Tamper = Callable[[TimeStep], TimeStep]
Policy = Callable[[Any, Any, np.random.Generator], dict[str, np.ndarray]]
"""``policy(env, ref, rng) -> {group: actions}``, reading mpe2's world; replaces random actions when given."""


@dataclasses.dataclass
class Harness:
    """One reference env and our matching env, with our step compiled once."""

    ref: Any
    env: Any
    step: Callable[..., tuple[Any, TimeStep]]
    observe: Callable[[Any], dict[str, jax.Array]]
    traces: list[int]
    """How often ``step`` was traced; params are a traced argument, so perturbed params must not retrace."""


def make_harness(reference_module: Any, **kwargs: Any) -> Harness:
    """mpe2's ``reference_module.parallel_env(**kwargs)`` and our env built from it."""
    ref = reference_module.parallel_env(**kwargs)
    env = make_matching_env(ref)
    traces = [0]

    def counted_step(*args: Any) -> tuple[Any, TimeStep]:
        traces[0] += 1
        return env.step(*args)

    return Harness(ref, env, jax.jit(counted_step), jax.jit(functools.partial(observe, env)), traces)


def random_actions(env: Any, rng: np.random.Generator, silence_prob: float = 0.0) -> dict[str, np.ndarray]:
    """Uniform legal actions per group. Continuous actions are drawn in ``[-0.25, 1.25]`` so that
    clipping is exercised; with probability ``silence_prob`` an agent's whole action is zero (an
    all-zero message, which some rewards treat specially)."""
    actions = {}
    for group, names in env.groups.items():
        space = env.action_space(group)
        if isinstance(space, Discrete):
            actions[group] = rng.integers(0, space.n, len(names))
        else:
            assert isinstance(space, Box)
            values = rng.uniform(-0.25, 1.25, (len(names), *space.shape)).astype(np.float32)
            silent = rng.random(len(names)) < silence_prob
            actions[group] = np.where(silent[:, None], np.float32(0.0), values)
    return actions


def run_episode(
    h: Harness,
    seed: int,
    mode: Mode,
    atol: float,
    *,
    perturb_params: Callable[[Any], Any] = lambda p: p,
    perturb_state: Callable[[Any], Any] = lambda s: s,
    tamper: Tamper = lambda ts: ts,
    silence_prob: float = 0.0,
    policy: Policy | None = None,
) -> float:
    """One whole episode side by side; returns the largest obs/reward error, raises on any mismatch.

    ``perturb_state`` is applied to every state handed to our step (the injected ones and, in free mode,
    the initial one), so it can falsify scenario state such as goals.
    """
    h.ref.reset(seed=seed)
    state, params = state_from_mpe2(h.ref, h.env)
    state, params = perturb_state(state), perturb_params(params)
    rng = np.random.default_rng(seed)
    key = jax.random.key(seed)
    worst = 0.0
    for t in range(h.ref.unwrapped.max_cycles):
        actions = random_actions(h.env, rng, silence_prob) if policy is None else policy(h.env, h.ref, rng)
        if mode == "injected":
            state = perturb_state(state_from_mpe2(h.ref, h.env)[0])
        jax_actions = {group: jnp.asarray(value) for group, value in actions.items()}
        state, timestep = h.step(key, state, jax_actions, params)
        obs, rewards, terminations, truncations, _ = h.ref.step(actions_to_mpe2(h.env, actions))
        context = f"{mode} seed={seed} step={t + 1}"
        error = assert_timestep_matches(
            h.env, tamper(timestep), obs, rewards, terminations, truncations, atol=atol, context=context
        )
        worst = max(worst, error)
    if h.ref.agents:
        raise AssertionError("mpe2 did not end the episode where ours truncates")
    return worst


def reset_matches(h: Harness, seed: int, atol: float) -> float:
    """Our observations of mpe2's freshly reset world equal mpe2's initial observations."""
    ref_obs, _ = h.ref.reset(seed=seed)
    state, _ = state_from_mpe2(h.ref, h.env)
    timestep = TimeStep(h.observe(state), {}, {}, {}, {}, {})
    return assert_timestep_matches(h.env, timestep, ref_obs, atol=atol, context=f"reset seed={seed}")


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
