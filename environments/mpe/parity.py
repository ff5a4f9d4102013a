"""Parity with mpe2: copy a live mpe2 world into our state, and compare transitions step by step.

mpe2 is only needed by callers (the parity tests); this module reads the reference env by duck typing,
so importing it never imports mpe2.

Each supported mpe2 scenario has one entry in ``SCENARIOS`` (keyed by mpe2's ``metadata["name"]``).
An entry knows how to build our env with the same constructor arguments, how to read the scenario's
own constants into params, and which reference options it cannot reproduce. The world constants
(``dt``, ``damping``, contact constants, ``accel``), the state copy and the static entity check are
shared by the whole family, so adding a scenario is one builder function and one table row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.types import GroupDict, TimeStep

from .base import MPEEnv
from .collect_treasure import CollectTreasure
from .physics import EntityTable, MPEParams, MPEState
from .simple import Simple
from .simple_adversary import SimpleAdversary
from .simple_crypto import SimpleCrypto
from .simple_formation import SimpleFormation
from .simple_line import SimpleLine
from .simple_push import SimplePush
from .simple_reference import SimpleReference
from .simple_speaker_listener import SimpleSpeakerListener
from .simple_spread import SimpleSpread
from .simple_tag import SimpleTag
from .simple_world_comm import SimpleWorldComm

ACCEL_WHEN_UNSET = 5.0
"""mpe2's ``_set_action`` uses this sensitivity for agents whose ``accel`` is None."""


@dataclass(frozen=True)
class ScenarioAdapter:
    """How one mpe2 scenario maps onto one of our envs."""

    make_env: Callable[[Any], MultiAgentEnv]
    """Our env built with the reference's constructor arguments, from its ``unwrapped`` raw env."""
    unsupported: Callable[[Any], list[str]]
    """Reference options this env does not reproduce (empty if the reference is supported)."""
    scenario_params: Callable[[Any], dict[str, Any]]
    """Scenario-specific param fields read from the reference (world constants are added for all)."""
    extra_state: Callable[[Any], dict[str, Any]] = lambda raw: {}
    """Scenario state read from the reference world (goal indices and the like), as our ``extra``."""


def _simple_spread_env(raw: Any) -> MultiAgentEnv:
    world = raw.world
    return SimpleSpread(
        num_agents=len(world.agents),
        num_landmarks=len(world.landmarks),
        local_ratio=float(raw.local_ratio),
        max_cycles=int(raw.max_cycles),
        continuous_actions=bool(raw.continuous_actions),
    )


def _simple_spread_unsupported(raw: Any) -> list[str]:
    scenario = raw.scenario
    problems = []
    # Options added by mpe2 after simple_spread_v3 that our env does not model (see the README card).
    for option, default in [
        ("curriculum", False),
        ("terminate_on_success", False),
        ("num_agent_neighbors", None),
        ("num_landmark_neighbors", None),
    ]:
        value = getattr(scenario, option, default)
        if value != default:
            problems.append(f"{option}={value!r}")
    if not all(agent.silent for agent in raw.world.agents):
        problems.append("agents that communicate")
    if raw.local_ratio is None:
        problems.append("local_ratio=None")
    return problems


def _landmark_index(world: Any, landmark: Any) -> int:
    """Index of ``landmark`` (an object of the reference world) among ``world.landmarks``."""
    return next(i for i, candidate in enumerate(world.landmarks) if candidate is landmark)


def _simple_speaker_listener_env(raw: Any) -> MultiAgentEnv:
    return SimpleSpeakerListener(
        max_cycles=int(raw.max_cycles), continuous_actions=bool(raw.continuous_actions)
    )


def _simple_speaker_listener_unsupported(raw: Any) -> list[str]:
    speaker, listener = raw.world.agents
    # The goal is stored as a landmark index for the listener, so any other pairing is not modelled.
    return [] if speaker.goal_a is listener else ["a speaker whose goal agent is not the listener"]


def _simple_tag_env(raw: Any) -> MultiAgentEnv:
    agents = raw.world.agents
    return SimpleTag(
        num_good=sum(not a.adversary for a in agents),
        num_adversaries=sum(a.adversary for a in agents),
        num_obstacles=len(raw.world.landmarks),
        max_cycles=int(raw.max_cycles),
        continuous_actions=bool(raw.continuous_actions),
    )


def _simple_tag_unsupported(raw: Any) -> list[str]:
    scenario = raw.scenario
    problems = []
    # mpe2 options added after simple_tag_v3 that our env does not model (see the README card).
    for option, default in [
        ("curriculum", False),
        ("terminate_on_success", False),
        ("num_agent_neighbors", None),
        ("num_landmark_neighbors", None),
    ]:
        value = getattr(scenario, option, default)
        if value != default:
            problems.append(f"{option}={value!r}")
    return problems


def _simple_reference_env(raw: Any) -> MultiAgentEnv:
    return SimpleReference(
        local_ratio=float(raw.local_ratio),
        max_cycles=int(raw.max_cycles),
        continuous_actions=bool(raw.continuous_actions),
    )


def _simple_reference_unsupported(raw: Any) -> list[str]:
    first, second = raw.world.agents
    # Each agent's goal is stored as a landmark index for the other agent; other pairings are not modelled.
    paired = first.goal_a is second and second.goal_a is first
    return [] if paired else ["agents whose goal agent is not the other agent"]


def _simple_reference_goals(raw: Any) -> dict[str, Any]:
    world = raw.world
    return {"goal": np.array([_landmark_index(world, agent.goal_b) for agent in world.agents], np.int32)}


def _collect_treasure_env(raw: Any) -> MultiAgentEnv:
    world = raw.world
    return CollectTreasure(
        num_collectors=int(world.num_collectors),
        num_deposits=int(world.num_deposits),
        num_treasures=len(world.landmarks),
        max_cycles=int(raw.max_cycles),
        continuous_actions=bool(raw.continuous_actions),
    )


def _collect_treasure_unsupported(raw: Any) -> list[str]:
    world = raw.world
    problems = []
    # Every dead treasure respawns on the next step; a lower respawn_prob would need a per-step draw.
    if any(treasure.respawn_prob != 1.0 for treasure in world.landmarks):
        problems.append("respawn_prob != 1")
    deposits = [agent for agent in world.agents if not agent.collector]
    if [deposit.d_i for deposit in deposits] != list(range(len(deposits))):
        problems.append("deposits that do not accept types 0 .. D-1 in order")
    if list(world.treasure_types) != list(range(len(deposits))):
        problems.append("treasure types other than 0 .. D-1")
    return problems


def _collect_treasure_state(raw: Any) -> dict[str, Any]:
    """Holdings, treasure liveness and types, and the cached event reward (0 before the first step)."""
    world, scenario = raw.world, raw.scenario
    cached = [getattr(scenario, f"_cached_global_{event}", None) for event in ("collecting", "deposit")]
    holding = [-1 if agent.holding is None else agent.holding for agent in world.agents if agent.collector]
    return {
        "holding": np.array(holding, np.int32),
        "alive": np.array([treasure.alive for treasure in world.landmarks], bool),
        "treasure_type": np.array([treasure.type for treasure in world.landmarks], np.int32),
        "event_reward": np.float32(sum(value or 0.0 for value in cached)),
    }


def _simple_crypto_env(raw: Any) -> MultiAgentEnv:
    return SimpleCrypto(max_cycles=int(raw.max_cycles), continuous_actions=bool(raw.continuous_actions))


def _simple_crypto_key_index(world: Any) -> int | None:
    """Index of the landmark whose colour is Alice's key (mpe2 stores the colour, not the landmark)."""
    key = world.agents[2].key
    matches = [i for i, landmark in enumerate(world.landmarks) if np.array_equal(landmark.color, key)]
    return matches[0] if len(matches) == 1 else None


def _simple_crypto_unsupported(raw: Any) -> list[str]:
    world = raw.world
    problems = []
    # Our goal and key are landmark indices whose colours are the one-hots of length dim_c.
    if any(not np.array_equal(lm.color, np.eye(world.dim_c)[i]) for i, lm in enumerate(world.landmarks)):
        problems.append("landmark colours other than one-hots")
    if any(agent.goal_a is not world.agents[0].goal_a for agent in world.agents):
        problems.append("agents with different goals")
    if _simple_crypto_key_index(world) is None:
        problems.append("a key that is not one landmark's colour")
    return problems


def _simple_crypto_state(raw: Any) -> dict[str, Any]:
    world = raw.world
    key = _simple_crypto_key_index(world)
    assert key is not None, "refused by _simple_crypto_unsupported"
    return {"goal": np.int32(_landmark_index(world, world.agents[0].goal_a)), "key": np.int32(key)}


def _simple_world_comm_env(raw: Any) -> MultiAgentEnv:
    world = raw.world
    return SimpleWorldComm(
        num_good=sum(not a.adversary for a in world.agents),
        num_adversaries=sum(a.adversary for a in world.agents),
        num_obstacles=len(world.landmarks) - len(world.food) - len(world.forests),
        num_food=len(world.food),
        max_cycles=int(raw.max_cycles),
        num_forests=len(world.forests),
        continuous_actions=bool(raw.continuous_actions),
    )


def _simple_formation_env(raw: Any) -> MultiAgentEnv:
    return SimpleFormation(
        num_agents=len(raw.world.agents),
        max_cycles=int(raw.max_cycles),
        continuous_actions=bool(raw.continuous_actions),
        terminate_on_success=bool(raw.scenario.terminate_on_success),
    )


def _shape_unsupported(raw: Any) -> list[str]:
    """simple_formation and simple_line: the reward must be the global one alone, as mpe2 builds them."""
    return [] if raw.local_ratio == 0 else [f"local_ratio={raw.local_ratio!r}"]


def _shape_params(raw: Any) -> dict[str, Any]:
    scenario = raw.scenario
    return {
        "success_distance": float(scenario.DIST_THRESHOLD),
        "terminate_on_success": bool(scenario.terminate_on_success),
    }


def _simple_formation_params(raw: Any) -> dict[str, Any]:
    return {**_shape_params(raw), "target_radius": float(raw.scenario.TARGET_RADIUS)}


def _simple_line_env(raw: Any) -> MultiAgentEnv:
    return SimpleLine(
        num_agents=len(raw.world.agents),
        max_cycles=int(raw.max_cycles),
        continuous_actions=bool(raw.continuous_actions),
        terminate_on_success=bool(raw.scenario.terminate_on_success),
    )


def _shared_goal_unsupported(raw: Any) -> list[str]:
    """simple_push and simple_adversary: one goal index is stored, so every agent must share the goal."""
    goals = {id(agent.goal_a) for agent in raw.world.agents}
    return [] if len(goals) == 1 else ["agents with different goal landmarks"]


def _simple_adversary_env(raw: Any) -> MultiAgentEnv:
    return SimpleAdversary(
        num_good=sum(not agent.adversary for agent in raw.world.agents),
        max_cycles=int(raw.max_cycles),
        continuous_actions=bool(raw.continuous_actions),
    )


def _simple_adversary_unsupported(raw: Any) -> list[str]:
    scenario = raw.scenario
    # mpe2's partial-observability options (added after v3) are not modelled; see the README card.
    problems = [
        f"{option}={getattr(scenario, option)!r}"
        for option in ("num_agent_neighbors", "num_landmark_neighbors")
        if getattr(scenario, option, None) is not None
    ]
    return problems + _shared_goal_unsupported(raw)


SCENARIOS: dict[str, ScenarioAdapter] = {
    "simple_v3": ScenarioAdapter(
        make_env=lambda raw: Simple(int(raw.max_cycles), bool(raw.continuous_actions)),
        unsupported=lambda raw: [],
        scenario_params=lambda raw: {},
    ),
    "simple_push_v3": ScenarioAdapter(
        make_env=lambda raw: SimplePush(int(raw.max_cycles), bool(raw.continuous_actions)),
        unsupported=_shared_goal_unsupported,
        scenario_params=lambda raw: {},
        extra_state=lambda raw: {"goal": np.int32(_landmark_index(raw.world, raw.world.agents[0].goal_a))},
    ),
    "simple_adversary_v3": ScenarioAdapter(
        make_env=_simple_adversary_env,
        unsupported=_simple_adversary_unsupported,
        scenario_params=lambda raw: {},
        extra_state=lambda raw: {"goal": np.int32(_landmark_index(raw.world, raw.world.agents[0].goal_a))},
    ),
    "simple_spread_v3": ScenarioAdapter(
        make_env=_simple_spread_env,
        unsupported=_simple_spread_unsupported,
        scenario_params=lambda raw: {"local_ratio": float(raw.local_ratio)},
    ),
    "simple_speaker_listener_v4": ScenarioAdapter(
        make_env=_simple_speaker_listener_env,
        unsupported=_simple_speaker_listener_unsupported,
        scenario_params=lambda raw: {},
        extra_state=lambda raw: {"goal": np.int32(_landmark_index(raw.world, raw.world.agents[0].goal_b))},
    ),
    "simple_reference_v3": ScenarioAdapter(
        make_env=_simple_reference_env,
        unsupported=_simple_reference_unsupported,
        scenario_params=lambda raw: {"local_ratio": float(raw.local_ratio)},
        extra_state=_simple_reference_goals,
    ),
    "simple_crypto_v3": ScenarioAdapter(
        make_env=_simple_crypto_env,
        unsupported=_simple_crypto_unsupported,
        scenario_params=lambda raw: {},
        extra_state=_simple_crypto_state,
    ),
    "simple_tag_v3": ScenarioAdapter(
        make_env=_simple_tag_env,
        unsupported=_simple_tag_unsupported,
        scenario_params=lambda raw: {},
    ),
    "collect_treasure_v1": ScenarioAdapter(
        make_env=_collect_treasure_env,
        unsupported=_collect_treasure_unsupported,
        scenario_params=lambda raw: {},
        extra_state=_collect_treasure_state,
    ),
    "simple_world_comm_v3": ScenarioAdapter(
        make_env=_simple_world_comm_env,
        unsupported=lambda raw: [],
        scenario_params=lambda raw: {},
    ),
    "simple_formation_v1": ScenarioAdapter(
        make_env=_simple_formation_env,
        unsupported=_shape_unsupported,
        scenario_params=_simple_formation_params,
    ),
    "simple_line_v1": ScenarioAdapter(
        make_env=_simple_line_env,
        unsupported=_shape_unsupported,
        scenario_params=lambda raw: {**_shape_params(raw), "line_length": float(raw.scenario.TOTAL_SEP)},
        extra_state=lambda raw: {"targets": np.array(raw.scenario._expected_positions, np.float32)},
    ),
}
"""Supported mpe2 scenarios, keyed by mpe2's ``metadata["name"]``."""


def _scenario_name(raw: Any) -> str | None:
    """The ``SCENARIOS`` key of an mpe2 raw env, read from its class's module (``mpe2.simple_spread.…``).

    Not from ``metadata["name"]`` alone: mpe2's raw envs share one class-level ``metadata`` dict and each
    constructor rewrites its name, so after building a ``simple_tag`` env a ``simple_spread`` one reports
    ``simple_tag_v3``.
    """
    parts = type(raw).__module__.split(".")
    if len(parts) >= 2 and parts[0] == "mpe2":
        found = [key for key in SCENARIOS if key.rsplit("_v", 1)[0] == parts[1]]
        if len(found) == 1:
            return found[0]
    return getattr(raw, "metadata", {}).get("name")


def _adapter(ref_env: Any) -> tuple[Any, ScenarioAdapter]:
    raw = getattr(ref_env, "unwrapped", ref_env)
    name = _scenario_name(raw)
    if name not in SCENARIOS:
        raise ValueError(
            f"state_from_mpe2 supports the mpe2 scenarios {sorted(SCENARIOS)}, got {name!r} "
            f"({type(raw).__module__}.{type(raw).__name__})"
        )
    adapter = SCENARIOS[name]
    problems = adapter.unsupported(raw)
    if problems:
        raise ValueError(f"mpe2 {name} with {', '.join(problems)} is not reproduced by our env")
    return raw, adapter


def _world_params(raw: Any, env: MultiAgentEnv) -> dict[str, Any]:
    world = raw.world
    # An agent whose spec fixes its accel compiles it in (like max_speed); the rest share params.accel.
    fixed = {s.name: s.accel for s in getattr(env, "agent_specs", ()) if s.accel is not None}
    accels: set[float] = set()
    for agent in (a for a in world.agents if a.movable):
        accel = ACCEL_WHEN_UNSET if agent.accel is None else float(agent.accel)
        if agent.name not in fixed:
            accels.add(accel)
        elif np.float32(accel) != np.float32(fixed[agent.name]):
            ours = fixed[agent.name]
            raise ValueError(f"reference agent {agent.name} has accel {accel}, ours is fixed at {ours}")
    if len(accels) > 1:
        raise ValueError(f"agents of the reference have different accel values {sorted(accels)}")
    noisy = [a.name for a in world.agents if a.u_noise or a.c_noise]
    if noisy:
        raise ValueError(f"reference agents {noisy} have action noise, which our env does not model")
    return {
        "max_steps": int(raw.max_cycles),
        "dt": float(world.dt),
        "damping": float(world.damping),
        "contact_force": float(world.contact_force),
        "contact_margin": float(world.contact_margin),
        "accel": accels.pop() if accels else ACCEL_WHEN_UNSET,
    }


def _check_entities(world: Any, table: EntityTable) -> None:
    """Static properties are compiled into our env, so a reference that differs must be refused."""
    entities = world.entities
    if len(entities) != table.num_entities:
        raise ValueError(f"reference has {len(entities)} entities, our env {table.num_entities}")
    reference = {
        "size": [e.size for e in entities],
        "movable": [e.movable for e in entities],
        "collide": [e.collide for e in entities],
        "mass": [e.mass for e in entities],
        "max_speed": [np.inf if e.max_speed is None else e.max_speed for e in entities],
    }
    for field, reference_values in reference.items():
        ours = np.asarray(getattr(table, field))
        # Compared in our dtype: mpe2's 0.15 is a float64 that our float32 table can only round to.
        values = np.asarray(reference_values).astype(ours.dtype)
        if not np.array_equal(ours, values):
            raise ValueError(f"reference entity {field} {values.tolist()} differs from ours {ours.tolist()}")


def make_matching_env(ref_env: Any) -> MultiAgentEnv:
    """Our env built with the same constructor arguments as ``ref_env`` (an mpe2 parallel or AEC env)."""
    raw, adapter = _adapter(ref_env)
    return adapter.make_env(raw)


def state_from_mpe2(ref_env: Any, env: MultiAgentEnv | None = None) -> tuple[MPEState, MPEParams]:
    """Our per-env state (float32, no batch axis) and params copied from a live mpe2 env.

    Valid right after ``ref_env.reset(seed=...)`` and mid-episode (the step counter is copied). Every
    constant is read from the reference world, so a perturbed reference gives perturbed params.
    Scenario state (goal and key indices) goes into ``state.extra`` through the adapter's
    ``extra_state``. ``env`` defaults to ``make_matching_env(ref_env)``; its static entity properties
    must equal the reference's. Raises ValueError for scenarios or options this module cannot reproduce.
    """
    raw, adapter = _adapter(ref_env)
    env = adapter.make_env(raw) if env is None else env
    world = raw.world
    table, base_params = getattr(env, "entities", None), env.default_params
    if not isinstance(table, EntityTable) or not isinstance(base_params, MPEParams):
        raise TypeError(f"{type(env).__name__} is not a particle-world env (no EntityTable or MPEParams)")
    _check_entities(world, table)
    params = dataclasses.replace(base_params, **_world_params(raw, env), **adapter.scenario_params(raw))
    entities = world.entities
    state = MPEState(
        pos=jnp.asarray(np.array([e.state.p_pos for e in entities], np.float32)),
        vel=jnp.asarray(np.array([e.state.p_vel for e in entities], np.float32)),
        comm=jnp.asarray(np.array([a.state.c for a in world.agents], np.float32)),
        step=jnp.asarray(raw.steps, jnp.int32),
        extra={name: jnp.asarray(value) for name, value in adapter.extra_state(raw).items()},
    )
    return state, params


def actions_to_mpe2(env: MultiAgentEnv, actions: GroupDict) -> dict[str, Any]:
    """Our per-env ``{group: [n, ...]}`` actions as mpe2's ``{agent_name: action}``."""
    out: dict[str, Any] = {}
    for group, names in env.groups.items():
        group_actions = np.asarray(actions[group])
        for i, name in enumerate(names):
            action = group_actions[i]
            out[name] = int(action) if action.ndim == 0 else action
    return out


def _stack(env: MultiAgentEnv, per_agent: Mapping[str, Any], dtype: Any) -> dict[str, np.ndarray]:
    return {
        group: np.stack([np.asarray(per_agent[name], dtype) for name in names])
        for group, names in env.groups.items()
    }


def _compare(label: str, actual: np.ndarray, expected: np.ndarray, atol: float | None) -> float:
    """Raise on mismatch (exact when ``atol`` is None); return the largest absolute error."""
    if actual.shape != expected.shape:
        raise AssertionError(f"{label}: shape {actual.shape} != mpe2 {expected.shape}")
    if atol is None:
        if not np.array_equal(actual, expected):
            raise AssertionError(f"{label}: {actual.tolist()} != mpe2 {expected.tolist()}")
        return 0.0
    error = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    error = np.where(np.isnan(error), np.inf, error)  # NaN must fail, not compare False and pass
    max_error = float(np.max(error, initial=0.0))
    if max_error > atol:
        where = np.unravel_index(np.argmax(error), error.shape)
        raise AssertionError(
            f"{label}: differs from mpe2 by {max_error:.3g} > {atol:.3g} at {tuple(map(int, where))}: "
            f"ours {actual[where]!r}, mpe2 {expected[where]!r}"
        )
    return max_error


def assert_timestep_matches(
    env: MultiAgentEnv,
    timestep: TimeStep,
    ref_obs: Mapping[str, Any],
    ref_rewards: Mapping[str, Any] | None = None,
    ref_terminations: Mapping[str, Any] | None = None,
    ref_truncations: Mapping[str, Any] | None = None,
    atol: float = 1e-5,
    context: str = "",
) -> float:
    """Raise AssertionError unless our per-env ``timestep`` equals mpe2's per-agent dicts.

    Observations and rewards must agree within ``atol`` (absolute), flags exactly. ``None`` skips a
    field (mpe2's ``reset`` gives no rewards or flags). Returns the largest absolute obs/reward error.
    """
    worst = 0.0
    fields: list[tuple[str, GroupDict, Mapping[str, Any] | None, Any, float | None]] = [
        ("obs", timestep.obs, ref_obs, np.float32, atol),
        ("reward", timestep.reward, ref_rewards, np.float64, atol),
        ("terminated", timestep.terminated, ref_terminations, bool, None),
        ("truncated", timestep.truncated, ref_truncations, bool, None),
    ]
    for field, ours, ref_by_agent, dtype, tolerance in fields:
        if ref_by_agent is None:
            continue
        missing = [name for name in env.agents if name not in ref_by_agent]
        if missing:
            raise AssertionError(f"{context}: mpe2 gave no {field} for {missing}")
        for group, expected in _stack(env, ref_by_agent, dtype).items():
            label = f"{context}: {field}[{group}]"
            worst = max(worst, _compare(label, np.asarray(ours[group]), expected, tolerance))
    return worst


def observe(env: MultiAgentEnv, state: MPEState) -> GroupDict:
    """Observations of a per-env state, e.g. one from ``state_from_mpe2``, without a reset or step.

    Uses the env's batch-minor ``observe`` on a batch of one.
    """
    if not isinstance(env, MPEEnv):
        raise TypeError(f"{type(env).__name__} is not a particle-world env")
    batched = jax.tree.map(lambda x: jnp.asarray(x)[..., None], state)
    obs = env.observe(batched, env.default_params)
    return {group: value[..., 0] for group, value in obs.items()}
