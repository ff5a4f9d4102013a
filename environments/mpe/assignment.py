"""Shape scenarios (simple_formation, simple_line): agents are matched to target points, batch-minor.

mpe2 matches agents to targets with ``scipy.optimize.linear_sum_assignment`` on the distance matrix and
rewards every agent with ``-mean(clip(matched distances, 0, 2))``. ``min_cost_assignment`` is the same
optimal assignment written for ``[N, N, B]`` arrays with the env batch last: for a few agents by
enumerating every permutation, otherwise by the shortest-augmenting-path Hungarian algorithm, whose
loops are over the static agent count with every dynamic index a one-hot mask, so there are no gathers
and envs vectorise across the minor axis.

``ShapeScenario`` holds what both scenarios share: silent colliding agents, the observation
``[own velocity (2), own position (2), each landmark relative to the agent (2 per landmark)]``, the
reward and mpe2's ``terminate_on_success``.
"""

from __future__ import annotations

import abc
import itertools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.types import GroupDict, TimeStep

from .base import MPEEnv
from .physics import MPEParams, MPEState, pairwise_distance

Array = jax.Array


ENUMERATION_MAX_SIZE = 5
"""Up to this size, ``min_cost_assignment`` tries all ``N!`` assignments (at most 120): at ``N = 4`` and a
batch of 4096 that measured 5x faster than the Hungarian algorithm on a 2-core CPU, at ``N = 5`` 1.5x."""


def min_cost_assignment(cost: Array) -> Array:
    """Optimal assignment of rows to columns of a square ``[N, N, B]`` cost: a bool ``[N, N, B]`` one-hot.

    ``enumerated_assignment`` for small ``N``, ``hungarian_assignment`` above ``ENUMERATION_MAX_SIZE``.
    """
    if cost.shape[0] <= ENUMERATION_MAX_SIZE:
        return enumerated_assignment(cost)
    return hungarian_assignment(cost)


def enumerated_assignment(cost: Array) -> Array:
    """``min_cost_assignment`` by trying every permutation (the first cheapest, in lexicographic order)."""
    size = cost.shape[0]
    permutations = np.array(list(itertools.permutations(range(size))), np.int32)  # [P, N]
    totals = jnp.stack([sum(cost[row, int(p[row])] for row in range(size)) for p in permutations])  # [P, B]
    chosen = jnp.argmin(totals, axis=0)[None] == np.arange(len(permutations))[:, None]  # [P, B]
    masks = permutations[:, :, None] == np.arange(size)[None, None, :]  # [P, row, column], static
    return jnp.any(masks[..., None] & chosen[:, None, None], axis=0)


def hungarian_assignment(cost: Array) -> Array:
    """``min_cost_assignment`` by the Hungarian algorithm, ``O(N^4)`` masked work per env.

    The Hungarian algorithm with potentials and shortest augmenting paths (the e-maxx formulation, as in
    scipy's LAPJV-style solver): row ``i`` is added by growing a tree of tight columns from a virtual
    column 0 until it reaches a free column, at most ``i`` growth steps, then the path is flipped, again
    at most ``i`` steps. Envs that finish early are masked, so every env runs the static worst case.
    Among equally cheap assignments the one found may differ from scipy's; the total cost does not.
    """
    size, num_envs = cost.shape[0], cost.shape[-1]
    cost = cost.astype(jnp.float32)
    columns = np.arange(size + 1)[:, None]  # column 0 is the virtual column of the row being added
    rows = np.arange(size + 1)[:, None]  # rows are 1-based; 0 means "no row"
    row_of = jnp.zeros((size + 1, num_envs), jnp.int32)  # p[j]: the row matched to column j
    way = jnp.zeros((size + 1, num_envs), jnp.int32)  # previous column on the augmenting path
    u = jnp.zeros((size + 1, num_envs), jnp.float32)  # row potentials
    v = jnp.zeros((size + 1, num_envs), jnp.float32)  # column potentials

    def pick(values: Array, index: Array) -> Array:
        """``values[index]`` per env, for ``[N + 1, B]`` values and ``[B]`` indices (a masked sum)."""
        return jnp.sum(jnp.where(columns == index[None], values, 0), axis=0)

    for row in range(1, size + 1):
        row_of = jnp.concatenate([jnp.full((1, num_envs), row, jnp.int32), row_of[1:]])
        current = jnp.zeros((num_envs,), jnp.int32)  # j0
        used = jnp.zeros((size + 1, num_envs), bool)
        slack = jnp.full((size + 1, num_envs), jnp.inf, jnp.float32)  # minv
        active = jnp.ones((num_envs,), bool)
        for _ in range(row):
            used_next = used | (columns == current[None])
            tree_row = pick(row_of, current)  # i0, 1-based
            row_cost = jnp.sum(jnp.where((rows[1:, None] == tree_row[None, None]), cost, 0.0), axis=0)
            reduced = row_cost - pick(u, tree_row)[None] - v[1:]  # [N, B] over columns 1..N
            free = ~used_next[1:]
            better = free & (reduced < slack[1:])
            slack_next = jnp.concatenate([slack[:1], jnp.where(better, reduced, slack[1:])])
            way_next = jnp.concatenate([way[:1], jnp.where(better, current[None], way[1:])])
            candidates = jnp.where(free, slack_next[1:], jnp.inf)
            delta = jnp.min(candidates, axis=0)  # [B]
            next_column = jnp.argmin(candidates, axis=0).astype(jnp.int32) + 1  # first minimum, like e-maxx
            # Rows in the tree (matched to used columns) gain delta; used columns lose it.
            in_tree = jnp.any((row_of[None] == rows[:, :, None]) & used_next[None], axis=1)  # [N + 1, B]
            u_next = jnp.where(in_tree, u + delta[None], u)
            v_next = jnp.where(used_next, v - delta[None], v)
            slack_next = jnp.where(used_next, slack_next, slack_next - delta[None])
            keep = active[None]
            used = jnp.where(keep, used_next, used)
            slack = jnp.where(keep, slack_next, slack)
            way = jnp.where(keep, way_next, way)
            u = jnp.where(keep, u_next, u)
            v = jnp.where(keep, v_next, v)
            current = jnp.where(active, next_column, current)
            active = active & (pick(row_of, current) != 0)
        for _ in range(row):  # flip the augmenting path back to column 0
            moving = current != 0
            previous = pick(way, current)
            on_path = (columns == current[None]) & moving[None]
            row_of = jnp.where(on_path, pick(row_of, previous)[None], row_of)
            current = jnp.where(moving, previous, current)
    return row_of[1:][None] == np.arange(1, size + 1)[:, None, None]  # [row, column, B]


def matched_distances(agent_pos: Array, targets: Array) -> Array:
    """``[N, B]`` distance of each agent to its optimally assigned target (mpe2's ``_delta_dists``)."""
    distance = pairwise_distance(agent_pos, targets)  # [agent, target, B]
    assignment = min_cost_assignment(distance)
    return jnp.sum(jnp.where(assignment, distance, 0.0), axis=1)


@struct.dataclass
class ShapeParams(MPEParams):
    """Physics constants plus the shape scenarios' reward and success constants."""

    distance_clip: float = 2.0
    """Matched distances are clipped to ``[0, distance_clip]`` before averaging."""
    success_distance: float = 0.05
    """Every agent within this distance of its target is a success (mpe2's ``DIST_THRESHOLD``)."""
    terminate_on_success: bool = False
    """End the episode (``terminated``) on success, as mpe2's ``terminate_on_success=True`` does."""


class ShapeScenario(MPEEnv):
    """Base of simple_formation and simple_line: one group ``agents``; subclasses give the targets."""

    @property
    def episodes_end_together(self) -> bool:  # type: ignore[override]
        """Only while success does not end episodes early (the default)."""
        params = self.default_params
        return not (isinstance(params, ShapeParams) and params.terminate_on_success)

    @abc.abstractmethod
    def targets(self, state: MPEState, params: MPEParams) -> Array:
        """``[N, 2, B]`` target points the agents are matched to."""

    def _matched(self, state: MPEState, params: MPEParams) -> Array:
        return matched_distances(self.agent_pos(state), self.targets(state, params))

    def rewards(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Every agent gets ``-mean(clip(matched distances, 0, distance_clip))`` (mpe2's global reward)."""
        assert isinstance(params, ShapeParams)
        clipped = jnp.clip(self._matched(state, params), 0.0, params.distance_clip)
        reward = -jnp.mean(clipped, axis=0)
        return {"agents": jnp.broadcast_to(reward, (self.num_agents_total, *reward.shape))}

    def observe(self, state: MPEState, params: MPEParams) -> GroupDict:
        """Own velocity (2), own position (2), each landmark relative to the agent (2 per landmark)."""
        num_agents, num_envs = self.num_agents_total, state.step.shape[0]
        agent_pos = self.agent_pos(state)
        landmark_rel = self.landmark_pos(state)[None] - agent_pos[:, None]  # [N, L, 2, B]
        obs = jnp.concatenate(
            [state.vel[:num_agents], agent_pos, landmark_rel.reshape(num_agents, -1, num_envs)], axis=1
        )
        return {"agents": obs}

    def _timestep(self, state: MPEState, rewards: GroupDict, params: MPEParams) -> TimeStep:
        """The base's TimeStep, terminated on success when ``params.terminate_on_success`` is set.

        mpe2 checks success only after a step and only when the step did not also truncate the episode.
        """
        assert isinstance(params, ShapeParams)
        timestep = super()._timestep(state, rewards, params)
        success = jnp.all(self._matched(state, params) < params.success_distance, axis=0)  # [B]
        ended = params.terminate_on_success & success & (state.step > 0) & (state.step < params.max_steps)
        terminated = {"agents": jnp.broadcast_to(ended, (self.num_agents_total, *ended.shape))}
        return timestep._replace(terminated=terminated)
