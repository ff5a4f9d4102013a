"""``AutoReset``: start a new episode wherever one ended, keeping the last observation in ``final_obs``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmarl_suite.accelerated import fork
from jaxmarl_suite.core.env import MultiAgentEnv, State
from jaxmarl_suite.core.types import EnvParams, GroupDict, TimeStep
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers.base import Wrapper, broadcast_to_leaf, episode_done

Array = jax.Array


class AutoReset(Wrapper):
    """Resets envs whose episode ended (every agent terminated or truncated).

    On such a step the returned ``obs`` and ``action_mask`` are the new episode's first ones, while
    ``reward``, ``terminated`` and ``truncated`` still describe the transition that ended the old
    episode, and ``info["final_obs"]`` holds the old episode's last observation (bootstrap from it on
    truncation). ``info["final_obs"]`` is always present and equals ``obs`` where nothing ended. The
    env's ``observation_info`` entries (SMAX's ``world_state``) restart the same way, with the ended
    episode's in ``info["final_<key>"]``.

    ``mode`` says how the reset is paid for; every mode gives the same trajectories. ``"cond"`` computes
    it under ``lax.cond`` only when some env in the batch ended, so resets cost nothing on the other steps
    (under an outer ``vmap`` the cond becomes a select). ``"select"`` computes a reset every step and
    selects it per env, as ``jax.vmap`` of a JaxMARL env does: no branch, which is faster when some env
    ends on most steps, since a branch keeps XLA from fusing the reset into the step and copies the state
    in and out (SMAX_3m at batch 4096 on 2 CPU cores: 1.1M env steps/s against 0.64M; MPE spread, whose
    envs all end on one step in 25: 5.1M against 12.9M). ``"sparse"`` (a ``VecEnv`` only) branches three
    ways: nothing when no env ended, a start for only the envs that ended when they are at most
    ``sparse_fraction`` of the batch (``VecEnv.reset_at``, each env started exactly as a full reset would
    start it, written back with ``VecEnv.put``), and a full reset otherwise; it pays where a start costs
    several steps and ends are spread over the steps (LBF 8x8-2p-2f at batch 4,096 on one CPU core: 4.5M
    env steps/s against select's 1.9M and cond's 1.9M; SMAX_3m, whose start is cheaper: 0.36M against
    0.44M). ``"cond_on_cpu"`` and ``"sparse_on_cpu"`` are ``"cond"`` and ``"sparse"`` when the program is
    lowered for the CPU and ``"select"`` elsewhere: on a GPU a branch sends its predicate to the host and
    waits for it every step, and both of its branches launch kernels (for MPE spread's IPPO rollout on an
    H200 target, 6 either way against one for the select). ``"auto"`` (the default) is ``"cond_on_cpu"``
    for envs whose ``episodes_end_together`` unless their ``cheap_reset``, ``"sparse_on_cpu"`` for a
    ``VecEnv`` of an env with a ``costly_reset``, and ``"select"`` for the rest.

    ``vmapped=True`` says the caller will ``vmap`` this env's step (the trainers vmap seeds and grid
    points). There a branch on a batched predicate runs every branch and selects, so ``"sparse"`` would pay
    its partial start on top of the full one (LBF 8x8-2p-2f, 3 vmapped batches of 1,024 on one core: 0.83M
    env steps/s against select's 0.91M); ``"auto"`` then picks ``"select"`` instead of it.
    """

    MODES = ("auto", "cond", "select", "cond_on_cpu", "sparse", "sparse_on_cpu")

    def __init__(self, env: MultiAgentEnv, mode: str = "auto", sparse_fraction: float = 1 / 16,
                 vmapped: bool = False) -> None:
        super().__init__(env)
        if mode not in self.MODES:
            raise ValueError(f"AutoReset mode must be one of {self.MODES}, got {mode!r}")
        if not 0 < sparse_fraction <= 1:
            raise ValueError(f"sparse_fraction must lie in (0, 1], got {sparse_fraction}")
        # Wrappers forward attributes, so only the VecEnv itself (not one behind a wrapper that changes
        # the state) can start a part of the batch.
        vec = isinstance(env, VecEnv)
        if mode in ("sparse", "sparse_on_cpu") and not vec:
            raise ValueError(f"AutoReset mode {mode!r} resets part of a batch, so it wraps a VecEnv directly "
                             f"(make(env_id, num_envs=B)); got {env!r}")
        if mode == "auto":
            if env.episodes_end_together and not env.cheap_reset:
                mode = "cond_on_cpu"
            elif env.costly_reset and vec and not vmapped:
                mode = "sparse_on_cpu"
            else:
                mode = "select"
        self.sparse_size = max(1, round(env.num_envs * sparse_fraction)) if vec else 0
        self.mode = mode

    def reset(self, key: Array, params: EnvParams | None = None) -> tuple[State, TimeStep]:
        """Reset, with ``final_obs`` set to the first observation so the info structure never changes."""
        state, timestep = self.env.reset(key, params)
        observed = {f"final_{k}": timestep.info[k] for k in self.observation_info}
        return state, timestep._replace(info={**timestep.info, "final_obs": timestep.obs, **observed})

    def step(
        self, key: Array, state: State, actions: GroupDict, params: EnvParams | None = None
    ) -> tuple[State, TimeStep]:
        """Step; where the episode ended, reset with a key split from ``key``."""
        step_key, reset_key = jax.random.split(key)
        state, timestep = self.env.step(step_key, state, actions, params)
        done = episode_done(timestep)

        world = {k: timestep.info[k] for k in self.observation_info}

        def start_new_episodes() -> tuple[State, GroupDict, GroupDict, dict[str, Array]]:
            fresh_state, fresh = self.env.reset(reset_key, params)
            pick = lambda new, old: jnp.where(broadcast_to_leaf(done, old), new, old)  # noqa: E731
            return (
                self.env.select(done, fresh_state, state),
                jax.tree.map(pick, fresh.obs, timestep.obs),
                jax.tree.map(pick, fresh.action_mask, timestep.action_mask),
                {k: pick(fresh.info[k], v) for k, v in world.items()},
            )

        def start_few() -> tuple[State, GroupDict, GroupDict, dict[str, Array]]:
            vec = self.env
            assert isinstance(vec, VecEnv)
            index = jnp.nonzero(done, size=self.sparse_size, fill_value=done.shape[0])[0]
            fresh_state, fresh = vec.reset_at(reset_key, index, params)
            put = lambda new, old: old.at[index].set(new, mode="drop")  # noqa: E731
            return (
                vec.put(state, index, fresh_state),
                jax.tree.map(put, fresh.obs, timestep.obs),
                jax.tree.map(put, fresh.action_mask, timestep.action_mask),
                {k: put(fresh.info[k], v) for k, v in world.items()},
            )

        def keep_going() -> tuple[State, GroupDict, GroupDict, dict[str, Array]]:
            return state, timestep.obs, timestep.action_mask, world

        def branch() -> tuple[State, GroupDict, GroupDict, dict[str, Array]]:
            return jax.lax.cond(jnp.any(done), start_new_episodes, keep_going)

        def three_ways() -> tuple[State, GroupDict, GroupDict, dict[str, Array]]:
            count = jnp.sum(done)
            which = jnp.where(count == 0, 0, jnp.where(count <= self.sparse_size, 1, 2))
            return jax.lax.switch(which, (keep_going, start_few, start_new_episodes))

        if self.mode == "select":
            state, obs, action_mask, new_world = start_new_episodes()
        elif self.mode == "cond":
            state, obs, action_mask, new_world = branch()
        elif self.mode == "sparse":
            state, obs, action_mask, new_world = three_ways()
        elif self.mode == "sparse_on_cpu":
            state, obs, action_mask, new_world = fork(cpu=three_ways, accelerator=start_new_episodes)
        else:
            state, obs, action_mask, new_world = fork(cpu=branch, accelerator=start_new_episodes)
        ended = {f"final_{k}": v for k, v in world.items()}
        info = {**timestep.info, **new_world, "final_obs": timestep.obs, **ended}
        return state, timestep._replace(obs=obs, action_mask=action_mask, info=info)
