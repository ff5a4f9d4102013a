"""MuJoCo's C engine inside a compiled program: the ``physics="c"`` backend of :class:`MaMuJoCo` on the CPU.

MJX runs MuJoCo's algorithms as XLA operations, which is what a GPU wants; on a CPU the same step is
several times slower than MuJoCo's own C code on one env (docs/benchmarks.md). This backend keeps the
env's state in JAX arrays and hands each batched step to the C engine through ``jax.pure_callback``:
the callback receives the whole batch at once (``vmap_method="broadcast_all"``), steps every env with
``mujoco.mj_step`` on a pool of threads (MuJoCo releases the GIL while it steps) and returns the arrays
the observations and the reward read. The rest of the program (actions, rewards, auto-reset, the
learner) stays compiled. It is the reference's own engine in float64, so it matches Gymnasium-Robotics
to float64 rounding plus one float32 rounding of the state per step when JAX's x64 mode is off.

Nothing here holds an env's state between calls: the physics object keeps scratch ``MjData`` (and model
copies for domain-randomised constants), one per worker, overwritten at every env a worker steps.
"""

from __future__ import annotations

import copy
import importlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

RANDOMISED = ("body_mass", "geom_friction", "actuator_gear")
"""The model constants ``MaMuJoCoParams`` may vary per env, in the order the callbacks take them."""

_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def default_threads() -> int:
    """The CPU cores this process may use (the batch is split among that many threads)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _pool(threads: int) -> ThreadPoolExecutor:
    """One shared pool per thread count: env objects stay copyable and hold no threads."""
    with _POOLS_LOCK:
        if threads not in _POOLS:
            _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="mamujoco-c")
        return _POOLS[threads]


class HostPhysics:
    """Batched ``mj_step``/``mj_forward`` for one compiled MuJoCo model, called from JAX.

    Args:
        model: the C model (``mujoco.MjModel``) exactly as the reference builds it.
        frame_skip: MuJoCo steps per env step.
        fields: what the env reads after a step, among ``xpos``, ``xipos``, ``cinert``, ``cvel``,
            ``qfrc_actuator`` and ``cfrc_ext`` (``qpos``, ``qvel`` and ``qacc_warmstart`` always come back).
        reset_fields: what it reads after a reset, among the same.
        threads: worker threads per batch; 1 steps on the calling thread.

    A reset runs only the stages of MuJoCo's forward pass its fields need (``reset_stage``): auto-reset
    computes a reset for every env at every step, and the full pass (collisions, the constraint solver)
    would cost as much as a substep for values that depend on positions and velocities only.
    """

    def __init__(
        self, model: Any, frame_skip: int, fields: Sequence[str], reset_fields: Sequence[str], threads: int
    ) -> None:
        self._mujoco: Any = importlib.import_module("mujoco")  # a compiled module without type stubs
        self.model = model
        self.frame_skip = frame_skip
        self.threads = threads
        self.contact_forces = "cfrc_ext" in fields
        nbody = model.nbody
        shapes = {
            "xpos": (nbody, 3),
            "xipos": (nbody, 3),
            "cinert": (nbody, 10),
            "cvel": (nbody, 6),
            "qfrc_actuator": (model.nv,),
            "cfrc_ext": (nbody, 6),
        }
        self.fields = tuple(f for f in shapes if f in fields or f in reset_fields)
        state = {"qpos": (model.nq,), "qvel": (model.nv,), "qacc_warmstart": (model.nv,)}
        self.shapes = {**state, **{f: shapes[f] for f in shapes if f in fields}}
        self.defaults = [np.asarray(getattr(model, name), np.float64) for name in RANDOMISED]
        if model.na:
            raise ValueError("the C backend carries no actuator activations (these robots have none)")
        flags = self._mujoco.mjtState
        self._state_out = int(flags.mjSTATE_QPOS | flags.mjSTATE_QVEL | flags.mjSTATE_WARMSTART)
        self._state_in = int(self._state_out | flags.mjSTATE_CTRL)
        self._lock = threading.Lock()
        self._free: dict[bool, list[tuple[Any, Any, dict[str, np.ndarray]]]] = {False: [], True: []}
        # cfrc_ext is zero after a reset (MuJoCo computes it only after a step); qfrc_actuator is zero at zero
        # control when no actuator has a bias term or gravity compensation (every Gymnasium robot)
        motors_only = not np.any(model.actuator_biastype) and not np.any(model.body_gravcomp)
        zero = {"cfrc_ext", *(["qfrc_actuator"] if motors_only else [])}
        reset_reads = {f for f in reset_fields if f in shapes} - zero
        self.zero_at_reset = {f: shapes[f] for f in shapes if f in reset_fields and f in zero}
        self.reset_shapes = {f: shapes[f] for f in shapes if f in reset_reads}
        """What a reset's host call returns (its positions and velocities are its inputs)."""
        if "qfrc_actuator" in reset_reads:
            self.reset_stage = "forward"
        elif reset_reads & {"cinert", "cvel"}:
            self.reset_stage = "com"  # kinematics, then the centre-of-mass frames and velocities
        elif reset_reads:
            self.reset_stage = "kinematics"
        else:
            self.reset_stage = "none"
        """How much of MuJoCo's forward pass a reset runs: ``none`` (the env reads positions and velocities
        only, and calls nothing), ``kinematics``, ``com`` or ``forward``."""

    # -- the JAX side ----------------------------------------------------------------------------------

    def step(
        self, qpos: Array, qvel: Array, warmstart: Array, ctrl: Array, constants: Sequence[Array]
    ) -> dict[str, Array]:
        """``frame_skip`` MuJoCo steps of one env (batched by ``vmap`` into one host call per batch)."""
        return self._call(self._step_batch, (qpos, qvel, warmstart, ctrl), constants, qpos.dtype)

    def forward(self, qpos: Array, qvel: Array, constants: Sequence[Array]) -> dict[str, Array]:
        """MuJoCo's forward pass at ``(qpos, qvel)`` with zero control, as Gymnasium's ``set_state``; only its
        stages that the reset's fields need (none: no host call)."""
        values = {name: jnp.zeros(shape, qpos.dtype) for name, shape in self.zero_at_reset.items()}
        values.update(qpos=qpos, qvel=qvel, qacc_warmstart=jnp.zeros_like(qvel))
        if self.reset_stage != "none":
            state = (qpos, qvel)
            values.update(self._call(self._forward_batch, state, constants, qpos.dtype, self.reset_shapes))
        return values

    def _call(
        self,
        batch_fn: Callable,
        state: tuple,
        constants: Sequence[Array],
        dtype: Any,
        shapes: dict[str, tuple[int, ...]] | None = None,
    ) -> dict[str, Array]:
        shapes = self.shapes if shapes is None else shapes
        names = tuple(shapes)
        out_types = tuple(jax.ShapeDtypeStruct(shapes[n], dtype) for n in names)

        def host(*args: np.ndarray) -> tuple[np.ndarray, ...]:
            lead = args[0].shape[:-1]
            flat = [np.asarray(a, np.float64).reshape(-1, *a.shape[len(lead):]) for a in args]
            outs = batch_fn(flat[: len(state)], flat[len(state):])
            return tuple(outs[n].reshape(*lead, *shapes[n]).astype(dtype) for n in names)

        result = jax.pure_callback(host, out_types, *state, *constants, vmap_method="broadcast_all")
        return dict(zip(names, result, strict=True))

    # -- the host side ---------------------------------------------------------------------------------

    def _acquire(self, randomised: bool) -> tuple[Any, Any, dict[str, np.ndarray]]:
        """A free scratch (model, data, views of the data's arrays) for one worker; a model copy only when
        constants vary. Owned by this object, not by the calling thread: XLA's threads are not Python's, and
        MuJoCo objects freed at such a thread's exit crash the interpreter. The views are made once: each
        attribute read of ``MjData`` builds a new array object, which costs as much as the copy it feeds."""
        with self._lock:
            if self._free[randomised]:
                return self._free[randomised].pop()
        model = copy.copy(self.model) if randomised else self.model
        data = self._mujoco.MjData(model)
        names = ("qpos", "qvel", "qacc_warmstart", "ctrl", *self.fields)
        return model, data, {name: getattr(data, name) for name in names}

    def _release(self, randomised: bool, scratch: tuple[Any, Any, dict[str, np.ndarray]]) -> None:
        with self._lock:
            self._free[randomised].append(scratch)

    def _varies(self, constants: Sequence[np.ndarray]) -> bool:
        return any(not np.array_equal(c, d[None]) for c, d in zip(constants, self.defaults, strict=True))

    def _outputs(self, n: int, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
        return {name: np.empty((n, *shape)) for name, shape in shapes.items()}

    def _run(self, n: int, randomised: bool, body: Callable[..., None]) -> None:
        """``body(lo, hi, model, data, views)`` over ``[0, n)``, split among the threads."""

        def work(lo: int, hi: int) -> None:
            scratch = self._acquire(randomised)
            try:
                body(lo, hi, *scratch)
            finally:
                self._release(randomised, scratch)

        threads = min(self.threads, n)
        if threads <= 1:
            work(0, n)
            return
        bounds = np.linspace(0, n, threads + 1).astype(int)
        pool = _pool(self.threads)
        futures = [pool.submit(work, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        for future in futures:
            future.result()

    def _step_batch(self, state: list[np.ndarray], constants: list[np.ndarray]) -> dict[str, np.ndarray]:
        mujoco = self._mujoco
        qpos, qvel, warmstart, ctrl = state
        randomised = self._varies(constants)
        out = self._outputs(qpos.shape[0], {k: v for k, v in self.shapes.items() if k in self.fields})

        # the state in and out as MuJoCo packs it (its order: qpos, qvel, warm start, ctrl): one call per env
        # each way instead of a copy per array, which is most of the host's time on the small robots
        packed_in = np.concatenate([qpos, qvel, warmstart, ctrl], axis=1)
        packed_out = np.empty((qpos.shape[0], self.model.nq + 2 * self.model.nv))
        state_in, state_out = self._state_in, self._state_out

        def run(lo: int, hi: int, model: Any, data: Any, views: dict[str, np.ndarray]) -> None:
            model_views = [getattr(model, name) for name in RANDOMISED]
            outputs = [(out[name], views[name]) for name in self.fields if name in self.shapes]
            step, rne = mujoco.mj_step, mujoco.mj_rnePostConstraint
            set_state, get_state = mujoco.mj_setState, mujoco.mj_getState
            frame_skip, contact = self.frame_skip, self.contact_forces
            for i in range(lo, hi):
                if randomised:
                    for view, values in zip(model_views, constants, strict=True):
                        view[:] = values[i]
                set_state(model, data, packed_in[i], state_in)
                step(model, data, frame_skip)
                if contact:
                    # mj_step leaves the contact forces uncomputed; v5 computes them after every step
                    rne(model, data)
                get_state(model, data, packed_out[i], state_out)
                for target, view in outputs:
                    target[i] = view

        self._run(qpos.shape[0], randomised, run)
        nq, nv = self.model.nq, self.model.nv
        out["qpos"], out["qvel"], out["qacc_warmstart"] = np.split(packed_out, [nq, nq + nv], axis=1)
        return out

    def _forward_batch(self, state: list[np.ndarray], constants: list[np.ndarray]) -> dict[str, np.ndarray]:
        mujoco = self._mujoco
        qpos, qvel = state
        randomised = self._varies(constants)
        out = self._outputs(qpos.shape[0], self.reset_shapes)
        stages = {
            "forward": (mujoco.mj_forward,),
            "com": (mujoco.mj_kinematics, mujoco.mj_comPos, mujoco.mj_comVel),
            "kinematics": (mujoco.mj_kinematics,),
        }[self.reset_stage]

        def run(lo: int, hi: int, model: Any, data: Any, views: dict[str, np.ndarray]) -> None:
            model_views = [getattr(model, name) for name in RANDOMISED]
            outputs = [(out[name], views[name]) for name in self.reset_shapes]
            full = self.reset_stage == "forward"
            for i in range(lo, hi):
                if randomised:
                    for view, values in zip(model_views, constants, strict=True):
                        view[:] = values[i]
                if full:  # the whole pass reads controls and more: start from clean data, as Gymnasium does
                    mujoco.mj_resetData(model, data)
                # (kinematics and the centre-of-mass pass read only the model, qpos and qvel)
                views["qpos"][:] = qpos[i]
                views["qvel"][:] = qvel[i]
                for stage in stages:
                    stage(model, data)
                for target, view in outputs:
                    target[i] = view

        self._run(qpos.shape[0], randomised, run)
        return out


class HostData:
    """What the env reads of MuJoCo's data after a host step, under MJX ``Data``'s attribute names."""

    def __init__(self, values: dict[str, Array]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        if name == "_impl":  # MJX keeps cinert and cfrc_ext on its JAX-side data; here they are flat
            return self
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"the C backend did not return {name!r}") from None
