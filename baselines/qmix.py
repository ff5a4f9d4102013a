"""QMIX: monotonic value mixing for every agent group of any env with discrete actions, in one file.

The team's value is a mixing network of every agent's value (of every group), whose weights a hypernetwork
computes from the env's world state and keeps non-negative, so the team's greedy action is every agent's
greedy action (Rashid et al., 2018). One TD error is taken on it with the team reward (the mean over the
agents alive at the step, ``q.team_reward``) and the env's termination. Reads top to bottom: the config,
the mixer, the runner state, the env (``make_env``, with the world state), then inside ``make_trainer``
the replay item, the optimizer, the epsilon-greedy rollout, the TD loss and the update (replay sampling,
gradient steps, the target networks): the whole algorithm. From the kit it takes plumbing and tested
numerics only (the env stack and episode metrics, the value network ``q.QNetwork``, masked epsilon-greedy
and maxima, double-Q bootstraps, the team reward, the flashbax buffer, the optimizer built from the
config). This file repeats ``vdn.py`` but for its mixer; copy it to change the algorithm.

One update:
1. **Rollout**: ``num_steps`` epsilon-greedy steps of every env, where the first ``greedy_fraction`` of
   the envs act greedily (epsilon 0): their episodes are logged apart as ``greedy_*``, and their
   transitions train like the others (Ape-X's per-actor exploration rates).
2. **Replay**: each env's rollout is one item of a flashbax item buffer, a training sequence that keeps
   the recurrent state it started from (R2D2's stored state; JaxMARL starts every sequence from zeros),
   with the world state before and after every step.
3. **Learning**, once the buffer can sample and ``learning_starts`` env steps have passed:
   ``gradient_steps`` steps, each on ``buffer_batch_size`` sampled sequences. Every agent's bootstrap
   comes from the observation its step led to (``info["final_obs"]``, so truncation bootstraps and
   termination does not), valued by the target network at the online net's greedy legal action
   (``double_q``) or by its legal max; the target mixer mixes them on the world state that step led to.
4. **Target networks** (agents' and mixer's): ``tau``-mixed into the online ones every
   ``target_update_interval`` updates.

Run: ``python baselines/qmix.py --env SMAX_3m --seeds 4`` or ``jaxmarl-suite train qmix ...``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import check_positive_ints, check_range
from jaxmarl_suite.training.kit import envs, loops, networks, q, replay
from jaxmarl_suite.training.kit.baseline import Policy, Trainer
from jaxmarl_suite.training.kit.ppo import annealed_adam
from jaxmarl_suite.training.kit.schedule import schedule_env_steps, schedule_knots

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Config(replay.ReplayConfig):
    """QMIX's static settings: the replay learner's (``jaxmarl_suite.training.kit.replay.ReplayConfig``)
    and the mixer's sizes; every field is a ``--dashed-flag``."""

    mixer_embedding: int = 32
    """Width of the mixing network's hidden layer."""
    mixer_hypernet_hidden: int = 128
    """Width of the hypernetworks' hidden layer."""
    mixer_init_scale: float = 0.001
    """Scale of the hypernetworks' initial weights (small: the first team values start near the sum)."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        check_positive_ints(self, ["mixer_embedding", "mixer_hypernet_hidden"])
        check_range(self, "mixer_init_scale", 0.0, 10.0, open_low=True)


@struct.dataclass
class HParams(replay.ReplayHParams):
    """QMIX's traceable hyperparameters (``ReplayHParams``): vmapped for sweeps, so a grid compiles once."""


# ------------------------------------------------------------------------------------------------- mixer
class MonotonicMixer(nn.Module):
    """``(q [..., N], world_state [..., S]) -> [...]``: ``elu(q W1 + b1) W2 + V``, with ``W1``, ``b1``,
    ``W2`` and ``V`` functions of the world state and ``|W1|``, ``|W2|`` keeping the mix monotonic in
    every agent's value."""

    embedding: int
    hypernet_hidden: int
    init_scale: float

    @nn.compact
    def __call__(self, q_values: Array, world_state: Array) -> Array:
        """Mix every agent's value into the team's."""
        num_agents = q_values.shape[-1]
        init = networks.orthogonal(self.init_scale)

        def hypernet(width: int, name: str) -> Array:
            hidden = nn.relu(networks.Dense(self.hypernet_hidden, kernel_init=init, name=f"{name}_hidden")(
                world_state))
            return networks.Dense(width, kernel_init=init, name=name)(hidden)

        w1 = jnp.abs(hypernet(num_agents * self.embedding, "w1")).reshape(*q_values.shape, self.embedding)
        b1 = networks.Dense(self.embedding, kernel_init=init, name="b1")(world_state)
        w2 = jnp.abs(hypernet(self.embedding, "w2"))
        value = hypernet(1, "value")[..., 0]
        hidden = nn.elu(jnp.einsum("...n,...ne->...e", q_values, w1) + b1)
        return jnp.sum(hidden * w2, axis=-1) + value


class RunnerState(struct.PyTreeNode):
    """Everything that carries from one update to the next, replay buffer included (checkpointed as is)."""

    params: dict[str, Any]
    """``{"agents": {group: QNetwork parameters}, "mixer": MonotonicMixer parameters}``."""
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


def make_env(config: Config, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack QMIX trains on (and evaluation renders), with ``info["world_state"]``: ``num_envs``
    envs, default ``config.num_envs``."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                                  config.env_kwargs, config.param_sharing, world_state=True,
                                  auto_reset=auto_reset)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """The pure ``init`` and ``update`` of one run on ``env`` (``make_env(config)``). Raises
    ``ConfigError`` (``buffer_size``) when the buffer would not fit in free memory."""
    config.validate()
    groups = list(env.groups)
    counts = q.discrete_actions(env)
    applies = q.q_networks(config, env)
    hidden_width = config.gru_size if config.recurrent else 0
    sizes = {g: env.group_size(g) for g in groups}
    num_agents = sum(sizes.values())
    _, example_timestep = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    state_dim = env.world_state_space().shape[0]
    mixer = MonotonicMixer(config.mixer_embedding, config.mixer_hypernet_hidden, config.mixer_init_scale)
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
        step = {"groups": per_group, "starts": jnp.zeros((), bool), "env_terminated": jnp.zeros((), bool),
                "world_state": jnp.zeros((state_dim,)), "final_world_state": jnp.zeros((state_dim,))}
        sequence = jax.tree.map(lambda x: jnp.zeros((config.num_steps, *x.shape), x.dtype), step)
        sequence["hidden"] = {g: jnp.zeros((sizes[g], hidden_width)) for g in groups}
        return sequence

    item_shape = jax.eval_shape(sequence_item, example_timestep)
    buffer = q.make_replay(item_shape, config.buffer_size, config.buffer_batch_size, config.num_envs)

    def optimizer(hparams: HParams) -> optax.GradientTransformation:
        return annealed_adam(hparams.lr, hparams.max_grad_norm, anneal_lr=config.anneal_lr,
                             num_updates=config.num_updates, steps_per_update=config.gradient_steps,
                             rectified=config.optimizer == "radam", knots=schedule_knots(config))

    def init(key: Array, hparams: HParams) -> RunnerState:
        key, env_key, net_key, mixer_key = jax.random.split(key, 4)
        env_state, timestep = env.reset(env_key)
        params = {"agents": q.init_q_params(config, env, net_key),
                  "mixer": mixer.init(mixer_key, jnp.zeros((1, num_agents)), jnp.zeros((1, state_dim)))}
        alive = {g: jnp.ones((config.num_envs, sizes[g]), bool) for g in groups}
        return RunnerState(params, params, optimizer(hparams).init(params),
                           buffer.init(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), item_shape)),
                           env_state, envs.observation(env, timestep), zero_hidden(config.num_envs),
                           jnp.ones((config.num_envs,), bool), alive, key, jnp.int32(0))

    # ------------------------------------------------------------------------------------------- rollout
    def rollout(runner: RunnerState, hparams: HParams
                ) -> tuple[RunnerState, dict[str, Any], dict[str, Array]]:
        env_steps = runner.update * config.batch_size
        epsilon = q.linear_epsilon(schedule_env_steps(runner.update, config), hparams.epsilon_start,
                                   hparams.epsilon_end, hparams.epsilon_decay * config.total_timesteps)
        epsilons = q.env_epsilons(config.num_envs, num_greedy, epsilon)
        weight = envs.shaped_reward_weight(env_steps, config.shaped_reward_steps)

        def step(runner: RunnerState, _: None) -> tuple[RunnerState, Any]:
            key, env_key, *group_keys = jax.random.split(runner.key, 2 + len(groups))
            timestep = runner.timestep
            starts = group_starts(runner.starts)
            masks = q.full_masks(timestep, env, counts)
            hidden, actions = {}, {}
            for g, group_key in zip(groups, group_keys, strict=True):  # epsilon-greedy, each env its rate
                hidden[g], values = applies[g](runner.params["agents"][g], runner.hidden[g],
                                               timestep.obs[g][None], starts[g][None])[:2]
                actions[g] = q.epsilon_greedy(group_key, values[0], masks[g], epsilons[:, None])
                actions[g] = actions[g].astype(jnp.int32)
            env_actions = {g: actions[g].astype(env.action_space(g).dtype) for g in groups}
            env_state, next_timestep = env.step(env_key, runner.env_state, env_actions)
            ended = envs.agent_done(next_timestep)
            env_ended = next_timestep.info["episode_done"]
            next_mask = q.next_masks(q.full_masks(next_timestep, env, counts), env_ended)
            transition = {
                "groups": {g: {"obs": timestep.obs[g], "mask": masks[g], "action": actions[g],
                               "reward": envs.training_reward(next_timestep, g, weight),
                               "terminated": next_timestep.terminated[g], "alive": runner.alive[g],
                               "final_obs": next_timestep.info["final_obs"][g], "next_mask": next_mask[g]}
                           for g in groups},
                "starts": runner.starts,
                "env_terminated": q.all_agents(next_timestep.terminated).all(-1),
                "world_state": envs.world_state(env, timestep),
                "final_world_state": envs.world_state(env, next_timestep, final=True),
            }
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
                hparams: HParams) -> tuple[Array, Array]:
        """The team's squared TD error on sampled sequences (``[M, T, ...]`` as stored): the mixer's value
        of what every agent took, on the world state, against the team reward plus the discounted target
        mixer's value of every agent's bootstrap, on the world state that step led to, cut by the whole
        env's termination. Returns the loss and the mean value of the taken actions."""
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

        taken, bootstrap = {}, {}
        for g in groups:
            b = batch["groups"][g]
            values, next_values = values_and_next(g, params["agents"][g])
            _, next_target = values_and_next(g, target_params["agents"][g])
            online_next = jax.lax.stop_gradient(next_values) if config.double_q else None
            taken[g] = q.chosen_q(values, b["action"])
            bootstrap[g] = jax.lax.stop_gradient(q.bootstrap_q(next_target, online_next, b["next_mask"]))
        team_value = mixer.apply(params["mixer"], q.all_agents(taken), batch["world_state"])
        team_bootstrap = mixer.apply(target_params["mixer"], q.all_agents(bootstrap),
                                     batch["final_world_state"])
        reward = q.team_reward({g: batch["groups"][g]["reward"] for g in groups},
                               {g: batch["groups"][g]["alive"] for g in groups})
        target = (hparams.reward_scale * reward
                  + hparams.gamma * (1.0 - batch["env_terminated"].astype(jnp.float32)) * team_bootstrap)
        loss = jnp.mean((team_value - jax.lax.stop_gradient(target)) ** 2)
        return loss, jnp.mean(q.all_agents(taken))

    # -------------------------------------------------------------------------------------------- update
    def update(runner: RunnerState, hparams: HParams) -> tuple[RunnerState, dict[str, Array]]:
        runner, items, metrics = rollout(runner, hparams)
        stored = buffer.add(runner.buffer, items)
        done_updates = runner.update + 1
        ready = buffer.can_sample(stored) & (done_updates * config.batch_size >= config.learning_starts)
        tx = optimizer(hparams)

        def gradient_step(carry: tuple[Any, Any, Array], _: None) -> tuple[tuple[Any, Any, Array], Any]:
            params, opt_state, key = carry
            key, sample_key = jax.random.split(key)
            sample = buffer.sample(stored, sample_key).experience
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
        # Polyak averaging; tau = 1 copies the online networks (a hard update)
        target_params = jax.tree.map(
            lambda old, new: jnp.where(due, hparams.tau * new + (1.0 - hparams.tau) * old, old),
            runner.target_params, params)
        nan = jnp.float32(jnp.nan)
        metrics.update(td_loss=jnp.where(ready, losses.mean(), nan),
                       q_taken=jnp.where(ready, q_taken.mean(), nan))
        runner = runner.replace(params=params, target_params=target_params, opt_state=opt_state,
                                buffer=stored, key=key, update=done_updates)
        return runner, metrics

    return Trainer(init, update, env)


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The greedy policy of the trained action values on ``env`` (any ``make_env(config, n)``); the mixer
    only trains."""
    return q.greedy_policy(env, q.q_networks(config, env), config.gru_size if config.recurrent else 0)


def policy_params(runner: RunnerState) -> dict[str, Any]:
    """The parameters ``make_policy``'s ``act`` takes: every group's action-value network."""
    return runner.params["agents"]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "qmix", argv)


if __name__ == "__main__":
    sys.exit(main())
