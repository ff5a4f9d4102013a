"""collect_treasure: collectors carry treasures to the deposit of their type (mpe2's ``collect_treasure_v1``).

Agents, in mpe2's order: ``collector_0 .. collector_{C-1}`` (group ``collectors``; size 0.05, mass 1)
then ``deposit_0 .. deposit_{D-1}`` (group ``deposits``; size 0.075, mass 2.25). Deposit ``d`` accepts
treasure type ``d``, so there are ``K = D`` types. Landmarks: ``treasure_0 .. treasure_{T-1}`` (size
0.025). Every agent has accel 1.5 and max speed 1.0; nothing collides physically ("ghost" agents) and
everyone is silent, so actions are movement only: ``Discrete(5)`` or ``Box(0, 1, (5,))``.

After the physics, ``post_step`` runs mpe2's pickup, respawn and delivery logic, in mpe2's order:

1. For each treasure in index order: if it is alive, the first free collector (index order) touching
   it (``dist < 0.075``) picks it up; the treasure dies and moves to ``(-999, -999)``. If it was already
   dead, it respawns uniform in ``[-0.95, 0.95]^2`` with a uniform new type, so a treasure is dead for
   exactly one step.
2. Each collector holding type ``k`` and touching deposit ``k`` (``dist < 0.125``) delivers it.

Observation (mpe2's order): own position (2), own velocity (2), for collectors the one-hot of the held
type (K); then every other agent sorted by distance (nearest first, ties in index order), each as
relative position (2), velocity (2), ``[deposit type one-hot (K), held type one-hot (K)]``; then the
alive treasures sorted by distance, each as relative position (2) and type one-hot (K), then the dead
ones as zeros. Default sizes: 86 for collectors, 84 for deposits.

Reward: every agent gets the step's global reward, ``pickup_reward`` (5) per pickup plus
``deposit_reward`` (5) per delivery. A collector also loses ``collision_penalty`` (5) per other collector
closer than 0.1, and ``shaping_weight`` (0.1) times the distance to the nearest alive treasure when
empty-handed (nothing when none is alive) or to the deposit of its type when holding one. A deposit loses
``shaping_weight`` times the distance to the nearest collector holding its type, or, when none does, to
the collectors' centroid.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.types import GroupDict

from .base import AgentSpec, LandmarkSpec, MPEEnv
from .physics import MPEParams, MPEState, pairwise_distance
from .rendering import render_world

Array = jax.Array

COLLECTOR_SIZE = 0.05
DEPOSIT_SIZE = 0.075
TREASURE_SIZE = 0.025
COLLECTOR_MASS = 1.0
DEPOSIT_MASS = 2.25
ACCEL = 1.5
MAX_SPEED = 1.0
COMM_DIM = 2
"""mpe2 keeps ``dim_c = 2`` for compatibility; every agent is silent."""
TREASURE_BOUND = 0.95
DEAD_POSITION = -999.0
"""Where mpe2 parks a picked-up treasure until it respawns."""
COLLECTOR_COLOR = (0.85, 0.85, 0.85)
DEPOSIT_SHADE = 0.35
HOLDING_SHADE = 0.85
TYPE_COLORS = (
    (0.212, 0.408, 0.776),
    (0.945, 0.553, 0.000),
    (0.169, 0.627, 0.173),
    (0.839, 0.149, 0.157),
    (0.580, 0.404, 0.741),
    (0.549, 0.337, 0.294),
)
"""mpe2's palette, one colour per treasure type; it also caps the number of deposits."""


@struct.dataclass
class CollectTreasureParams(MPEParams):
    """Physics constants (accel 1.5) plus collect_treasure's reward constants."""

    accel: float = ACCEL
    pickup_reward: float = 5.0
    """Global reward, to every agent, per treasure picked up in the step."""
    deposit_reward: float = 5.0
    """Global reward, to every agent, per treasure delivered in the step."""
    collision_penalty: float = 5.0
    """Reward a collector loses per other collector overlapping it."""
    shaping_weight: float = 0.1
    """Weight of the distance shaping of collectors and deposits."""


def _shade(color: tuple[float, float, float], factor: float) -> tuple[float, float, float]:
    red, green, blue = color
    return (red * factor, green * factor, blue * factor)


def _without_self(x: Array) -> Array:
    """``[N, N, ...]`` -> ``[N, N-1, ...]``: row ``i`` without entry ``i``, by reshapes (no gather)."""
    n, rest = x.shape[0], x.shape[2:]
    tail = x.reshape(n * n, *rest)[1:]
    return tail.reshape(n - 1, n + 1, *rest)[:, :n].reshape(n, n - 1, *rest)


def _sort_by_key(key: Array, features: Array) -> list[Array]:
    """Rows of ``features`` ``[N, M, F, B]`` sorted by ascending ``key`` ``[N, M, B]``, stably: ``M`` slots
    of ``[N, F, B]``, nearest first.

    Entry ``m`` goes to slot ``rank[m]`` = the number of entries with a smaller key, or an equal key and a
    smaller index (Python's stable ``sorted``). Each slot is a masked sum over the entries, which is exact
    (one non-zero term) and keeps the env batch minor, where ``argsort`` would gather. The loops over the
    static ``M`` are unrolled and the slots are concatenated straight into the observation: as one
    ``[N, slot, m, F, B]`` reduction followed by a reshape, XLA:CPU ran the observation 20x slower.
    """
    size = key.shape[1]
    earlier = np.tril(np.ones((size, size), bool), -1)  # earlier[m, m'] = m' < m
    before = (key[:, None, :] < key[:, :, None]) | (
        (key[:, None, :] == key[:, :, None]) & earlier[None, :, :, None]
    )  # [N, m, m', B]: entry m' sorts before entry m
    rank = jnp.sum(before, axis=2)  # [N, M, B]
    slots = []
    for slot in range(size):
        chosen = jnp.zeros_like(features[:, 0])
        for entry in range(size):
            chosen = chosen + jnp.where((rank[:, entry] == slot)[:, None], features[:, entry], 0.0)
        slots.append(chosen)
    return slots


class CollectTreasure(MPEEnv):
    """Cooperative treasure collection. Groups ``collectors`` and ``deposits``.

    ``state.extra`` holds mpe2's scenario state: ``holding`` (int32 ``[C, B]``, the held treasure type or
    -1), ``alive`` (bool ``[T, B]``), ``treasure_type`` (int32 ``[T, B]``) and ``event_reward`` (float32
    ``[B]``, the global reward of the last step's pickups and deliveries, which mpe2 caches in the same way).
    """

    reference = "mpe2.collect_treasure_v1"

    def __init__(
        self,
        num_collectors: int = 6,
        num_deposits: int = 2,
        num_treasures: int = 6,
        max_cycles: int = 25,
        continuous_actions: bool = False,
    ) -> None:
        for name, value in [
            ("num_collectors", num_collectors),
            ("num_deposits", num_deposits),
            ("num_treasures", num_treasures),
            ("max_cycles", max_cycles),
        ]:
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if num_deposits > len(TYPE_COLORS):
            raise ValueError(f"at most {len(TYPE_COLORS)} deposits (treasure types), got {num_deposits}")
        self.num_collectors = num_collectors
        self.num_deposits = num_deposits
        self.num_treasures = num_treasures
        self.num_types = num_deposits
        self._type_colors = np.array(TYPE_COLORS[:num_deposits], np.float32)
        collectors = [
            AgentSpec(
                f"collector_{i}",
                "collectors",
                size=COLLECTOR_SIZE,
                collide=False,
                silent=True,
                max_speed=MAX_SPEED,
                mass=COLLECTOR_MASS,
                color=COLLECTOR_COLOR,
            )
            for i in range(num_collectors)
        ]
        deposits = [
            AgentSpec(
                f"deposit_{d}",
                "deposits",
                size=DEPOSIT_SIZE,
                collide=False,
                silent=True,
                max_speed=MAX_SPEED,
                mass=DEPOSIT_MASS,
                color=_shade(TYPE_COLORS[d], DEPOSIT_SHADE),
            )
            for d in range(num_deposits)
        ]
        super().__init__(
            agents=[*collectors, *deposits],
            landmarks=[
                LandmarkSpec(f"treasure_{t}", size=TREASURE_SIZE, collide=False, color=TYPE_COLORS[0])
                for t in range(num_treasures)
            ],
            params=CollectTreasureParams(max_steps=max_cycles),
            dim_c=COMM_DIM,
            continuous_actions=continuous_actions,
        )

    # ----------------------------------------------------------------------------------------------
    # Helpers

    def _draw_treasures(self, keys: Array) -> tuple[Array, Array]:
        """Fresh treasure positions ``[T, 2, B]`` and types ``[T, B]``, env ``i`` from ``keys[i]``."""

        def draw(key: Array) -> tuple[Array, Array]:
            type_key, pos_key = jax.random.split(key)
            kinds = jax.random.randint(type_key, (self.num_treasures,), 0, self.num_types, jnp.int32)
            pos = jax.random.uniform(
                pos_key, (self.num_treasures, 2), jnp.float32, -TREASURE_BOUND, TREASURE_BOUND
            )
            return pos, kinds

        pos, kinds = jax.vmap(draw)(keys)
        return jnp.moveaxis(pos, 0, -1), jnp.moveaxis(kinds, 0, -1)

    def _reach(self, first: slice, second: slice) -> np.ndarray:
        """``[I, J, 1]`` collision distances (sums of radii) between two ranges of entities."""
        size = self.entities.size
        return (size[first][:, None] + size[second][None, :])[:, :, None]

    def _collectors(self) -> slice:
        return slice(0, self.num_collectors)

    def _deposits(self) -> slice:
        return slice(self.num_collectors, self.num_agents_total)

    def _treasures(self) -> slice:
        return slice(self.num_agents_total, self.entities.num_entities)

    # ----------------------------------------------------------------------------------------------
    # Hooks

    def reset_world(self, keys: Array, params: MPEParams) -> tuple[Array, dict[str, Array]]:
        """Agents uniform in ``[-1, 1]^2``; live treasures of uniform type, uniform in ``[-0.95, 0.95]^2``."""
        split = jax.vmap(jax.random.split)(keys)
        agents = self.uniform_positions(split[:, 0], self.num_agents_total, -1.0, 1.0)
        treasure_pos, treasure_type = self._draw_treasures(split[:, 1])
        num_envs = keys.shape[0]
        extra = {
            "holding": jnp.full((self.num_collectors, num_envs), -1, jnp.int32),
            "alive": jnp.ones((self.num_treasures, num_envs), bool),
            "treasure_type": treasure_type,
            "event_reward": jnp.zeros((num_envs,), jnp.float32),
        }
        return jnp.concatenate([agents, treasure_pos]), extra

    def post_step(self, keys: Array, state: MPEState, params: MPEParams) -> MPEState:
        """mpe2's pickup, respawn and delivery, in its order (see the module docstring)."""
        assert isinstance(params, CollectTreasureParams)
        collectors, deposits, treasures = self._collectors(), self._deposits(), self._treasures()
        alive, kinds = state.extra["alive"], state.extra["treasure_type"]
        holding = state.extra["holding"]
        touching = pairwise_distance(state.pos[treasures], state.pos[collectors]) < self._reach(
            treasures, collectors
        )  # [T, C, B]
        # Pickups are sequential: a collector that takes treasure t is no longer free for treasure t + 1.
        picked = []
        for t in range(self.num_treasures):
            candidate = alive[t] & (holding < 0) & touching[t]  # [C, B]
            first = candidate & (jnp.cumsum(candidate, axis=0) == 1)
            holding = jnp.where(first, kinds[t], holding)
            picked.append(jnp.any(candidate, axis=0))
        picked_up = jnp.stack(picked)  # [T, B]
        new_pos, new_kinds = self._draw_treasures(keys)
        respawn = ~alive  # every dead treasure respawns (mpe2's respawn_prob is 1)
        treasure_pos = jnp.where(respawn[:, None], new_pos, state.pos[treasures])
        treasure_pos = jnp.where(picked_up[:, None], DEAD_POSITION, treasure_pos)
        kinds = jnp.where(respawn, new_kinds, kinds)
        alive = respawn | (alive & ~picked_up)
        # Deliveries see the holdings after this step's pickups, as in mpe2.
        at_deposit = pairwise_distance(state.pos[collectors], state.pos[deposits]) < self._reach(
            collectors, deposits
        )  # [C, D, B]
        holds = jax.nn.one_hot(holding, self.num_types, axis=1, dtype=bool)  # [C, K = D, B]; -1 -> none
        delivered = jnp.any(holds & at_deposit, axis=1)  # [C, B]
        holding = jnp.where(delivered, -1, holding)
        event_reward = params.pickup_reward * jnp.sum(picked_up, axis=0) + params.deposit_reward * jnp.sum(
            delivered, axis=0
        )
        extra = {
            "holding": holding,
            "alive": alive,
            "treasure_type": kinds,
            "event_reward": event_reward.astype(jnp.float32),
        }
        pos = jnp.concatenate([state.pos[: self.num_agents_total], treasure_pos])
        return dataclasses.replace(state, pos=pos, extra=extra)

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Global event reward plus the collision penalty and distance shaping (module docstring)."""
        assert isinstance(params, CollectTreasureParams)
        collectors, deposits, treasures = self._collectors(), self._deposits(), self._treasures()
        num_collectors = self.num_collectors
        pos, holding, alive = state.pos, state.extra["holding"], state.extra["alive"]
        event = state.extra["event_reward"][None]

        between = pairwise_distance(pos[collectors], pos[collectors])
        overlap = (between < self._reach(collectors, collectors)) & ~np.eye(num_collectors, dtype=bool)[
            :, :, None
        ]
        collision = params.collision_penalty * jnp.sum(overlap, axis=1)  # [C, B]
        to_treasure = jnp.where(alive[None], pairwise_distance(pos[collectors], pos[treasures]), jnp.inf)
        nearest_treasure = jnp.min(to_treasure, axis=1)  # [C, B]; inf when no treasure is alive
        nearest_treasure = jnp.where(jnp.isfinite(nearest_treasure), nearest_treasure, 0.0)
        to_deposit = pairwise_distance(pos[collectors], pos[deposits])  # [C, D, B]
        holds = jax.nn.one_hot(holding, self.num_types, axis=1, dtype=bool)  # [C, D, B]
        to_own_deposit = jnp.sum(jnp.where(holds, to_deposit, 0.0), axis=1)
        shaping = jnp.where(holding < 0, nearest_treasure, to_own_deposit)
        collector_reward = event - collision - params.shaping_weight * shaping

        carriers = jnp.swapaxes(holds, 0, 1)  # [D, C, B]: collector c holds deposit d's type
        nearest_carrier = jnp.min(jnp.where(carriers, jnp.swapaxes(to_deposit, 0, 1), jnp.inf), axis=1)
        centroid = jnp.mean(pos[collectors], axis=0)  # [2, B]
        to_centroid = jnp.sqrt(jnp.sum(jnp.square(centroid[None] - pos[deposits]), axis=1))  # [D, B]
        deposit_shaping = jnp.where(jnp.any(carriers, axis=1), nearest_carrier, to_centroid)
        deposit_reward = event - params.shaping_weight * deposit_shaping
        return {"collectors": collector_reward, "deposits": deposit_reward}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """mpe2's observation order (see the module docstring)."""
        num_agents, num_collectors, num_types = self.num_agents_total, self.num_collectors, self.num_types
        num_envs = state.step.shape[0]
        agent_pos, vel = self.agent_pos(state), state.vel[:num_agents]
        holding_hot = jax.nn.one_hot(state.extra["holding"], num_types, axis=1, dtype=jnp.float32)
        deposit_hot = np.eye(num_types, dtype=np.float32)[:, :, None]  # deposit d accepts type d
        encoding = jnp.concatenate(
            [
                jnp.concatenate([jnp.zeros_like(holding_hot), holding_hot], axis=1),
                jnp.broadcast_to(
                    np.concatenate([deposit_hot, np.zeros_like(deposit_hot)], axis=1),
                    (self.num_deposits, 2 * num_types, num_envs),
                ),
            ]
        )  # [N, 2K, B]: [deposit type, held type]

        agent_rel = agent_pos[None] - agent_pos[:, None]  # [N, N, 2, B]: other j relative to agent i
        vel_encoding = jnp.concatenate([vel, encoding], axis=1)  # [N, 2 + 2K, B]
        seen = jnp.concatenate(
            [agent_rel, jnp.broadcast_to(vel_encoding[None], (num_agents, *vel_encoding.shape))], axis=2
        )
        other_features = _without_self(seen)  # [N, N-1, 4 + 2K, B]
        other_key = jnp.sum(jnp.square(_without_self(agent_rel)), axis=2)  # squared distance sorts alike
        others = _sort_by_key(other_key, other_features)

        alive = state.extra["alive"]
        treasure_rel = self.landmark_pos(state)[None] - agent_pos[:, None]  # [N, T, 2, B]
        type_hot = jax.nn.one_hot(state.extra["treasure_type"], num_types, axis=1, dtype=jnp.float32)
        treasure_features = jnp.concatenate(
            [treasure_rel, jnp.broadcast_to(type_hot[None], (num_agents, *type_hot.shape))], axis=2
        )
        treasure_features = jnp.where(alive[None, :, None], treasure_features, 0.0)  # dead: zeros
        # Dead treasures sort last, in index order, like mpe2's key of 1e6.
        treasure_key = jnp.where(alive[None], jnp.sum(jnp.square(treasure_rel), axis=2), jnp.inf)
        treasures = _sort_by_key(treasure_key, treasure_features)

        own = jnp.concatenate([agent_pos, vel], axis=1)
        sorted_parts = [*others, *treasures]  # each [N, F, B]
        collectors, deposits = slice(0, num_collectors), slice(num_collectors, num_agents)
        collector_obs = jnp.concatenate(
            [own[collectors], holding_hot, *[part[collectors] for part in sorted_parts]], axis=1
        )
        deposit_obs = jnp.concatenate([own[deposits], *[part[deposits] for part in sorted_parts]], axis=1)
        return {"collectors": collector_obs, "deposits": deposit_obs}

    # ----------------------------------------------------------------------------------------------
    # Rendering

    def entity_colors(self, state: MPEState) -> Array:
        """mpe2's colours: a collector takes its treasure's colour, darkened; treasures show their type."""
        holding_hot = jax.nn.one_hot(state.extra["holding"], self.num_types, dtype=jnp.float32)  # [C, K]
        holding_color = HOLDING_SHADE * (holding_hot @ self._type_colors)
        collector = jnp.where(
            (state.extra["holding"] >= 0)[:, None], holding_color, jnp.asarray(COLLECTOR_COLOR)
        )
        treasure = jax.nn.one_hot(state.extra["treasure_type"], self.num_types) @ self._type_colors
        return jnp.concatenate([collector, jnp.asarray(self.colors[self._deposits()]), treasure])

    def render(self, state: MPEState, params: MPEParams | None = None) -> Array:
        """``uint8[256, 256, 3]`` frame of one env; dead treasures are hidden, as mpe2 hides them."""
        visible = jnp.concatenate([jnp.ones((self.num_agents_total,), bool), state.extra["alive"]])
        # parked (dead) treasures are neither drawn nor allowed to widen the camera
        return render_world(state.pos, self.entities.size, self.entity_colors(state), visible=visible)
