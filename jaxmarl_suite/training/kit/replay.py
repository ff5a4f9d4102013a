"""The replay-based value learner IQL, VDN and QMIX share, written once: they differ only in how the agents'
action values combine into what the TD error is taken on (``Mixer``), so each baseline file holds its
mixer and settings and hands them to ``make_replay_trainer``.

One update:
1. **Rollout**: ``num_steps`` epsilon-greedy steps of every env, where the first ``greedy_fraction`` of
   the envs act greedily (epsilon 0): their episodes are logged apart as ``greedy_*``, and their
   transitions train like the others (Ape-X's per-actor exploration rates).
2. **Replay**: each env's rollout is one item of a flashbax item buffer, a training sequence that keeps
   the recurrent state it started from (R2D2's stored state; JaxMARL starts every sequence from zeros).
3. **Learning**, once the buffer can sample and ``learning_starts`` env steps have passed:
   ``gradient_steps`` steps, each on ``buffer_batch_size`` sampled sequences. Targets bootstrap from the
   observation each step led to (``info["final_obs"]``, so truncation bootstraps and termination does
   not), valued by the target network at the online net's greedy legal action (``double_q``) or by its
   legal max.
4. **Target network**: ``tau``-mixed into the online one every ``target_update_interval`` updates.

Without a mixer (IQL) every agent has its own TD error on its own reward, weighted by whether it was alive;
a mixer turns the values taken by every agent of every group (``[..., N]``) and the world state into one
team value per env, and the TD error is taken on the team reward (``q.team_reward``) and on termination of
the whole env.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import check_positive_ints, check_range, require
from jaxmarl_suite.training.kit import envs, loops, networks, q
from jaxmarl_suite.training.kit.baseline import Trainer
from jaxmarl_suite.training.kit.envs import PARAM_SHARING, check_env_id
from jaxmarl_suite.training.kit.ppo import annealed_adam
from jaxmarl_suite.training.kit.schedule import (
    Extension,
    check_extensions,
    schedule_env_steps,
    schedule_knots,
)

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """Static settings of a replay-based value learner (IQL, VDN, QMIX): changing one recompiles."""

    env_id: str = "MPE_simple_spread_v3"
    """Registered env id (JaxMARL's ids work); every group must act discretely."""
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Env constructor arguments as JSON, e.g. '{"num_agents": 4}'."""
    num_envs: int = 8
    """Envs stepped in parallel per run."""
    num_steps: int = 26
    """Steps per env in each rollout; each env's rollout is one replay item (a training sequence)."""
    total_timesteps: int = 1_000_000
    """Env steps per run (one env step = every agent acting once)."""
    buffer_size: int = 5000
    """Replay capacity in sequences (num_steps env steps each); checked against free memory first."""
    buffer_batch_size: int = 32
    """Sequences per gradient step."""
    learning_starts: int = 10_000
    """Env steps collected before the first gradient step."""
    gradient_steps: int = 1
    """Gradient steps per update, each on a fresh sample (JaxMARL's NUM_EPOCHS)."""
    target_update_interval: int = 200
    """Updates between target-network updates."""
    double_q: bool = True
    """Bootstrap from the target net's value of the online net's greedy action (double Q)."""
    hidden_sizes: tuple[int, ...] = (64,)
    """Widths of the dense layers after the torso (and GRU), as JSON, e.g. '[64, 64]'; '[]' after a GRU is
    JaxMARL's recurrent Q-network (dense, GRU, head)."""
    activation: str = "relu"
    """Hidden activation: tanh, relu or gelu."""
    recurrent: bool = False
    """Put a GRU after the first layer; sequences then carry memory."""
    gru_size: int = 64
    """GRU width (and its embedding) when recurrent."""
    torso: str = "mlp"
    """How observations become features: mlp (flattened) or cnn (image observations, e.g. Overcooked)."""
    param_sharing: str = "group"
    """group: one net per group; agent: one per agent; all: one for every agent (padded, group id)."""
    agent_ids: bool = True
    """Append a one-hot agent index to the features of agents that share a net."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to zero over the run."""
    optimizer: str = "adam"
    """adam (eps 1e-5) or radam (rectified Adam, what JaxMARL's value-based scripts use)."""
    shaped_reward_steps: int = 0
    """Add the env's info["shaped_reward"] (Overcooked), weighted 1 falling to 0 over this many env steps."""
    greedy_fraction: float = 0.125
    """Share of the envs that act greedily (epsilon 0), logged as greedy_*; their transitions train too."""
    log_every: int = 1
    """Write a metrics row every this many updates."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many updates (0: only at the end)."""
    extensions: tuple[Extension, ...] = dataclasses.field(default=(), metadata={"flag": False})
    """Where a resumed run raised total_timesteps: [update, total_timesteps before, hold|restart] each
    (written by train --resume --extend; kit.schedule)."""

    @property
    def batch_size(self) -> int:
        """Env steps per rollout."""
        return self.num_envs * self.num_steps

    def schedules_tied_to_length(self, grid: Sequence[Any]) -> list[str]:
        """The schedules that depend on ``total_timesteps`` (a raised total changes them), by flag."""
        return (["--anneal-lr"] if self.anneal_lr else []) + q.epsilon_schedule_flags(grid)

    @property
    def num_updates(self) -> int:
        """Rollout-and-learn iterations per run."""
        return self.total_timesteps // self.batch_size

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_positive_ints(self, ["num_envs", "num_steps", "total_timesteps", "buffer_size",
                                   "buffer_batch_size", "gradient_steps", "target_update_interval",
                                   "gru_size", "log_every"])
        for name in ("learning_starts", "checkpoint_every", "shaped_reward_steps"):
            value = getattr(self, name)
            require(isinstance(value, int) and not isinstance(value, bool) and value >= 0, name,
                    f"must be an integer >= 0, got {value!r}")
        require(self.activation in networks.ACTIVATIONS, "activation",
                f"must be one of {sorted(networks.ACTIVATIONS)}, got {self.activation!r}")
        require(self.torso in networks.TORSOS, "torso", f"must be one of {list(networks.TORSOS)}, "
                f"got {self.torso!r}")
        require(self.param_sharing in PARAM_SHARING, "param_sharing",
                f"must be one of {list(PARAM_SHARING)}, got {self.param_sharing!r}")
        require((len(self.hidden_sizes) >= 1 or self.recurrent) and min(self.hidden_sizes, default=1) >= 1,
                "hidden_sizes", f"must be one or more positive widths (or none after a GRU: --recurrent), "
                f"got {self.hidden_sizes!r}")
        require(self.num_updates >= 1, "total_timesteps",
                f"must be at least num_envs * num_steps = {self.batch_size}, got {self.total_timesteps}")
        require(self.buffer_size >= max(self.num_envs, self.buffer_batch_size), "buffer_size",
                f"must hold at least the {self.num_envs} sequences one update adds and the "
                f"{self.buffer_batch_size} one gradient step samples, got {self.buffer_size}")
        q.check_greedy_fraction(self)
        require(self.optimizer in q.OPTIMIZERS, "optimizer",
                f"must be one of {list(q.OPTIMIZERS)}, got {self.optimizer!r}")
        check_extensions(self)
        check_env_id(self.env_id)
        require(isinstance(self.env_kwargs, dict), "env_kwargs",
                f"must be a mapping, got {self.env_kwargs!r}")


@struct.dataclass
class ReplayHParams(q.QHParams):
    """Traceable hyperparameters of a replay-based value learner (``q.QHParams`` and the target mix):
    vmapped over for sweeps."""

    lr: float = 5e-3
    """Learning rate (the start value when annealed)."""
    max_grad_norm: float = 25.0
    """Global gradient-norm clip."""
    tau: float = 1.0
    """Target update mix: 1 copies the online net (a hard update)."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        check_range(self, "tau", 0.0, 1.0, open_low=True)


class Mixer(NamedTuple):
    """How the values every agent took become one team value per env (VDN's sum, QMIX's hypernetwork)."""

    init: Callable[[Array, int, int], Any]
    """``(key, num_agents, state_dim) -> params``."""
    apply: Callable[[Any, Array, Array], Array]
    """``(params, q [..., num_agents], world_state [..., state_dim]) -> [...]``."""
    needs_state: bool
    """Whether ``apply`` reads the world state (the env is then built with ``info["world_state"]``)."""


class ReplayRunnerState(struct.PyTreeNode):
    """Everything that carries from one update to the next, replay buffer included (checkpointed as is)."""

    params: dict[str, Any]
    """``{"agents": {group: QNetwork parameters}, "mixer": mixer parameters}``."""
    target_params: dict[str, Any]
    opt_state: Any
    buffer: Any
    env_state: Any
    timestep: Any
    """What the next step acts on of the last ``TimeStep`` (``envs.observation``), not all of it."""
    hidden: dict[str, Array]
    starts: Array
    alive: dict[str, Array]
    key: Array
    update: Array


def make_replay_env(config: ReplayConfig, mixer: Mixer | None, num_envs: int | None = None,
                    auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack a replay learner trains on: ``num_envs`` envs (default ``config.num_envs``), with
    ``info["world_state"]`` when the mixer reads it."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                                  config.env_kwargs, config.param_sharing,
                                  world_state=mixer is not None and mixer.needs_state, auto_reset=auto_reset)


def make_replay_trainer(config: ReplayConfig, env: MultiAgentEnv, mixer: Mixer | None) -> Trainer:
    """Pure ``init`` and ``update`` of a replay learner on ``env`` (``make_replay_env``); ``mixer`` None
    is IQL. Raises ``ConfigError`` (``buffer_size``) when the buffer would not fit in free memory."""
    config.validate()
    groups = list(env.groups)
    counts = q.discrete_actions(env)
    applies = q.q_networks(config, env)
    hidden_width = config.gru_size if config.recurrent else 1
    sizes = {g: env.group_size(g) for g in groups}
    num_agents = sum(sizes.values())
    _, example_timestep = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    needs_state = mixer is not None and mixer.needs_state
    state_dim = example_timestep.info["world_state"].shape[-1] if needs_state else 0
    num_greedy = q.greedy_env_count(config.num_envs, config.greedy_fraction)
    final_rows = q.final_obs_rows(config.num_steps, env.default_params.max_steps)

    def zero_hidden(num: int) -> dict[str, Array]:
        return {g: jnp.zeros((num, sizes[g], hidden_width)) for g in groups}

    def group_starts(starts: Array) -> dict[str, Array]:
        return {g: jnp.broadcast_to(starts[..., None], (*starts.shape, sizes[g])) for g in groups}

    def sequence_item(timestep: Any) -> dict[str, Any]:
        """One env's rollout as stored: ``[T, ...]`` per field, and the hidden state it starts from."""
        per_group = {
            g: {"obs": timestep.obs[g][0], "mask": jnp.zeros((sizes[g], counts[g]), bool),
                "action": jnp.zeros((sizes[g],), jnp.int32), "reward": jnp.zeros((sizes[g],)),
                "terminated": jnp.zeros((sizes[g],), bool), "alive": jnp.zeros((sizes[g],), bool),
                "final_obs": timestep.obs[g][0], "next_mask": jnp.zeros((sizes[g], counts[g]), bool)}
            for g in groups
        }
        step = {"groups": per_group, "starts": jnp.zeros((), bool), "env_terminated": jnp.zeros((), bool)}
        if state_dim:
            step["world_state"] = step["final_world_state"] = jnp.zeros((state_dim,))
        sequence = jax.tree.map(lambda x: jnp.zeros((config.num_steps, *x.shape), x.dtype), step)
        sequence["hidden"] = {g: jnp.zeros((sizes[g], hidden_width)) for g in groups}
        return sequence

    item_shape = jax.eval_shape(sequence_item, example_timestep)
    replay = q.make_replay(item_shape, config.buffer_size, config.buffer_batch_size, config.num_envs)

    def optimizer(hparams: ReplayHParams) -> optax.GradientTransformation:
        return annealed_adam(hparams.lr, hparams.max_grad_norm, anneal_lr=config.anneal_lr,
                             num_updates=config.num_updates, steps_per_update=config.gradient_steps,
                             rectified=config.optimizer == "radam", knots=schedule_knots(config))

    def init(key: Array, hparams: ReplayHParams) -> ReplayRunnerState:
        key, env_key, net_key, mixer_key = jax.random.split(key, 4)
        env_state, timestep = env.reset(env_key)
        params = {"agents": q.init_q_params(config, env, net_key),
                  "mixer": mixer.init(mixer_key, num_agents, state_dim) if mixer is not None else {}}
        buffer = replay.init(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), item_shape))
        alive = {g: jnp.ones((config.num_envs, sizes[g]), bool) for g in groups}
        return ReplayRunnerState(params, params, optimizer(hparams).init(params), buffer, env_state,
                                 envs.observation(env, timestep),
                                 zero_hidden(config.num_envs), jnp.ones((config.num_envs,), bool), alive,
                                 key, jnp.int32(0))

    # ------------------------------------------------------------------------------------------- rollout
    def rollout(runner: ReplayRunnerState, hparams: ReplayHParams
                ) -> tuple[ReplayRunnerState, dict[str, Any], dict[str, Array]]:
        env_steps = runner.update * config.batch_size
        epsilon = q.linear_epsilon(schedule_env_steps(runner.update, config), hparams.epsilon_start,
                                   hparams.epsilon_end, hparams.epsilon_decay * config.total_timesteps)
        epsilons = q.env_epsilons(config.num_envs, num_greedy, epsilon)
        weight = envs.shaped_reward_weight(env_steps, config.shaped_reward_steps)

        def step(runner: ReplayRunnerState, _: None) -> tuple[ReplayRunnerState, Any]:
            key, env_key, *group_keys = jax.random.split(runner.key, 2 + len(groups))
            timestep = runner.timestep
            starts = group_starts(runner.starts)
            masks = q.full_masks(timestep, env, counts)
            hidden, actions = q.explore(applies, runner.params["agents"], runner.hidden, timestep, starts,
                                        masks, epsilons, group_keys)[:2]
            env_actions = {g: actions[g].astype(env.action_space(g).dtype) for g in groups}
            env_state, next_timestep = env.step(env_key, runner.env_state, env_actions)
            ended = envs.agent_done(next_timestep)
            env_ended = next_timestep.info["episode_done"]
            next_mask = q.next_masks(q.full_masks(next_timestep, env, counts), env_ended)
            transition = {
                "groups": {g: {"obs": timestep.obs[g], "mask": masks[g],
                               "action": actions[g],
                               "reward": envs.training_reward(next_timestep, g, weight),
                               "terminated": next_timestep.terminated[g], "alive": runner.alive[g],
                               "final_obs": next_timestep.info["final_obs"][g], "next_mask": next_mask[g]}
                           for g in groups},
                "starts": runner.starts,
                "env_terminated": q.all_agents(next_timestep.terminated).all(-1),
            }
            if state_dim:
                transition["world_state"] = envs.world_state(env, timestep)
                transition["final_world_state"] = next_timestep.info["final_world_state"]
            alive = {g: jnp.where(env_ended[:, None], True, runner.alive[g] & ~ended[g]) for g in groups}
            stats, greedy_stats = q.split_episode_stats(next_timestep, num_greedy)
            runner = runner.replace(env_state=env_state, timestep=envs.observation(env, next_timestep),
                                    hidden=hidden, starts=env_ended, alive=alive, key=key)
            return runner, (transition, stats, greedy_stats)

        start_hidden = runner.hidden
        runner, (trajectory, stats, greedy_stats) = loops.scan(step, runner, None, length=config.num_steps,
                                                                unroll=1)
        # [T, B, ...] -> one item per env, [B, T, ...], with the recurrent state its sequence starts from
        items = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), trajectory)
        items["hidden"] = start_hidden
        metrics = {**envs.episode_metrics(stats), "epsilon": epsilon}
        if greedy_stats:
            metrics.update({f"greedy_{k}": v for k, v in envs.episode_metrics(greedy_stats).items()})
        return runner, items, metrics

    # ---------------------------------------------------------------------------------------------- loss
    def loss_fn(params: dict[str, Any], target_params: dict[str, Any], sample: dict[str, Any],
                hparams: ReplayHParams) -> tuple[Array, Array]:
        """Mean squared TD error over sampled sequences (``[M, T, ...]`` as stored)."""
        sequences = {k: v for k, v in sample.items() if k != "hidden"}
        batch = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), sequences)
        starts = group_starts(batch["starts"])  # a sequence that opens an episode resets the stored state
        # Step t ended its episode when step t + 1 starts one; those that did not end it by termination
        # (and the last step) bootstrap from a value of their own final observation.
        ended = jnp.concatenate([batch["starts"][1:], jnp.zeros_like(batch["starts"][:1])])
        truncated = ended & ~batch["env_terminated"]

        def values_and_next(g: str, net_params: Any) -> tuple[Array, Array]:
            b = batch["groups"][g]
            _, values, hiddens = applies[g](net_params, sample["hidden"][g], b["obs"], starts[g])
            return values, q.next_q_values(applies[g], net_params, values, hiddens, b["final_obs"], truncated,
                                           final_rows)

        taken, bootstrap, terms = {}, {}, []
        for g in groups:
            b = batch["groups"][g]
            values, next_values = values_and_next(g, params["agents"][g])
            _, next_target = values_and_next(g, target_params["agents"][g])
            online_next = jax.lax.stop_gradient(next_values) if config.double_q else None
            taken[g] = q.chosen_q(values, b["action"])
            bootstrap[g] = jax.lax.stop_gradient(q.bootstrap_q(next_target, online_next, b["next_mask"]))
            if mixer is None:  # IQL: each agent's own TD error on its own reward, while it is alive
                target = (hparams.reward_scale * b["reward"]
                          + hparams.gamma * (1.0 - b["terminated"].astype(jnp.float32)) * bootstrap[g])
                weight = b["alive"].astype(jnp.float32)
                terms.append(jnp.sum(weight * (taken[g] - target) ** 2) / jnp.maximum(weight.sum(), 1.0))
        if mixer is None:
            loss = jnp.mean(jnp.stack(terms))
        else:
            world_state = batch.get("world_state", jnp.zeros(batch["starts"].shape + (0,)))
            final_state = batch.get("final_world_state", world_state)
            team_value = mixer.apply(params["mixer"], q.all_agents(taken), world_state)
            team_bootstrap = mixer.apply(target_params["mixer"], q.all_agents(bootstrap), final_state)
            reward = q.team_reward({g: batch["groups"][g]["reward"] for g in groups},
                                   {g: batch["groups"][g]["alive"] for g in groups})
            target = (hparams.reward_scale * reward
                      + hparams.gamma * (1.0 - batch["env_terminated"].astype(jnp.float32)) * team_bootstrap)
            loss = jnp.mean((team_value - jax.lax.stop_gradient(target)) ** 2)
        return loss, jnp.mean(q.all_agents(taken))

    # -------------------------------------------------------------------------------------------- update
    def update(runner: ReplayRunnerState, hparams: ReplayHParams
               ) -> tuple[ReplayRunnerState, dict[str, Array]]:
        runner, items, metrics = rollout(runner, hparams)
        buffer = replay.add(runner.buffer, items)
        done_updates = runner.update + 1
        ready = replay.can_sample(buffer) & (done_updates * config.batch_size >= config.learning_starts)
        tx = optimizer(hparams)

        def gradient_step(carry: tuple[Any, Any, Array], _: None) -> tuple[tuple[Any, Any, Array], Any]:
            params, opt_state, key = carry
            key, sample_key = jax.random.split(key)
            sample = replay.sample(buffer, sample_key).experience
            (loss, q_taken), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, runner.target_params,
                                                                              sample, hparams)
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state, key), (loss, q_taken)

        key, learn_key = jax.random.split(runner.key)
        (params, opt_state, _), (losses, q_taken) = jax.lax.scan(
            gradient_step, (runner.params, runner.opt_state, learn_key), None, config.gradient_steps)
        # Before learning starts the step is computed and dropped: under vmap a cond would run both anyway.
        params = jax.tree.map(lambda new, old: jnp.where(ready, new, old), params, runner.params)
        opt_state = jax.tree.map(lambda new, old: jnp.where(ready, new, old), opt_state, runner.opt_state)
        due = ready & (done_updates % config.target_update_interval == 0)
        target_params = jax.tree.map(lambda new, old: jnp.where(due, new, old),
                                     q.soft_update(runner.target_params, params, hparams.tau),
                                     runner.target_params)
        nan = jnp.float32(jnp.nan)
        metrics.update(td_loss=jnp.where(ready, losses.mean(), nan),
                       q_taken=jnp.where(ready, q_taken.mean(), nan))
        runner = runner.replace(params=params, target_params=target_params, opt_state=opt_state,
                                buffer=buffer, key=key, update=done_updates)
        return runner, metrics

    return Trainer(init, update, env)

