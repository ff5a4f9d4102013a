"""Multi-agent MuJoCo: Gymnasium-Robotics' ``mamujoco_v1`` tasks, compiled with the learner.

One robot (a Gymnasium MuJoCo v5 task) is split among agents: each agent drives some of its actuators
(its partition) and observes its own joints, the joints up to ``agent_obsk`` hops away in the joint
graph, and the robot's global joints. Every agent receives the task's reward; an unhealthy robot
terminates every agent. The physics is ``mujoco-mjx``'s, in float32, on the same model files as the
reference, or with ``physics="c"`` the reference's own C engine called from the program (host.py); see
README.md for what each means for parity and speed.

The env is written per env (MJX's step is per model and data) and batched by ``jax.vmap`` in
``VecEnv``. The state holds only what MuJoCo's next step reads (``qpos``, ``qvel``, the solver's warm
start) and the position the reward's progress term compares against, so auto-reset and rollouts carry a
few dozen floats per env, not MJX's whole ``Data``.
"""

from __future__ import annotations

import copy
import importlib
import math
import warnings
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.spaces import Box
from jaxmarl_suite.core.types import EnvParams, TimeStep
from jaxmarl_suite.errors import closest, did_you_mean

from . import partition
from .host import RANDOMISED, HostData, HostPhysics, default_threads
from .robots import MANY_SEGMENT, ROBOTS, import_mjx, initial_state, load_model, require_mujoco, robot_for

Array = jax.Array

SCENARIOS = (*ROBOTS, *MANY_SEGMENT)
"""Every scenario this package runs (``mamujoco_v1``'s, less Pusher, the inverted pendulums and
CoupledHalfCheetah)."""
REACHER_GOAL_DRAWS = 16
"""Candidate goals drawn per Reacher reset; the first inside the disc is used. v5 redraws until one lands
inside (probability pi/4 each), so 16 draws all miss with probability about 1e-11."""
PHYSICS = ("mjx", "c")
"""The physics backends: ``mjx`` (MuJoCo XLA, any device, float32 unless x64) and ``c`` (MuJoCo's C engine
on the host CPU through ``jax.pure_callback``, float64; see host.py)."""


def physics_float() -> Any:
    """The physics' float type: float32, or float64 when JAX's x64 mode is on (the parity tests use it to
    tell MJX's algorithms apart from its float32 arithmetic)."""
    return jax.dtypes.canonicalize_dtype(np.float64)


@struct.dataclass
class MaMuJoCoParams(EnvParams):
    """Traceable task parameters: the v5 reward weights and health ranges, the reset noise, and the
    physical constants a domain-randomised batch varies (``body_mass``, ``geom_friction``,
    ``actuator_gear``; ``None`` means the model's own). Fields a task does not use are ignored by it."""

    max_steps: int = 1000
    """Steps per episode; every agent is truncated on the last (Gymnasium's ``max_episode_steps``)."""
    forward_reward_weight: float = 1.0
    """Scale of the forward-velocity reward (Reacher: of the distance penalty)."""
    ctrl_cost_weight: float = 0.1
    """Scale of the control cost, ``sum(action ** 2)``."""
    contact_cost_weight: float = 0.0
    """Scale of the contact cost from ``cfrc_ext`` (Ant, Humanoid; HumanoidStandup's impact cost)."""
    contact_cost_max: float = math.inf
    """Upper clip of the Humanoids' contact cost."""
    contact_force_min: float = -1.0
    """Lower clip of each ``cfrc_ext`` entry in Ant's contact cost and state."""
    contact_force_max: float = 1.0
    """Upper clip of each ``cfrc_ext`` entry in Ant's contact cost and state."""
    healthy_reward: float = 0.0
    """Reward per step while healthy (HumanoidStandup: its constant ``+1``)."""
    terminate_when_unhealthy: bool = True
    """End the episode when the robot is unhealthy (tasks with a healthy rule)."""
    healthy_z_min: float = -math.inf
    """Lowest healthy height of the torso."""
    healthy_z_max: float = math.inf
    """Highest healthy height of the torso."""
    healthy_angle_min: float = -math.inf
    """Lowest healthy torso angle (Hopper, Walker2d)."""
    healthy_angle_max: float = math.inf
    """Highest healthy torso angle (Hopper, Walker2d)."""
    healthy_state_min: float = -math.inf
    """Hopper: every ``qpos[2:]`` and ``qvel`` entry must stay above this."""
    healthy_state_max: float = math.inf
    """Hopper: every ``qpos[2:]`` and ``qvel`` entry must stay below this."""
    reset_noise_scale: float = 0.1
    """Half-width of the uniform reset noise (and the normal noise's scale where v5 uses one)."""
    body_mass: Any = None
    """``float32[nbody]``: each body's mass; ``None`` keeps the model's."""
    geom_friction: Any = None
    """``float32[ngeom, 3]``: each geom's sliding, torsional and rolling friction; ``None``: the model's."""
    actuator_gear: Any = None
    """``float32[nu, 6]``: each actuator's gear; ``None`` keeps the model's."""


@struct.dataclass
class MaMuJoCoState:
    """What MuJoCo's next step reads, for one env."""

    qpos: Array
    """``float32[nq]``: joint positions."""
    qvel: Array
    """``float32[nv]``: joint velocities."""
    qacc_warmstart: Array
    """``float32[nv]``: the constraint solver's warm start (MuJoCo carries it from step to step)."""
    progress_x: Array
    """``float32``: the x position the next reward's progress compares against, as the reference reads it
    (for Ant the main body's ``xpos``, for Humanoid the centre of mass: both from the last substep's
    kinematics, as MuJoCo leaves them after a step)."""
    time: Array
    """``int32``: steps taken in the episode."""


def _impl(data: Any) -> Any:
    """MJX's JAX-side data (``cinert``, ``cfrc_ext`` live there since MuJoCo 3.3)."""
    return data._impl


def _check_config(
    scenario: str,
    agent_conf: str,
    agent_obsk: int,
    local_categories: Sequence[Sequence[str]] | None,
    global_categories: Sequence[str] | None,
    physics: str,
    host_threads: int | None,
) -> None:
    if physics not in PHYSICS:
        raise ValueError(
            f"physics must be one of {', '.join(map(repr, PHYSICS))} (MJX, or MuJoCo's C engine on the "
            f"host), "
            f"got {physics!r}"
        )
    if physics == "c" and jax.default_backend() != "cpu":
        raise ValueError(
            f"physics='c' steps MuJoCo's C engine on the host CPU through a callback; JAX's default backend "
            f"here is {jax.default_backend()!r}: use physics='mjx' on an accelerator"
        )
    if host_threads is not None and (
        isinstance(host_threads, bool) or not isinstance(host_threads, int) or host_threads < 1
    ):
        raise ValueError(f"host_threads must be an int >= 1 or None (every core), got {host_threads!r}")
    if host_threads is not None and physics != "c":
        raise ValueError("host_threads applies to physics='c' only (MJX's step is threaded by XLA)")
    if scenario not in SCENARIOS:
        raise ValueError(
            f"MaMuJoCo has no scenario {scenario!r}{did_you_mean(closest(scenario, SCENARIOS))}; "
            f"choose from {', '.join(SCENARIOS)}"
        )
    if not isinstance(agent_conf, str) or not agent_conf:
        raise ValueError(f"agent_conf must be a partition string such as '2x3', got {agent_conf!r}")
    if scenario in MANY_SEGMENT:
        parts = agent_conf.split("x")
        if len(parts) != 2 or not all(p.isdigit() and int(p) >= 1 for p in parts):
            raise ValueError(
                f"{scenario} takes agent_conf 'NxM' (N agents of M segments each, both >= 1), "
                f"got {agent_conf!r}"
            )
        links = int(parts[0]) * int(parts[1])
        slow_chain = scenario == "ManySegmentSwimmer" and links > 12
        if slow_chain and physics == "mjx" and jax.default_backend() == "cpu":
            # measured (2-core CPU, jax 0.10.2), one env step: 12 links 19 ms, 16 links 0.56 s, 20 links 46 s
            warnings.warn(
                f"MJX on XLA's CPU backend steps a swimmer of {links} links very slowly (about 0.5 s per env "
                f"step at 16 links, 46 s at 20): use physics='c' on a CPU",
                UserWarning,
                stacklevel=3,
            )
    if isinstance(agent_obsk, bool) or not isinstance(agent_obsk, int) or agent_obsk < 0:
        raise ValueError(
            f"agent_obsk must be an int >= 0 (0 observes only the agent's own joints), got {agent_obsk!r}"
        )
    if local_categories is not None:
        if len(local_categories) != agent_obsk + 1:
            raise ValueError(
                f"local_categories needs one list per observation depth 0..agent_obsk "
                f"({agent_obsk + 1}), got {len(local_categories)}"
            )
        for level in local_categories:
            _check_categories("local_categories", level)
    if global_categories is not None:
        _check_categories("global_categories", global_categories)


def _check_categories(name: str, categories: Sequence[str]) -> None:
    if isinstance(categories, str):
        raise ValueError(f"{name} takes a list of categories, got the string {categories!r}")
    for category in categories:
        if category not in partition.CATEGORIES:
            raise ValueError(
                f"{name}: unknown category {category!r}"
                f"{did_you_mean(closest(category, partition.CATEGORIES))}; "
                f"known: {', '.join(sorted(partition.CATEGORIES))}"
            )


class MaMuJoCo(MultiAgentEnv):
    """One ``mamujoco_v1`` task on MJX: ``scenario`` (a v5 robot) split as ``agent_conf``.

    Args:
        scenario: ``HalfCheetah``, ``Ant``, ``Hopper``, ``Walker2d``, ``Humanoid``, ``HumanoidStandup``,
            ``Reacher``, ``Swimmer``, ``ManySegmentSwimmer`` or ``ManySegmentAnt``.
        agent_conf: the partition, as ``mamujoco_v1`` names it (``2x3``, ``6x1``, ``2x4d``, ``9|8``; for the
            many-segment robots ``NxM``: N agents of M segments).
        agent_obsk: graph distance an agent observes (0: its own joints only).
        local_categories: per depth ``0..agent_obsk``, what is observed of each joint at that depth
            (``qpos``, ``qvel``, ``cinert``, ``cvel``, ``qfrc_actuator``, ``cfrc_ext``,
            ``fingertip_dist``); ``None`` takes ``mamujoco_v1``'s default for the robot.
        global_categories: what is observed of the robot's global joints (default ``qpos``, ``qvel``).
        physics: ``"mjx"`` (default: MuJoCo XLA, runs on any device, differentiable) or ``"c"`` (MuJoCo's own
            C engine, the reference's, called from the compiled program on the host CPU; several times
            faster than MJX on a CPU, see docs/benchmarks.md; CPU only).
        host_threads: threads among which ``physics="c"`` splits a batch (default: every core).
    """

    render_fps = 20

    def __init__(
        self,
        scenario: str = "HalfCheetah",
        agent_conf: str = "2x3",
        agent_obsk: int = 1,
        local_categories: Sequence[Sequence[str]] | None = None,
        global_categories: Sequence[str] | None = None,
        physics: str = "mjx",
        host_threads: int | None = None,
    ) -> None:
        require_mujoco()
        _check_config(
            scenario, agent_conf, agent_obsk, local_categories, global_categories, physics, host_threads
        )
        mjx = import_mjx()
        mujoco: Any = importlib.import_module("mujoco")  # a compiled module without type stubs

        self.scenario = scenario
        self.agent_conf = agent_conf
        self.agent_obsk = agent_obsk
        self.robot = robot_for(scenario)
        if local_categories is None:
            local_categories = partition.default_local_categories(scenario, agent_obsk)
        self.local_categories = tuple(tuple(level) for level in local_categories)
        self.global_categories = tuple(global_categories or partition.DEFAULT_GLOBAL)
        self.mj_model: Any = load_model(scenario, agent_conf)
        """The compiled C model (``mujoco.MjModel``), as the reference builds it."""
        self.physics_backend = physics
        """``"mjx"`` or ``"c"``: which engine steps the physics."""
        pgs = int(self.mj_model.opt.solver) == int(mujoco.mjtSolver.mjSOL_PGS)
        self.solver_replaced = physics == "mjx" and pgs
        """MJX has no PGS solver: under ``physics="mjx"`` the Humanoids' models (which ask for PGS) run under
        Newton."""
        physics_model = self.mj_model
        if pgs:  # the MJX model is built under either backend (the jittable renderer reads its kinematics)
            physics_model = copy.copy(self.mj_model)
            physics_model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
        self.mjx_model = mjx.put_model(physics_model)
        self._data0: Any = mjx.make_data(self.mjx_model)
        self.factorisation = partition.factorise(
            scenario, agent_conf, agent_obsk, self.local_categories, self.global_categories, self.mj_model
        )
        self.dt = float(self.mj_model.opt.timestep) * self.robot.frame_skip
        """Seconds per env step: the model's timestep times the frame skip."""
        self.render_fps = max(1, round(1.0 / self.dt))
        self.init_qpos, self.init_qvel = initial_state(self.mj_model)
        self.main_body = 1
        """v5's ``main_body``: the body whose ``xpos`` Ant's progress reads (the torso)."""
        self._fingertip = self._target = -1
        if self.robot.name == "Reacher":
            self._fingertip = self.mj_model.body("fingertip").id
            self._target = self.mj_model.body("target").id

        # groups: agents of equal observation and action sizes, in order of first appearance
        spaces: dict[tuple[int, int], list[int]] = {}
        for agent, (acts, items) in enumerate(
            zip(self.factorisation.action_ids, self.factorisation.observation_items, strict=True)
        ):
            spaces.setdefault((len(items), len(acts)), []).append(agent)
        uniform_actions = len({act for _, act in spaces}) == 1
        self.groups = {}
        self._group_agents: dict[str, list[int]] = {}
        self._group_shapes: dict[str, tuple[int, int]] = {}
        for (obs_dim, act_dim), agents in spaces.items():
            if len(spaces) == 1:
                name = "agents"
            else:
                name = f"obs{obs_dim}" if uniform_actions else f"obs{obs_dim}_act{act_dim}"
            self.groups[name] = tuple(f"agent_{agent}" for agent in agents)
            self._group_agents[name] = agents
            self._group_shapes[name] = (obs_dim, act_dim)

        world_items = partition.world_state_items(scenario, self.mj_model)
        item_lists = [
            *[
                [item for agent in agents for item in self.factorisation.observation_items[agent]]
                for agents in self._group_agents.values()
            ],
            world_items,
        ]
        self._sources, indices = partition.gather_plan(item_lists, self.mj_model)
        self._obs_index = {
            group: jnp.asarray(index.reshape(len(agents), -1))
            for (group, agents), index in zip(self._group_agents.items(), indices[:-1], strict=True)
        }
        self._world_index = jnp.asarray(indices[-1])
        self._world_dim = len(world_items)
        self._action_index = {
            group: jnp.asarray(np.asarray([self.factorisation.action_ids[a] for a in agents], np.int32))
            for group, agents in self._group_agents.items()
        }
        self._needs_cfrc = self.robot.contact_cost or any("cfrc_ext" in s for s in self._sources)
        self._host: HostPhysics | None = None
        if physics == "c":
            observed = {source.split("_clip")[0].removesuffix("_contact") for source in self._sources}
            if "fingertip_dist" in observed:
                observed.add("xpos")
            # progress: the step reads it from MuJoCo's data; a reset, from qpos where the main body's joint
            # is free (its xpos is then qpos[:3], as MuJoCo's kinematics sets it)
            progress = {"body_xy": {"xpos"}, "reacher": {"xpos"}, "mass_center": {"xipos"}}
            reads = observed | progress.get(self.robot.progress, set())
            reset_reads = set(observed)
            if self.robot.progress == "body_xy" and self._free_main_body() is None:
                reset_reads.add("xpos")
            if self.robot.progress == "mass_center":
                reset_reads.add("xipos")
            if self._needs_cfrc:
                reads.add("cfrc_ext")
            self._host = HostPhysics(
                self.mj_model, self.robot.frame_skip, sorted(reads), sorted(reset_reads),
                host_threads or default_threads(),
            )
        low, high = self.mj_model.actuator_ctrlrange[0]
        self._action_low, self._action_high = float(low), float(high)
        defaults = dict(self.robot.defaults)
        self._params = MaMuJoCoParams(
            max_steps=self.robot.max_steps,
            **defaults,
            terminate_when_unhealthy=True,
            body_mass=jnp.asarray(self.mj_model.body_mass, physics_float()),
            geom_friction=jnp.asarray(self.mj_model.geom_friction, physics_float()),
            actuator_gear=jnp.asarray(self.mj_model.actuator_gear, physics_float()),
        )
        self.reference = f"gymnasium_robotics.mamujoco_v1:{scenario}:{agent_conf}"
        self.random_reset = True
        self.observation_info = ("world_state",)

    # -- static structure ------------------------------------------------------------------------------

    @property
    def default_params(self) -> MaMuJoCoParams:
        """v5's defaults for the task and the model's own physical constants."""
        return self._params

    def observation_space(self, group: str) -> Box:
        """``Box(-inf, inf, (obs_dim,))``: the agent's joints, its neighbours' and the global joints."""
        return Box(-np.inf, np.inf, (self._group_shapes[group][0],))

    def action_space(self, group: str) -> Box:
        """``Box(low, high, (act_dim,))`` with the first actuator's control range, as ``mamujoco_v1``."""
        return Box(self._action_low, self._action_high, (self._group_shapes[group][1],))

    def world_state_space(self) -> Box:
        """The v5 single-agent observation (``mamujoco_v1``'s ``state()``), in ``info["world_state"]``."""
        return Box(-np.inf, np.inf, (self._world_dim,))

    # -- dynamics --------------------------------------------------------------------------------------

    def physics(self, params: MaMuJoCoParams) -> Any:
        """The MJX model with ``params``' physical constants in place."""
        model = self.mjx_model
        updates = {
            name: getattr(params, name)
            for name in ("body_mass", "geom_friction", "actuator_gear")
            if getattr(params, name) is not None
        }
        return model.replace(**updates) if updates else model

    def _free_main_body(self) -> int | None:
        """``qpos`` address of the main body's free joint, or None when it has none."""
        model = self.mj_model
        joint = int(model.body_jntadr[self.main_body])
        if joint < 0 or int(model.jnt_type[joint]) != 0:  # mjJNT_FREE
            return None
        return int(model.jnt_qposadr[joint])

    def _constants(self, params: MaMuJoCoParams) -> list[Array]:
        """The randomisable model constants for the C engine (the model's own where ``params`` has None)."""
        return [
            jnp.asarray(getattr(self._params, n) if getattr(params, n) is None else getattr(params, n),
                        physics_float())
            for n in RANDOMISED
        ]

    def _features(self, data: Any, params: MaMuJoCoParams, cfrc_ext: Array) -> Array:
        """The concatenation of every source the observations and the world state read."""
        impl = _impl(data)
        values = {
            "qpos": lambda: data.qpos,
            "qvel": lambda: data.qvel,
            "qvel_clip10": lambda: jnp.clip(data.qvel, -10.0, 10.0),
            "qpos_sin": lambda: jnp.sin(data.qpos),
            "qpos_cos": lambda: jnp.cos(data.qpos),
            "qfrc_actuator": lambda: data.qfrc_actuator,
            "cinert": lambda: impl.cinert.reshape(-1),
            "cinert_clip1": lambda: jnp.clip(impl.cinert, -1.0, 1.0).reshape(-1),
            "cvel": lambda: data.cvel.reshape(-1),
            "cvel_clip1": lambda: jnp.clip(data.cvel, -1.0, 1.0).reshape(-1),
            "cfrc_ext": lambda: cfrc_ext.reshape(-1),
            "cfrc_ext_clip1": lambda: jnp.clip(cfrc_ext, -1.0, 1.0).reshape(-1),
            "cfrc_ext_contact": lambda: jnp.clip(
                cfrc_ext, params.contact_force_min, params.contact_force_max
            ).reshape(-1),
            "fingertip_dist": lambda: data.xpos[self._fingertip] - data.xpos[self._target],
        }
        return jnp.concatenate([values[source]().astype(jnp.float32) for source in self._sources])

    def _timestep(
        self,
        data: Any,
        params: MaMuJoCoParams,
        cfrc_ext: Array,
        reward: Array,
        terminated: Array,
        truncated: Array,
    ) -> TimeStep:
        features = self._features(data, params, cfrc_ext)
        obs, rewards, terms, truncs = {}, {}, {}, {}
        for group, index in self._obs_index.items():
            n = index.shape[0]
            obs[group] = features[index]
            rewards[group] = jnp.full((n,), reward, jnp.float32)
            terms[group] = jnp.full((n,), terminated)
            truncs[group] = jnp.full((n,), truncated)
        info = {"world_state": features[self._world_index]}
        return TimeStep(obs, rewards, terms, truncs, {}, info)

    def _progress_x(self, data: Any, params: MaMuJoCoParams) -> Array:
        progress = self.robot.progress
        if progress == "body_xy":
            return data.xpos[self.main_body, 0]
        if progress == "mass_center":
            mass = params.body_mass if params.body_mass is not None else self.mjx_model.body_mass
            return jnp.sum(mass * data.xipos[:, 0]) / jnp.sum(mass)
        return data.qpos[0]

    def _healthy(self, qpos: Array, qvel: Array, params: MaMuJoCoParams) -> Array:
        rule = self.robot.healthy
        if rule == "ant":
            finite = jnp.all(jnp.isfinite(qpos)) & jnp.all(jnp.isfinite(qvel))
            return finite & (params.healthy_z_min <= qpos[2]) & (qpos[2] <= params.healthy_z_max)
        if rule == "humanoid":
            return (params.healthy_z_min < qpos[2]) & (qpos[2] < params.healthy_z_max)
        if rule in ("hopper", "walker"):
            z, angle = qpos[1], qpos[2]
            healthy = (params.healthy_z_min < z) & (z < params.healthy_z_max)
            healthy &= (params.healthy_angle_min < angle) & (angle < params.healthy_angle_max)
            if rule == "hopper":
                state = jnp.concatenate([qpos[2:], qvel])
                healthy &= jnp.all((params.healthy_state_min < state) & (state < params.healthy_state_max))
            return healthy
        return jnp.asarray(True)

    def reset(self, key: Array, params: MaMuJoCoParams | None = None) -> tuple[MaMuJoCoState, TimeStep]:
        """v5's reset: noise around the model's initial pose, then MuJoCo's forward pass (contact forces
        are zero until the first step, as in the reference)."""
        mjx = import_mjx()
        params = self.default_params if params is None else params
        qpos_key, qvel_key = jax.random.split(key)
        init_qpos = jnp.asarray(self.init_qpos, physics_float())
        init_qvel = jnp.asarray(self.init_qvel, physics_float())
        nq, nv = init_qpos.shape[0], init_qvel.shape[0]
        scale = params.reset_noise_scale
        if self.robot.reset == "reacher":
            arm_key, goal_key = jax.random.split(qpos_key)
            qpos = init_qpos + jax.random.uniform(arm_key, (nq,), minval=-0.1, maxval=0.1)
            goals = jax.random.uniform(goal_key, (REACHER_GOAL_DRAWS, 2), minval=-0.2, maxval=0.2)
            inside = jnp.linalg.norm(goals, axis=-1) < 0.2
            qpos = qpos.at[-2:].set(goals[jnp.argmax(inside)])
            qvel = init_qvel + jax.random.uniform(qvel_key, (nv,), minval=-0.005, maxval=0.005)
            qvel = qvel.at[-2:].set(0.0)
        else:
            qpos = init_qpos + jax.random.uniform(qpos_key, (nq,), minval=-scale, maxval=scale)
            if self.robot.reset == "uniform_normal":
                qvel = init_qvel + scale * jax.random.normal(qvel_key, (nv,))
            else:
                qvel = init_qvel + jax.random.uniform(qvel_key, (nv,), minval=-scale, maxval=scale)
        if self._host is not None:
            values = self._host.forward(qpos, qvel, self._constants(params))
            address = self._free_main_body()
            if "xpos" not in values and self.robot.progress == "body_xy" and address is not None:
                xpos = jnp.zeros((self.mj_model.nbody, 3), qpos.dtype)
                values["xpos"] = xpos.at[self.main_body].set(qpos[address:address + 3])
            data = HostData(values)
        else:
            data = mjx.forward(self.physics(params), self._data0.replace(qpos=qpos, qvel=qvel))
        state = MaMuJoCoState(
            qpos=data.qpos,
            qvel=data.qvel,
            qacc_warmstart=jnp.zeros(nv, physics_float()),
            progress_x=self._progress_x(data, params).astype(physics_float()),
            time=jnp.zeros((), jnp.int32),
        )
        false = jnp.zeros((), bool)
        no_contact = jnp.zeros_like(self._data0._impl.cfrc_ext)
        timestep = self._timestep(data, params, no_contact, jnp.zeros(()), false, false)
        return state, timestep

    def step(
        self,
        key: Array,
        state: MaMuJoCoState,
        actions: dict[str, Array],
        params: MaMuJoCoParams | None = None,
    ) -> tuple[MaMuJoCoState, TimeStep]:
        """Apply every agent's actions as one control vector for ``frame_skip`` MuJoCo steps; reward,
        health and observations as v5 and ``mamujoco_v1`` compute them."""
        mjx = import_mjx()
        del key  # the dynamics are deterministic
        params = self.default_params if params is None else params
        action = jnp.zeros(self.mj_model.nu, physics_float())
        for group, index in self._action_index.items():
            action = action.at[index.reshape(-1)].set(actions[group].reshape(-1).astype(physics_float()))
        if self._host is not None:
            data = HostData(
                self._host.step(state.qpos, state.qvel, state.qacc_warmstart, action, self._constants(params))
            )
            cfrc_ext = data.cfrc_ext if self._needs_cfrc else jnp.zeros_like(self._data0._impl.cfrc_ext)
            return self._finish_step(state, data, action, cfrc_ext, params)
        model = self.physics(params)
        data = self._data0.replace(
            qpos=state.qpos, qvel=state.qvel, qacc_warmstart=state.qacc_warmstart, ctrl=action
        )
        # a scan, not a Python loop: one compiled MuJoCo step, whatever the frame skip
        def substep(d: Any, _: None) -> tuple[Any, None]:
            # under x64, MJX returns the tendon-wrap indices as int64: keep the carry's dtypes
            return jax.tree.map(lambda new, old: new.astype(old.dtype), mjx.step(model, d), d), None

        data, _ = jax.lax.scan(substep, data, None, length=self.robot.frame_skip)
        if self._needs_cfrc:
            # MuJoCo's step leaves the contact forces uncomputed; v5 computes them after every step
            data = mjx.rne_postconstraint(model, data)
            cfrc_ext = _impl(data).cfrc_ext
        else:
            cfrc_ext = jnp.zeros_like(self._data0._impl.cfrc_ext)
        return self._finish_step(state, data, action, cfrc_ext, params)

    def _finish_step(
        self, state: MaMuJoCoState, data: Any, action: Array, cfrc_ext: Array, params: MaMuJoCoParams
    ) -> tuple[MaMuJoCoState, TimeStep]:
        reward, healthy = self._reward(state, data, action, cfrc_ext, params)
        terminated = (~healthy) & params.terminate_when_unhealthy
        time = state.time + 1
        new_state = MaMuJoCoState(
            qpos=data.qpos,
            qvel=data.qvel,
            qacc_warmstart=data.qacc_warmstart,
            progress_x=self._progress_x(data, params).astype(physics_float()),
            time=time,
        )
        return new_state, self._timestep(data, params, cfrc_ext, reward, terminated, time >= params.max_steps)

    def _reward(
        self, state: MaMuJoCoState, data: Any, action: Array, cfrc_ext: Array, params: MaMuJoCoParams
    ) -> tuple[Array, Array]:
        """The task's reward and whether the robot is healthy after the step."""
        robot = self.robot
        ctrl_cost = params.ctrl_cost_weight * jnp.sum(jnp.square(action))
        healthy = self._healthy(data.qpos, data.qvel, params)
        if robot.progress == "reacher":
            distance = jnp.linalg.norm(data.xpos[self._fingertip] - data.xpos[self._target])
            return -distance * params.forward_reward_weight - ctrl_cost, healthy
        if robot.progress == "height":
            impact = params.contact_cost_weight * jnp.sum(jnp.square(cfrc_ext))
            impact = jnp.minimum(impact, params.contact_cost_max)
            uph = data.qpos[2] / self.mj_model.opt.timestep
            return uph - ctrl_cost - impact + params.healthy_reward, healthy
        before = state.qpos[0] if robot.progress == "qpos_x" else state.progress_x
        velocity = (self._progress_x(data, params) - before) / self.dt
        reward = params.forward_reward_weight * velocity - ctrl_cost
        if robot.healthy != "none":
            reward = reward + healthy * params.healthy_reward
        if robot.contact_cost and robot.healthy == "ant":
            clipped = jnp.clip(cfrc_ext, params.contact_force_min, params.contact_force_max)
            reward = reward - params.contact_cost_weight * jnp.sum(jnp.square(clipped))
        elif robot.contact_cost:
            cost = params.contact_cost_weight * jnp.sum(jnp.square(cfrc_ext))
            reward = reward - jnp.minimum(cost, params.contact_cost_max)
        return reward.astype(jnp.float32), healthy

    def render(self, state: MaMuJoCoState, params: EnvParams | None = None) -> Array:
        """``uint8[256, 256, 3]``: the robot from the side (walkers) or above (Reacher, swimmers), jittable;
        see rendering.py (and ``rendering.render_mujoco`` for MuJoCo's own OpenGL renderer)."""
        from .rendering import render_frame

        return render_frame(self, state, params)

    def __repr__(self) -> str:
        engine = ", physics='c'" if self._host is not None else ""
        return f"MaMuJoCo({self.scenario} {self.agent_conf}, agent_obsk={self.agent_obsk}{engine})"
