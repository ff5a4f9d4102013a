"""Which joints each agent moves and what it observes: ``mamujoco_v1``'s factorisation as index tables.

The joint graph (nodes with their ``qpos``/``qvel``/actuator ids and bodies, hyper-edges, global nodes,
and the partitions) is read from the installed ``gymnasium-robotics`` package (``get_parts_and_edges``),
so every partition it defines is the reference's own. This module turns it, once at construction, into
integer tables: each agent's actuator ids, and each agent's observation as indices into one feature
vector (``qpos``, ``qvel``, the body quantities, and the few transformed items the reference's graph
asks for). The step then builds every observation with one gather.

The reference expresses its per-node observation exceptions as Python lambdas; ``OVERRIDES`` states
each of them as data here (what it reads, and whether it clips). A node with an exception this table does
not know fails construction, so a changed reference cannot silently change an observation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

BODY_WIDTH = {"cinert": 10, "cvel": 6, "cfrc_ext": 6}
"""Values per body of MuJoCo's body quantities."""
BODY_CLIPPED = frozenset({"Ant", "ManySegmentAnt"})
"""Scenarios whose nodes clip their body quantities to ``[-1, 1]`` (the reference's ``body_fn``)."""

Item = tuple[str, int]
"""One observed value: ``(source, index into that source)``; sources are listed in ``source_sizes``."""


def _qvel_clip(ids: Sequence[int]) -> Any:
    return lambda model: [("qvel_clip10", i % model.nv) for i in ids]


def _qpos_slice(start: int, stop: int) -> Any:
    return lambda model: [("qpos", i) for i in range(start, stop)]


def _qvel_slice(start: int, stop: int) -> Any:
    return lambda model: [("qvel", i) for i in range(start, stop)]


def _nothing(model: Any) -> list[Item]:
    return []


def _sin_cos(qpos_id: int) -> Any:
    return lambda model: [("qpos_sin", qpos_id % model.nq), ("qpos_cos", qpos_id % model.nq)]


_FREE_ROOT = {"qpos": _qpos_slice(2, 7), "qvel": _qvel_slice(0, 6)}

OVERRIDES: dict[tuple[str, str], dict[str, Any]] = {
    # the root's x position is hidden, as v5 hides it from the single-agent observation
    ("HalfCheetah", "root_x"): {"qpos": _nothing},
    ("Walker2d", "root_x"): {"qpos": _nothing},
    # Hopper clips every velocity it shows to [-10, 10]
    ("Hopper", "root_x"): {"qpos": _nothing, "qvel": _qvel_clip([0])},
    ("Hopper", "root_z"): {"qvel": _qvel_clip([1])},
    ("Hopper", "root_y"): {"qvel": _qvel_clip([2])},
    ("Hopper", "thigh_joint"): {"qvel": _qvel_clip([-3])},
    ("Hopper", "leg_joint"): {"qvel": _qvel_clip([-2])},
    ("Hopper", "foot_joint"): {"qvel": _qvel_clip([-1])},
    # a free joint shows its height and orientation and its six velocities
    ("Ant", "root"): _FREE_ROOT,
    ("Humanoid", "root"): _FREE_ROOT,
    ("HumanoidStandup", "root"): _FREE_ROOT,
    ("ManySegmentAnt", "free"): {
        **_FREE_ROOT,
        "cfrc_ext": lambda model: [("cfrc_ext_clip1", i) for i in range(6)],
    },
    # Reacher's joints show sin and cos of their angle; the second also the fingertip-to-target vector
    ("Reacher", "joint0"): {"qpos": _sin_cos(-4)},
    ("Reacher", "joint1"): {
        "qpos": _sin_cos(-3),
        "fingertip_dist": lambda model: [("fingertip_dist", i) for i in range(3)],
    },
    ("Reacher", "target_x"): {"qvel": _nothing},
    ("Reacher", "target_y"): {"qvel": _nothing},
    # Swimmer's joints show the root's velocity along an axis beside their own
    ("Swimmer", "rot2"): {"qvel": lambda model: [("qvel", 0), ("qvel", 3)]},
    ("Swimmer", "rot3"): {"qvel": lambda model: [("qvel", 1), ("qvel", 4)]},
}
"""The reference graph's per-node observation exceptions, ``(scenario, node label) -> {category: items}``."""

LOCAL_CATEGORIES: dict[str, tuple[tuple[str, ...], ...]] = {
    "Ant": (("qpos", "qvel", "cfrc_ext"), ("qpos",)),
    "ManySegmentAnt": (("qpos", "qvel", "cfrc_ext"), ("qpos",)),
    "Humanoid": (("qpos", "qvel", "cinert", "cvel", "qfrc_actuator", "cfrc_ext"), ("qpos",)),
    "HumanoidStandup": (("qpos", "qvel", "cinert", "cvel", "qfrc_actuator", "cfrc_ext"), ("qpos",)),
    "Reacher": (("qpos", "qvel", "fingertip_dist"), ("qpos",)),
}
"""``mamujoco_v1``'s default local categories per observation depth; others use ``(qpos, qvel), (qpos,)``.
Depths past the last entry repeat it."""
DEFAULT_LOCAL = (("qpos", "qvel"), ("qpos",))
DEFAULT_GLOBAL = ("qpos", "qvel")
CATEGORIES = frozenset({"qpos", "qvel", "cinert", "cvel", "qfrc_actuator", "cfrc_ext", "fingertip_dist"})
"""Every category a caller may name (the reference ignores unknown ones; this package refuses them)."""


def default_local_categories(scenario: str, agent_obsk: int) -> tuple[tuple[str, ...], ...]:
    """The reference's default categories for depths ``0..agent_obsk``."""
    table = LOCAL_CATEGORIES.get(scenario, DEFAULT_LOCAL)
    return tuple(table[min(k, len(table) - 1)] for k in range(agent_obsk + 1))


@dataclass(frozen=True)
class Factorisation:
    """Index tables for one ``(scenario, agent_conf, agent_obsk, categories)``, built once."""

    action_ids: tuple[tuple[int, ...], ...]
    """Per agent, the actuator index of each of its action entries, in the agent's action order."""
    observation_items: tuple[tuple[Item, ...], ...]
    """Per agent, its observation as ``(source, index)`` items, in the reference's order."""
    node_labels: tuple[tuple[str, ...], ...]
    """Per agent, the labels of the joints it moves (for the card and the errors)."""
    observation_layout: tuple[tuple[tuple[str, str, int], ...], ...]
    """Per agent, its observation as ``(node label, category, values)`` runs, in order: the layout the
    README card lists (``local`` nodes first, by depth, then the global ones)."""


def load_graph(scenario: str, agent_conf: str) -> tuple[list[tuple[Any, ...]], list[Any], list[Any]]:
    """``(partition, hyper-edges, global nodes)`` from the installed ``gymnasium-robotics``."""
    from .robots import import_robotics

    obsk = import_robotics("gymnasium_robotics.envs.multiagent_mujoco.obsk")
    try:
        return obsk.get_parts_and_edges(scenario, agent_conf)
    except Exception as error:  # the reference raises a bare Exception for an unknown partition
        raise ValueError(f"MaMuJoCo {scenario} has no partition {agent_conf!r} ({error})") from None


def nodes_within(agent_nodes: Sequence[Any], edges: Sequence[Any], depth: int) -> list[list[Any]]:
    """The nodes at each graph distance ``0..depth`` from the agent's own, each level sorted by label (the
    reference's order). Two nodes are adjacent when a hyper-edge holds both."""
    explored = set(agent_nodes)
    frontier = set(agent_nodes)
    levels = [sorted(frontier, key=lambda node: node.label)]
    for _ in range(depth):
        reached = set()
        for node in frontier:
            for edge in edges:
                if node in edge.nodes:
                    reached |= edge.nodes - {node}
        frontier = reached - explored
        explored |= frontier
        levels.append(sorted(frontier, key=lambda node: node.label))
    return levels


def _check_known(scenario: str, nodes: Sequence[Any]) -> None:
    for node in nodes:
        if node.label == "Dummy_Node":
            continue
        known = OVERRIDES.get((scenario, node.label), {})
        unknown = sorted(set(getattr(node, "extra_obs", {}) or {}) - set(known))
        body_fn = getattr(node, "body_fn", None) is not None and scenario not in BODY_CLIPPED
        if unknown or body_fn:
            raise RuntimeError(
                f"gymnasium-robotics's {scenario} node {node.label!r} has an observation rule this package "
                f"does not implement ({unknown or 'body_fn'}); install gymnasium-robotics==1.4.2"
            )


def _body_items(category: str, bodies: Sequence[int], seen: set[int], clip: bool) -> list[Item]:
    items: list[Item] = []
    source = f"{category}_clip1" if clip else category
    width = BODY_WIDTH[category]
    for body in bodies:
        if body not in seen:
            seen.add(body)
            items.extend((source, body * width + j) for j in range(width))
    return items


def _local_items(
    scenario: str, node: Any, category: str, seen: dict[str, set[int]], model: Any
) -> list[Item]:
    override = OVERRIDES.get((scenario, node.label), {}).get(category)
    if override is not None:
        return override(model)
    if category == "qvel":
        return [("qvel", node.qvel_ids % model.nv)]
    if category == "qpos":
        return [("qpos", node.qpos_ids % model.nq)]
    if category == "qfrc_actuator":
        return [("qfrc_actuator", node.qvel_ids % model.nv)]
    if category in BODY_WIDTH:
        return _body_items(category, node.bodies, seen.setdefault(category, set()), scenario in BODY_CLIPPED)
    return []  # a category a node does not have (Reacher's fingertip on its first joint)


def _global_items(
    scenario: str, node: Any, category: str, seen: dict[str, set[int]], model: Any
) -> list[Item]:
    override = OVERRIDES.get((scenario, node.label), {}).get(category)
    if override is not None:
        return override(model)
    if category in ("qpos", "qvel", "qfrc_actuator"):
        ids = node.qpos_ids if category == "qpos" else node.qvel_ids
        if ids is None:
            raise RuntimeError(f"{scenario}'s global node {node.label!r} has no {category} index")
        size = model.nq if category == "qpos" else model.nv
        return [(category, ids % size)]
    if category in BODY_WIDTH:
        return _body_items(category, node.bodies, seen.setdefault(category, set()), scenario in BODY_CLIPPED)
    return []


def factorise(
    scenario: str,
    agent_conf: str,
    agent_obsk: int,
    local_categories: Sequence[Sequence[str]],
    global_categories: Sequence[str],
    model: Any,
) -> Factorisation:
    """The action and observation tables of one configuration (``model`` is the compiled ``MjModel``)."""
    parts, edges, global_nodes = load_graph(scenario, agent_conf)
    every_node = [node for part in parts for node in part] + list(global_nodes)
    for edge in edges:
        every_node.extend(edge.nodes)
    _check_known(scenario, every_node)
    observation_items, layouts = [], []
    for part in parts:
        items: list[Item] = []
        layout: list[tuple[str, str, int]] = []
        seen: dict[str, set[int]] = {}
        for depth, level in enumerate(nodes_within(part, edges, agent_obsk)):
            for node in level:
                for category in local_categories[depth]:
                    found = _local_items(scenario, node, category, seen, model)
                    items.extend(found)
                    if found:
                        layout.append((node.label, category, len(found)))
        seen = {}
        for category in global_categories:
            for node in global_nodes:
                found = _global_items(scenario, node, category, seen, model)
                items.extend(found)
                if found:
                    layout.append((f"global {node.label}", category, len(found)))
        observation_items.append(tuple(items))
        layouts.append(tuple(layout))
    return Factorisation(
        action_ids=tuple(tuple(int(node.act_ids) for node in part) for part in parts),
        observation_items=tuple(observation_items),
        node_labels=tuple(tuple(node.label for node in part) for part in parts),
        observation_layout=tuple(layouts),
    )


def world_state_items(scenario: str, model: Any) -> tuple[Item, ...]:
    """The v5 single-agent observation (``mamujoco_v1``'s ``state()``) as items, per its task."""
    nq, nv, nbody = model.nq, model.nv, model.nbody
    base = {"ManySegmentAnt": "Ant", "ManySegmentSwimmer": "Swimmer"}.get(scenario, scenario)
    qpos = lambda start: [("qpos", i) for i in range(start, nq)]  # noqa: E731
    qvel = [("qvel", i) for i in range(nv)]
    body = lambda source, width: [(source, i) for i in range(width, nbody * width)]  # noqa: E731
    if base == "HalfCheetah":
        return (*qpos(1), *qvel)
    if base in ("Hopper", "Walker2d"):
        return (*qpos(1), *[("qvel_clip10", i) for i in range(nv)])
    if base == "Ant":
        return (*qpos(2), *qvel, *body("cfrc_ext_contact", 6))
    if base in ("Humanoid", "HumanoidStandup"):
        return (
            *qpos(2), *qvel, *body("cinert", 10), *body("cvel", 6),
            *[("qfrc_actuator", i) for i in range(6, nv)], *body("cfrc_ext", 6),
        )
    if base == "Reacher":
        return (
            ("qpos_cos", 0), ("qpos_cos", 1), ("qpos_sin", 0), ("qpos_sin", 1), *qpos(2),
            ("qvel", 0), ("qvel", 1), ("fingertip_dist", 0), ("fingertip_dist", 1),
        )
    if base == "Swimmer":
        return (*qpos(2), *qvel)
    raise ValueError(f"no world state for {scenario}")


def source_sizes(model: Any) -> dict[str, int]:
    """Every feature source and its length, in the order the feature vector concatenates them."""
    nq, nv, nbody = model.nq, model.nv, model.nbody
    sizes = {"qpos": nq, "qvel": nv, "qvel_clip10": nv, "qpos_sin": nq, "qpos_cos": nq, "qfrc_actuator": nv}
    for category, width in BODY_WIDTH.items():
        sizes[category] = nbody * width
        sizes[f"{category}_clip1"] = nbody * width
    sizes["cfrc_ext_contact"] = nbody * 6
    sizes["fingertip_dist"] = 3
    return sizes


def gather_plan(item_lists: Sequence[Sequence[Item]], model: Any) -> tuple[tuple[str, ...], list[np.ndarray]]:
    """The sources the items use (in ``source_sizes`` order) and, per list, ``int32`` indices into their
    concatenation."""
    sizes = source_sizes(model)
    used = {source for items in item_lists for source, _ in items}
    order = tuple(source for source in sizes if source in used)
    offsets, offset = {}, 0
    for source in order:
        offsets[source] = offset
        offset += sizes[source]
    indices = [np.asarray([offsets[s] + i for s, i in items], np.int32) for items in item_lists]
    return order, indices
