"""``SMAX``: SMAC-style unit micromanagement on a continuous map, batch-native (env batch last).

One agent step = ``substeps`` world sub-steps of ``params.time_per_substep`` seconds (8 x 1/16 s, as in
JaxMARL's SMAX), with the chosen action held throughout. Allies are the ``allies`` group. The enemy team
is played by the built-in heuristic (``enemy="heuristic"``), by a policy you pass in
(``enemy=callable``, its parameters in ``SMAXParams.enemy_params``), or is a second learning group
(``enemy="agents"``, for self-play). The README card documents actions, observations, world state,
rewards and episode ends; ``game.py`` holds the rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.accelerated import unrolled_off_cpu
from jaxmarl_suite.core.env import BatchNativeEnv, per_env
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep

from .game import (
    FIRST_MOVE,
    FIRST_TARGET,
    MOVE_DIRECTIONS,
    NUM_MOVES,
    Combat,
    Geometry,
    SMAXState,
    UnitStats,
    geometry,
    separate,
    sub_step,
    unit_any,
    unit_sum,
)
from .game import NOOP as NOOP  # re-exported: code that imports the action layout from smax.py still works
from .game import STOP as STOP
from .heuristic import heuristic_actions
from .rendering import render_units
from .scenarios import RACE_POOLS, JaxMARLScenario, Scenario, resolve_scenario
from .units import NUM_UNIT_TYPES, UNIT_TYPES, unit_index, unit_table

Array = jax.Array

EnemyPolicy = Callable[[Any, Array, Array, Array], Array]
"""``policy(enemy_params, obs [B, n, obs_dim], action_mask [B, n, A], keys [B]) -> actions [B, n] int``;
env ``i`` samples with ``keys[i]``."""

UNIT_FEATURES = (
    "visible",
    "distance",
    "relative_x",
    "relative_y",
    "actionable",
    "health",
    "shield",
    "cooldown",
    *(f"type_{u.name}" for u in UNIT_TYPES),
)
LAST_ACTION_FEATURES = ("last_move_x", "last_move_y", "last_attacked")
OWN_FEATURES = (
    "health",
    "shield",
    "position_x",
    "position_y",
    "cooldown",
    *(f"type_{u.name}" for u in UNIT_TYPES),
)
STATE_FEATURES = (
    "alive",
    "health",
    "shield",
    "position_x",
    "position_y",
    "cooldown",
    *(f"type_{u.name}" for u in UNIT_TYPES),
    *LAST_ACTION_FEATURES,
)


@struct.dataclass
class SMAXParams(EnvParams):
    """Traceable SMAX parameters (SMAC's reward constants by default)."""

    max_steps: int = 100
    """Episode limit in agent steps (the scenario's by default)."""
    time_per_substep: float = 1.0 / 16.0
    """Seconds per world sub-step."""
    damage_reward: float = 1.0
    """Reward per point of enemy health or shield removed."""
    kill_reward: float = 10.0
    """Reward per enemy killed (SMAC's ``reward_death_value``)."""
    win_reward: float = 200.0
    """Reward for winning (SMAC's ``reward_win``)."""
    reward_scale: float = 20.0
    """A perfect episode (all damage, all kills, the win) sums to this (SMAC's ``reward_scale_rate``)."""
    shield_regen_rate: float = 2.0
    """Shield points per second once regenerating."""
    shield_regen_delay: float = 10.0
    """Seconds without damage before shields regenerate."""
    enemy_params: Any = None
    """Parameters of a learned enemy policy (``enemy=callable``); traced, so self-play can swap them."""


def _check_jaxmarl_kwargs(obs_last_actions: bool, see_enemy_actions: bool | None, attack_mode: str) -> None:
    """JaxMARL's SMAX keywords: accept the values that mean the same here, name the difference otherwise."""
    if see_enemy_actions is not None:
        if not isinstance(see_enemy_actions, bool):
            raise TypeError(f"see_enemy_actions must be a bool, got {type(see_enemy_actions).__name__}")
        if not see_enemy_actions:
            raise ValueError(
                "see_enemy_actions=False (JaxMARL: hide only the opponents' last actions) has no equivalent: "
                "SMAX shows every visible unit's last action, or nobody's with obs_last_actions=False"
            )
        if not obs_last_actions:
            raise ValueError("see_enemy_actions=True needs obs_last_actions=True (last actions observed)")
    if attack_mode != "closest":
        raise ValueError(
            f"attack_mode={attack_mode!r} is not supported: the SMAX heuristic keeps its last target and "
            "otherwise attacks the closest one, which is JaxMARL's attack_mode='closest'"
        )



class SMAX(BatchNativeEnv):
    """SMAX on one scenario. Groups: ``allies`` (``ally_0..``) and, with ``enemy="agents"``, ``enemies``."""

    reference = None
    render_fps = 4  # a step is 0.5 s of game time: twice game speed (2 fps is too jerky to follow)
    observation_info = ("world_state",)

    def __init__(
        self,
        scenario: str | Scenario | JaxMARLScenario = "3m",
        enemy: str | EnemyPolicy = "heuristic",
        enemy_params: Any = None,
        substeps: int = 8,
        obs_last_actions: bool = True,
        max_steps: int | None = None,
        walls_cause_death: bool = False,
        see_enemy_actions: bool | None = None,
        attack_mode: str = "closest",
    ) -> None:
        self.scenario_name, self.scenario = resolve_scenario(scenario)
        _check_jaxmarl_kwargs(obs_last_actions, see_enemy_actions, attack_mode)
        if not isinstance(walls_cause_death, bool):
            raise TypeError(f"walls_cause_death must be a bool, got {type(walls_cause_death).__name__}")
        self.walls_cause_death = walls_cause_death
        if isinstance(enemy, str):
            if enemy not in ("heuristic", "agents"):
                raise ValueError(f"enemy must be 'heuristic', 'agents' or a policy callable, got {enemy!r}")
        elif not callable(enemy):
            raise TypeError(f"enemy must be 'heuristic', 'agents' or a callable, got {type(enemy).__name__}")
        if callable(enemy) and enemy_params is None:
            raise ValueError("a learned enemy policy needs enemy_params (its network parameters)")
        if not isinstance(substeps, int) or isinstance(substeps, bool) or substeps < 1:
            raise ValueError(f"substeps must be a positive int, got {substeps!r}")
        if max_steps is not None and (
            not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1
        ):
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        self.enemy = enemy
        self.substeps = substeps
        self.obs_last_actions = bool(obs_last_actions)
        scenario_ = self.scenario
        self.num_allies, self.num_enemies = scenario_.num_allies, scenario_.num_enemies
        self.num_units = self.num_allies + self.num_enemies
        self.map_width, self.map_height = float(scenario_.map_width), float(scenario_.map_height)
        self.groups = {"allies": tuple(f"ally_{i}" for i in range(self.num_allies))}
        if enemy == "agents":
            self.groups["enemies"] = tuple(f"enemy_{i}" for i in range(self.num_enemies))
        self.table = unit_table()
        self.procedural = scenario_.race is not None
        self.fixed_types = np.array([unit_index(n) for n in scenario_.unit_types()], np.int32)
        self.team_rows = (np.arange(self.num_allies), np.arange(self.num_allies, self.num_units))
        self.may_heal = (scenario_.may_heal(0), scenario_.may_heal(1))
        sizes = (self.num_allies, self.num_enemies)
        self.num_slots = tuple(
            max(sizes[1 - t], sizes[t]) if self.may_heal[t] else sizes[1 - t] for t in (0, 1)
        )
        self.unit_feature_names = UNIT_FEATURES + (LAST_ACTION_FEATURES if self.obs_last_actions else ())
        self._params = SMAXParams(
            max_steps=scenario_.max_steps if max_steps is None else max_steps, enemy_params=enemy_params
        )

    # ----------------------------------------------------------------------------------------------
    # Spaces

    @property
    def default_params(self) -> SMAXParams:
        """SMAC's reward constants and the scenario's episode limit."""
        return self._params

    def _team(self, group: str) -> int:
        if group not in self.groups:
            raise KeyError(f"unknown group {group!r}; this env has {list(self.groups)}")
        return 0 if group == "allies" else 1

    def obs_dim(self, team: int) -> int:
        """Observation length of one agent of ``team``: other units' features, then its own."""
        sizes = (self.num_allies, self.num_enemies)
        return (sizes[team] - 1 + sizes[1 - team]) * len(self.unit_feature_names) + len(OWN_FEATURES)

    def num_actions(self, team: int) -> int:
        """No-op, stop, four moves and one action per target slot."""
        return FIRST_TARGET + self.num_slots[team]

    def observation_space(self, group: str) -> Space:
        """``Box(-1, 1, (obs_dim,))``; every feature is normalised."""
        return Box(-1.0, 1.0, (self.obs_dim(self._team(group)),))

    def action_space(self, group: str) -> Space:
        """``Discrete(6 + target slots)``."""
        return Discrete(self.num_actions(self._team(group)))

    def world_state_space(self) -> Box:
        """The global state for centralised critics: every unit's features (allies first), then time."""
        return Box(-1.0, 1.0, (self.num_units * len(STATE_FEATURES) + 1,))

    # ----------------------------------------------------------------------------------------------
    # Unit statistics

    def unit_stats(self, unit_type: Array) -> UnitStats:
        """Per-unit statistics; fixed scenarios use constants (no lookup), procedural ones a one-hot."""
        names = (
            "health",
            "shield",
            "damage",
            "attack_range",
            "sight_range",
            "speed",
            "cooldown",
            "radius",
            "heal_rate",
        )
        if not self.procedural:
            values = {n: jnp.asarray(getattr(self.table, n)[self.fixed_types][:, None]) for n in names}
            heals = jnp.asarray(self.table.heals[self.fixed_types][:, None])
            return UnitStats(**values, heals=heals)
        one_hot = (unit_type[:, None, :] == jnp.arange(NUM_UNIT_TYPES)[None, :, None]).astype(jnp.float32)
        values = {n: unit_sum(one_hot * jnp.asarray(getattr(self.table, n))[None, :, None], 1) for n in names}
        return UnitStats(**values, heals=values["heal_rate"] > 0)

    # ----------------------------------------------------------------------------------------------
    # Reset

    def _draw_fixed(self, key: Array) -> tuple[Array, Array]:
        ally_key, enemy_key = jax.random.split(key)
        width, height = self.map_width, self.map_height
        allies = jnp.array([width / 4, height / 2]) + jax.random.uniform(
            ally_key, (self.num_allies, 2), minval=-2, maxval=2
        )
        enemies = jnp.array([3 * width / 4, height / 2]) + jax.random.uniform(
            enemy_key, (self.num_enemies, 2), minval=-2, maxval=2
        )
        return jnp.concatenate([allies, enemies]), jnp.asarray(self.fixed_types)

    def _draw_procedural(self, key: Array) -> tuple[Array, Array]:
        assert self.scenario.race is not None
        pool = RACE_POOLS[self.scenario.race]
        pool_types = jnp.array([unit_index(n) for n in pool], jnp.int32)
        logits = jnp.log(jnp.array(list(pool.values()), jnp.float32))
        type_key, extra_key, layout_key, pos_key = jax.random.split(key, 4)
        na, ne = self.num_allies, self.num_enemies
        allies = pool_types[jax.random.categorical(type_key, logits, shape=(na,))]
        extra = pool_types[jax.random.categorical(extra_key, logits, shape=(max(ne - na, 0),))]
        enemies = jnp.concatenate([allies[:ne], extra])
        surround = jax.random.uniform(layout_key) < 0.5
        pos = jnp.where(surround, self._surround(pos_key), self._reflect(pos_key))
        return pos, jnp.concatenate([allies, enemies])

    def _reflect(self, key: Array) -> Array:
        """Allies anywhere in the left half; each enemy at the mirror image of an ally (extras at random)."""
        width, height = self.map_width, self.map_height
        ally_key, extra_key = jax.random.split(key)
        allies = jax.random.uniform(
            ally_key,
            (self.num_allies, 2),
            minval=jnp.array([1.0, 1.0]),
            maxval=jnp.array([width / 2 - 1, height - 1]),
        )
        mirrored = allies.at[:, 0].set(width - allies[:, 0])
        extra = jax.random.uniform(
            extra_key,
            (max(self.num_enemies - self.num_allies, 0), 2),
            minval=jnp.array([width / 2 + 1, 1.0]),
            maxval=jnp.array([width - 1, height - 1]),
        )
        return jnp.concatenate([allies, mirrored[: self.num_enemies], extra])

    def _surround(self, key: Array) -> Array:
        """One team clustered at the centre, the other split into groups on the four diagonals around it."""
        centre = jnp.array([self.map_width / 2, self.map_height / 2])
        inside_key, group_key, dist_key, noise_key, who_key = jax.random.split(key, 5)
        diagonals = jnp.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]]) / np.sqrt(2.0)
        reach = jax.random.uniform(dist_key, (4, 1), minval=7.0, maxval=11.0)

        def layout(n_inside: int, n_outside: int, k: Array) -> tuple[Array, Array]:
            k1, k2, k3 = jax.random.split(k, 3)
            inside = centre + jax.random.uniform(k1, (n_inside, 2), minval=-2, maxval=2)
            group = jax.random.randint(k2, (n_outside,), 0, 4)
            outside = (
                centre
                + (diagonals * reach)[group]
                + jax.random.uniform(k3, (n_outside, 2), minval=-1, maxval=1)
            )
            return inside, outside

        ally_in, enemy_out = layout(self.num_allies, self.num_enemies, jax.random.fold_in(inside_key, 0))
        enemy_in, ally_out = layout(self.num_enemies, self.num_allies, jax.random.fold_in(inside_key, 1))
        allies_inside = jax.random.uniform(who_key) < 0.5
        del group_key, noise_key
        return jnp.where(
            allies_inside, jnp.concatenate([ally_in, enemy_out]), jnp.concatenate([ally_out, enemy_in])
        )

    def reset_batch(self, keys: Array, params: EnvParams) -> tuple[SMAXState, TimeStep]:
        """Place both teams (fixed layout or a SMACv2 draw), at full health with weapons ready."""
        assert isinstance(params, SMAXParams)
        draw = self._draw_procedural if self.procedural else self._draw_fixed
        pos, unit_type = per_env(keys, draw)
        num_envs = keys.shape[0]
        unit_type = jnp.broadcast_to(unit_type, (self.num_units, num_envs)).astype(jnp.int32)
        stats = self.unit_stats(unit_type)
        alive = jnp.ones((self.num_units, num_envs), bool)
        for _ in range(3):
            pos = separate(pos, alive, stats.radius, self.map_width, self.map_height)
        zeros = jnp.zeros((self.num_units, num_envs), jnp.float32)
        state = SMAXState(
            pos=pos,
            health=jnp.broadcast_to(stats.health, zeros.shape),
            shield=jnp.broadcast_to(stats.shield, zeros.shape),
            cooldown=zeros,
            since_damage=zeros,
            unit_type=unit_type,
            last_move=jnp.zeros_like(pos),
            last_target=jnp.full((self.num_units, num_envs), -1, jnp.int32),
            step=jnp.zeros((num_envs,), jnp.int32),
        )
        rewards = {g: jnp.zeros((len(n), num_envs), jnp.float32) for g, n in self.groups.items()}
        no = jnp.zeros((num_envs,), bool)
        return state, self._timestep(state, stats, rewards, no, no, params)

    # ----------------------------------------------------------------------------------------------
    # Masks and observations

    def can_act_on(self, state: SMAXState, stats: UnitStats, team: int, geo: Geometry | None = None) -> Array:
        """``[n, N, B]``: unit ``i`` of ``team`` may now attack (or, a healer, heal) unit ``u``."""
        rows = self.team_rows[team]
        geo = geometry(state.pos) if geo is None else geo
        dist = geo.dist[rows]  # [n, N, B]
        alive = state.health > 0
        in_range = dist < stats.attack_range[rows][:, None]
        base = alive[rows][:, None] & alive[None] & in_range
        opponent = np.zeros(self.num_units, bool)
        opponent[self.team_rows[1 - team]] = True
        attack = base & opponent[None, :, None]
        if not self.may_heal[team]:
            return attack
        own = ~opponent[None, :, None] & (np.arange(self.num_units)[None, :] != rows[:, None])[:, :, None]
        hurt = (state.health < stats.health)[None]
        heal = base & own & hurt
        heals = stats.heals[rows][:, None]
        return jnp.where(heals, heal, attack)

    def target_slots(self, matrix: Array, team: int, heals: Array) -> Array:
        """``[n, num_slots, B]`` per target slot of ``team``, from a ``[n, N, B]`` unit matrix of its
        units: slot ``j`` is opponent ``j`` (own unit ``j`` where ``heals`` ``[n, B]``); slots past a
        team's size are padded with zeros."""
        num_slots = self.num_slots[team]
        opp = matrix[:, self.team_rows[1 - team]]
        pad = num_slots - opp.shape[1]
        opp = jnp.pad(opp, ((0, 0), (0, pad), (0, 0))) if pad else opp
        if not self.may_heal[team]:
            return opp
        own = matrix[:, self.team_rows[team]]
        pad = num_slots - own.shape[1]
        own = jnp.pad(own, ((0, 0), (0, pad), (0, 0))) if pad else own
        return jnp.where(heals[:, None], own, opp)

    def action_mask(
        self, state: SMAXState, stats: UnitStats, team: int, params: SMAXParams, can_act: Array | None = None
    ) -> Array:
        """``[n, num_actions, B]`` legal actions: the dead may only no-op; the living may stop, move
        where the whole move stays on the map, and act on targets ``can_act_on`` allows."""
        rows = self.team_rows[team]
        alive = (state.health > 0)[rows]
        can_act = self.can_act_on(state, stats, team) if can_act is None else can_act
        travel = stats.speed[rows] * params.time_per_substep * self.substeps  # [n, B] or [1, 1]
        dest = state.pos[rows][:, None] + MOVE_DIRECTIONS[None, :, :, None] * travel[:, None, None]
        upper = jnp.array([self.map_width, self.map_height])[None, None, :, None]
        inside = (dest >= 0.0) & (dest <= upper)
        on_map = inside[:, :, 0] & inside[:, :, 1]  # [n, 4, B]
        heals = jnp.broadcast_to(stats.heals[rows], alive.shape)
        targets = self.target_slots(can_act, team, heals)
        return jnp.concatenate([(~alive)[:, None], alive[:, None], on_map & alive[:, None], targets], axis=1)

    def _unit_features(self, state: SMAXState, stats: UnitStats) -> Array:
        """``[N, F, B]`` what anyone who sees a unit learns about it (after the geometric features)."""
        health = state.health / stats.health
        shield = state.shield / jnp.maximum(stats.shield, 1.0)
        cooldown = jnp.clip(state.cooldown / jnp.maximum(stats.cooldown, 1e-3), 0.0, 1.0)
        shape = state.health.shape
        parts = [jnp.broadcast_to(x, shape)[:, None] for x in (health, shield, cooldown)]
        parts.append(jax.nn.one_hot(state.unit_type, NUM_UNIT_TYPES, axis=1, dtype=jnp.float32))
        if self.obs_last_actions:
            parts += [state.last_move, (state.last_target >= 0).astype(jnp.float32)[:, None]]
        return jnp.concatenate(parts, axis=1)

    def observe(self, state: SMAXState, stats: UnitStats, team: int, geo: Geometry, can_act: Array) -> Array:
        """``[n, obs_dim, B]``: features of the other units of the team (index order, self skipped),
        then of every opponent (target-slot order), then the agent's own; zero for what it cannot see."""
        rows, opp = self.team_rows[team], self.team_rows[1 - team]
        n, num_envs = len(rows), state.step.shape[0]
        alive = state.health > 0
        dist = geo.dist[rows]  # [n, N, B]: observer i, observed unit u
        sight = stats.sight_range[rows][:, None]
        visible = (dist < sight) & alive[rows][:, None] & alive[None]
        geometric = [visible, dist / sight, geo.dx[rows] / sight, geo.dy[rows] / sight, can_act]
        geometric = jnp.stack([g.astype(jnp.float32) for g in geometric], axis=2)  # [n, N, 5, B]
        public = self._unit_features(state, stats)
        seen = jnp.concatenate([geometric, jnp.broadcast_to(public[None], (n, *public.shape))], axis=2)
        seen = seen * visible[:, :, None]  # [n, N, F, B]
        # Drop each observer's own column without a gather: slot j of the others is unit j before the
        # observer and unit j + 1 from it on.
        team_block = seen[:, rows]
        before = (np.arange(n - 1)[None, :] < np.arange(n)[:, None])[:, :, None, None]
        others = jnp.where(before, team_block[:, :-1], team_block[:, 1:])
        features = jnp.concatenate([others, seen[:, opp]], axis=1)
        own = self._own_features(state, stats)[rows]
        return jnp.concatenate([features.reshape(n, -1, num_envs), own], axis=1)

    def _own_features(self, state: SMAXState, stats: UnitStats) -> Array:
        shape = state.health.shape
        health = jnp.broadcast_to(state.health / stats.health, shape)
        shield = jnp.broadcast_to(state.shield / jnp.maximum(stats.shield, 1.0), shape)
        cooldown = jnp.broadcast_to(
            jnp.clip(state.cooldown / jnp.maximum(stats.cooldown, 1e-3), 0.0, 1.0), shape
        )
        scale = jnp.array([self.map_width, self.map_height])[:, None]
        own = jnp.concatenate(
            [
                health[:, None],
                shield[:, None],
                state.pos / scale,
                cooldown[:, None],
                jax.nn.one_hot(state.unit_type, NUM_UNIT_TYPES, axis=1, dtype=jnp.float32),
            ],
            axis=1,
        )
        return own * (state.health > 0)[:, None]

    def world_state(self, state: SMAXState, stats: UnitStats, params: SMAXParams) -> Array:
        """``[state_dim, B]``: per unit (allies first) alive, health, shield, position, cooldown, type and
        last action; then the fraction of the episode limit elapsed. Zeros for dead units."""
        alive = (state.health > 0).astype(jnp.float32)
        own = self._own_features(state, stats)
        last = jnp.concatenate(
            [state.last_move, (state.last_target >= 0).astype(jnp.float32)[:, None]], axis=1
        )
        units = jnp.concatenate([alive[:, None], own, last * alive[:, None]], axis=1)
        time = jnp.clip(state.step / params.max_steps, 0.0, 1.0).astype(jnp.float32)
        return jnp.concatenate([units.reshape(-1, state.step.shape[0]), time[None]], axis=0)

    # ----------------------------------------------------------------------------------------------
    # Step

    def _decode(self, actions: Array, state: SMAXState, stats: UnitStats) -> tuple[Array, Array, Array]:
        """``[N, B]`` actions -> move ``[N, 2, B]``, target unit and target slot ``[N, B]`` (-1: none)."""
        move_index = actions - FIRST_MOVE
        moving = (move_index >= 0) & (move_index < NUM_MOVES)
        one_hot_move = (move_index[:, None] == jnp.arange(NUM_MOVES)[None, :, None]) & moving[:, None]
        one_hot_move = one_hot_move.astype(jnp.float32)
        move = jnp.stack(
            [unit_sum(one_hot_move * MOVE_DIRECTIONS[None, :, c, None], 1) for c in (0, 1)], axis=1
        )
        slot = actions - FIRST_TARGET
        target = jnp.full(actions.shape, -1, jnp.int32)
        for team in (0, 1):
            rows = self.team_rows[team]
            opp_rows, own_rows = self.team_rows[1 - team], self.team_rows[team]
            team_slot = slot[rows]
            to_opp = jnp.where((team_slot >= 0) & (team_slot < len(opp_rows)), opp_rows[0] + team_slot, -1)
            chosen = to_opp
            if self.may_heal[team]:
                to_own = jnp.where(
                    (team_slot >= 0) & (team_slot < len(own_rows)), own_rows[0] + team_slot, -1
                )
                heals = jnp.broadcast_to(stats.heals[rows], team_slot.shape)
                chosen = jnp.where(heals, to_own, to_opp)
            target = target.at[rows].set(chosen)
        last_target = jnp.where(target >= 0, slot, -1)
        return move, target, last_target

    def _enemy_actions(
        self,
        keys: Array,
        state: SMAXState,
        stats: UnitStats,
        params: SMAXParams,
        geo: Geometry,
        actions: GroupDict,
    ) -> Array:
        if self.enemy == "agents":
            return actions["enemies"]
        can_act = self.can_act_on(state, stats, 1, geo)
        mask = self.action_mask(state, stats, 1, params, can_act)
        if self.enemy == "heuristic":
            return heuristic_actions(self, state, stats, 1, mask, geo, keys)
        assert callable(self.enemy)
        obs = self.observe(state, stats, 1, geo, can_act)
        batch_first = lambda x: jnp.moveaxis(x, -1, 0)  # noqa: E731
        chosen = self.enemy(params.enemy_params, batch_first(obs), batch_first(mask), keys)
        return jnp.moveaxis(jnp.asarray(chosen, jnp.int32), 0, -1)

    def step_batch(
        self, keys: Array, state: SMAXState, actions: GroupDict, params: EnvParams
    ) -> tuple[SMAXState, TimeStep]:
        """One agent step: decode both teams' actions, run the sub-steps, score, check for the end."""
        assert isinstance(params, SMAXParams)
        split = jax.vmap(lambda k: jax.random.split(k))(keys)
        jitter_keys, enemy_keys = split[:, 0], split[:, 1]
        stats = self.unit_stats(state.unit_type)
        geo = geometry(state.pos)
        enemy_actions = self._enemy_actions(enemy_keys, state, stats, params, geo, actions)
        every = jnp.concatenate([actions["allies"].astype(jnp.int32), enemy_actions.astype(jnp.int32)])
        alive_before = state.health > 0
        move, target, last_target = self._decode(every, state, stats)
        move = move * alive_before[:, None]
        dt = params.time_per_substep
        jitter = per_env(
            jitter_keys, lambda k: jax.random.uniform(k, (self.num_units,), minval=-1.0, maxval=2.0)
        )
        jitter = jitter * dt

        def body(combat: Combat, _: None) -> tuple[Combat, None]:
            combat = sub_step(
                combat,
                move,
                target,
                stats,
                jitter,
                dt,
                params.shield_regen_rate,
                params.shield_regen_delay,
                self.map_width,
                self.map_height,
            )
            if self.walls_cause_death:
                combat = self._wall_deaths(combat)
            return combat, None

        start = Combat(
            state.pos,
            state.health,
            state.shield,
            state.cooldown,
            state.since_damage,
            jnp.zeros_like(state.health),
        )
        # Rolled on the CPU (bit for bit as before), unrolled elsewhere: on a GPU each trip of a loop costs
        # launches and a loop-carried copy, and unrolled sub-steps fuse across trips (SMAX 3m at 4,096
        # envs compiled for an H200: 135 kernels a step rolled, 102 unrolled). The training kit's loops
        # make the same choice (``kit.loops.scan``), which an env may not import.
        def run(unroll: int, start: Combat) -> Combat:
            return jax.lax.scan(body, start, None, length=self.substeps, unroll=unroll)[0]

        combat = unrolled_off_cpu(run, self.substeps, start)
        state = dataclasses.replace(
            state,
            pos=combat.pos,
            health=combat.health,
            shield=combat.shield,
            cooldown=combat.cooldown,
            since_damage=combat.since_damage,
            last_move=move,
            last_target=jnp.where(alive_before, last_target, -1),
            step=state.step + 1,
        )
        alive = combat.health > 0
        team_alive = [unit_any(alive[rows], axis=0) for rows in self.team_rows]
        won = (team_alive[0] & ~team_alive[1], team_alive[1] & ~team_alive[0])
        team_rewards = []
        for team in (0, 1):
            opp = self.team_rows[1 - team]
            kills = unit_sum((alive_before[opp] & ~alive[opp]).astype(jnp.float32), axis=0)
            dealt = unit_sum(combat.damage_taken[opp], axis=0)
            max_points = unit_sum(jnp.broadcast_to(stats.health + stats.shield, alive.shape)[opp], axis=0)
            best = params.damage_reward * max_points + params.kill_reward * len(opp) + params.win_reward
            earned = params.damage_reward * dealt + params.kill_reward * kills + params.win_reward * won[team]
            team_rewards.append(params.reward_scale * earned / best)
        rewards = {"allies": team_rewards[0][None] * alive_before[self.team_rows[0]]}
        if "enemies" in self.groups:
            rewards["enemies"] = team_rewards[1][None] * alive_before[self.team_rows[1]]
        return state, self._timestep(state, stats, rewards, won[0], won[1], params)

    def _wall_deaths(self, combat: Combat) -> Combat:
        """``walls_cause_death``: a unit whose centre touches the map edge dies (JaxMARL's rule)."""
        upper = jnp.array([self.map_width, self.map_height])[None, :, None]
        outside = (combat.pos <= 0.0) | (combat.pos >= upper)
        touching = outside[:, 0] | outside[:, 1]
        return dataclasses.replace(
            combat,
            health=jnp.where(touching, 0.0, combat.health),
            shield=jnp.where(touching, 0.0, combat.shield),
        )

    def _timestep(
        self,
        state: SMAXState,
        stats: UnitStats,
        rewards: GroupDict,
        won: Array,
        lost: Array,
        params: SMAXParams,
    ) -> TimeStep:
        alive = state.health > 0
        ended = ~unit_any(alive[self.team_rows[0]], axis=0) | ~unit_any(alive[self.team_rows[1]], axis=0)
        out_of_time = state.step >= params.max_steps
        geo = geometry(state.pos)
        obs, mask, terminated, truncated = {}, {}, {}, {}
        for group in self.groups:
            team = self._team(group)
            rows = self.team_rows[team]
            can_act = self.can_act_on(state, stats, team, geo)
            obs[group] = self.observe(state, stats, team, geo, can_act)
            mask[group] = self.action_mask(state, stats, team, params, can_act)
            terminated[group] = ~alive[rows] | ended[None]
            truncated[group] = out_of_time[None] & ~terminated[group]
        info = {
            "won": won,
            "lost": lost,
            "world_state": self.world_state(state, stats, params),
        }
        return TimeStep(
            obs=obs, reward=rewards, terminated=terminated, truncated=truncated, action_mask=mask, info=info
        )

    # ----------------------------------------------------------------------------------------------
    # Rendering

    def render(self, state: SMAXState, params: EnvParams | None = None) -> Array:
        """``uint8[512, 512, 3]`` frame of one env: allies red, enemies blue, each unit's letter and bars."""
        return render_units(
            state.pos, state.unit_type, state.health, state.shield, state.last_target >= 0,
            self.num_allies, self.map_width, self.map_height,
        )
