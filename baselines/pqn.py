"""PQN: parallelised Q-learning for every agent group of any env with discrete actions, in one file.

PQN (Gallici et al., 2024) drops the replay buffer and the target network: many envs explore in parallel,
Q(lambda) returns are computed over each rollout with the network that acted, and a few epochs of
minibatches regress the taken actions' values onto them, as PPO's epochs do; layer norm keeps this stable.

Reads top to bottom: the config, the env, the rollout, the Q(lambda) targets, the loss, the update, the
policy and ``main``. The value network (``q.QNetwork``), masked epsilon-greedy acting and the Q(lambda)
returns are the kit's; its training sequences and minibatch epochs (``train_epochs``) are written here, as
PPO's files write theirs.

- Independent values per agent by default; ``--vdn`` sums every agent's value into the team's and regresses
  it onto the team's return (the team reward is the mean over the agents alive at the step,
  ``q.team_reward``): JaxMARL's PQN-VDN.
- Feed-forward or GRU (``--recurrent``); action masks rule acting and the targets' max.
- The first ``greedy_fraction`` of the envs act greedily: their episodes are logged as
  ``greedy_return_mean``, and their transitions train like the others.

Run: ``python baselines/pqn.py --env MPE_simple_spread_v3 --seeds 4`` or ``jaxmarl-suite train pqn ...``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import check_range, require
from jaxmarl_suite.training.kit import envs, loops, networks, ppo, q, schedule
from jaxmarl_suite.training.kit.baseline import Policy, Trainer

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Config(ppo.PPOConfig):
    """PQN's static settings: the on-policy rollout and epoch settings it shares with PPO
    (``jaxmarl_suite.training.kit.ppo.PPOConfig``), and its own; every field is a ``--dashed-flag``."""

    num_envs: int = 64
    """Envs stepped in parallel per run (PQN explores with many)."""
    num_steps: int = 16
    """Steps per env in each rollout."""
    hidden_sizes: tuple[int, ...] = (128, 128)
    """Widths of the dense layers after the torso (and GRU), as JSON, e.g. '[128, 128]'."""
    activation: str = "relu"
    """Hidden activation: tanh, relu or gelu."""
    layer_norm: bool = True
    """Layer-normalise every dense layer (what keeps PQN stable without a target network)."""
    vdn: bool = False
    """Sum every agent's value into the team's and learn it from the team reward (PQN-VDN)."""
    torso: str = "mlp"
    """How observations become features: mlp (flattened) or cnn (image observations, e.g. Overcooked)."""
    agent_ids: bool = True
    """Append a one-hot agent index to the features of agents that share a net."""
    shaped_reward_steps: int = 0
    """Add the env's info["shaped_reward"] (Overcooked), weighted 1 falling to 0 over this many env steps."""
    optimizer: str = "adam"
    """adam (eps 1e-5) or radam (rectified Adam, what JaxMARL's value-based scripts use)."""
    greedy_fraction: float = 0.125
    """Share of the envs that act greedily (epsilon 0), logged as greedy_*; their transitions train too."""

    def schedules_tied_to_length(self, grid: Sequence[Any]) -> list[str]:
        """The schedules that depend on ``total_timesteps``: the learning-rate anneal and epsilon's decay."""
        return super().schedules_tied_to_length(grid) + q.epsilon_schedule_flags(grid)

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        require(self.torso in networks.TORSOS, "torso", f"must be one of {list(networks.TORSOS)}, "
                f"got {self.torso!r}")
        require(isinstance(self.shaped_reward_steps, int) and self.shaped_reward_steps >= 0,
                "shaped_reward_steps", f"must be an integer >= 0, got {self.shaped_reward_steps!r}")
        q.check_greedy_fraction(self)
        require(self.optimizer in q.OPTIMIZERS, "optimizer",
                f"must be one of {list(q.OPTIMIZERS)}, got {self.optimizer!r}")


@struct.dataclass
class HParams(q.QHParams):
    """PQN's traceable hyperparameters (``q.QHParams`` and lambda): vmapped for sweeps, so a grid compiles
    once."""

    q_lambda: float = 0.65
    """Q(lambda)'s lambda: 0 is the one-step target, 1 the Monte Carlo return."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        check_range(self, "q_lambda", 0.0, 1.0)


class RunnerState(struct.PyTreeNode):
    """Everything that carries from one update to the next (checkpointed as is)."""

    params: dict[str, Any]
    opt_state: Any
    env_state: Any
    timestep: Any
    """What the next step acts on of the last ``TimeStep`` (``envs.observation``), not all of it."""
    hidden: dict[str, Array]
    starts: Array
    alive: dict[str, Array]
    key: Array
    update: Array


def optimizer(config: Config, hparams: HParams) -> optax.GradientTransformation:
    """The kit's ``annealed_adam`` (RAdam with ``--optimizer radam``), one rate per update of
    ``update_epochs * num_minibatches`` steps."""
    return ppo.annealed_adam(hparams.lr, hparams.max_grad_norm, anneal_lr=config.anneal_lr,
                             num_updates=config.num_updates,
                             steps_per_update=config.update_epochs * config.num_minibatches,
                             rectified=config.optimizer == "radam", knots=schedule.schedule_knots(config))


# ----------------------------------------------------------------------------------- sequences, epochs
def sequence_batch(config: Config, fields: dict[str, Array], start_states: dict[str, Array]
                   ) -> dict[str, Array]:
    """A group's rollout as training sequences: every ``[T, B, ...]`` field becomes
    ``[L, (T / L) * B, ...]`` (``L = config.sequence_length``: the whole rollout for a GRU, one step
    otherwise), and each start state (a recurrent state) keeps only the value each sequence starts from,
    ``[(T / L) * B, ...]``."""
    length = config.sequence_length

    def to_sequences(x: Array) -> Array:
        x = x.reshape(config.num_steps // length, length, *x.shape[1:])
        x = jnp.swapaxes(x, 0, 1)
        return x.reshape(length, x.shape[1] * x.shape[2], *x.shape[3:])  # sizes, not -1: a state may be empty

    batch = {name: to_sequences(x) for name, x in fields.items()}
    batch.update({name: to_sequences(x)[0] for name, x in start_states.items()})
    return batch


def train_epochs(config: Config, loss_fn: Callable[..., tuple[Array, dict[str, Array]]],
                 apply_grads: Callable[[Any, Any, Any], tuple[Any, Any]], params: Any, opt_state: Any,
                 key: Array, batch: dict[str, dict[str, Array]], hparams: HParams,
                 start_states: tuple[str, ...]) -> tuple[Any, Any, dict[str, Array]]:
    """``update_epochs`` passes over a rollout's sequences: each pass shuffles the sequence axis, cuts it
    into ``num_minibatches`` and takes one gradient step (``apply_grads``) per minibatch.

    ``batch[g]`` holds ``sequence_batch``'s arrays; the ``start_states`` have no time axis, so their
    sequence axis is the first. Returns the new parameters and optimizer state and the mean of
    ``total_loss`` and every loss part over all minibatches.
    """

    def epoch(carry: tuple[Any, Any, Array], _: None) -> tuple[tuple[Any, Any, Array], Any]:
        params, opt_state, key = carry
        key, shuffle_key = jax.random.split(key)
        order = jax.random.permutation(shuffle_key, config.num_sequences)

        def split(name: str, x: Array) -> Array:
            """Shuffle the sequence axis and cut it into ``[num_minibatches, ...]``."""
            axis = 0 if name in start_states else 1
            x = jnp.moveaxis(jnp.take(x, order, axis=axis), axis, 0)
            x = x.reshape(config.num_minibatches, x.shape[0] // config.num_minibatches, *x.shape[1:])
            return jnp.moveaxis(x, 1, axis + 1)

        minibatches = {g: {k: split(k, v) for k, v in fields.items()} for g, fields in batch.items()}

        def minibatch_step(carry: tuple[Any, Any], minibatch: Any) -> tuple[tuple[Any, Any], Any]:
            params, opt_state = carry
            (loss, parts), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, minibatch, hparams)
            params, opt_state = apply_grads(grads, opt_state, params)
            return (params, opt_state), {"total_loss": loss, **parts}

        (params, opt_state), losses = loops.scan(minibatch_step, (params, opt_state), minibatches, unroll=1)
        return (params, opt_state, key), losses

    (params, opt_state, _), losses = loops.scan(epoch, (params, opt_state, key), None,
                                                length=config.update_epochs, unroll=1)
    return params, opt_state, jax.tree.map(jnp.mean, losses)


def make_env(config: Config, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
    """The env stack PQN trains on (and evaluation renders): ``num_envs`` envs, default
    ``config.num_envs``."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                                  config.env_kwargs, config.param_sharing, auto_reset=auto_reset)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """Build the pure ``init`` and ``update`` functions for ``config`` on ``env`` (``make_env(config)``)."""
    config.validate()
    groups = list(env.groups)
    counts = q.discrete_actions(env)
    applies = q.q_networks(config, env, config.layer_norm)
    hidden_width = config.gru_size if config.recurrent else 0
    sizes = {g: env.group_size(g) for g in groups}
    num_greedy = q.greedy_env_count(config.num_envs, config.greedy_fraction)
    final_rows = q.final_obs_rows(config.num_steps, env.default_params.max_steps)

    def zero_hidden(num: int) -> dict[str, Array]:
        return {g: jnp.zeros((num, sizes[g], hidden_width)) for g in groups}

    def group_starts(starts: Array) -> dict[str, Array]:
        return {g: jnp.broadcast_to(starts[..., None], (*starts.shape, sizes[g])) for g in groups}

    def init(key: Array, hparams: HParams) -> RunnerState:
        key, env_key, net_key = jax.random.split(key, 3)
        env_state, timestep = env.reset(env_key)
        params = q.init_q_params(config, env, net_key, config.layer_norm)
        alive = {g: jnp.ones((config.num_envs, sizes[g]), bool) for g in groups}
        return RunnerState(params, optimizer(config, hparams).init(params), env_state,
                           envs.observation(env, timestep),
                           zero_hidden(config.num_envs), jnp.ones((config.num_envs,), bool), alive,
                           key, jnp.int32(0))

    # ------------------------------------------------------------------------------------------- rollout
    def rollout(runner: RunnerState, hparams: HParams
                ) -> tuple[RunnerState, dict[str, Any], dict[str, Array]]:
        env_steps = runner.update * config.batch_size
        epsilon = q.linear_epsilon(schedule.schedule_env_steps(runner.update, config), hparams.epsilon_start,
                                   hparams.epsilon_end, hparams.epsilon_decay * config.total_timesteps)
        epsilons = q.env_epsilons(config.num_envs, num_greedy, epsilon)
        weight = envs.shaped_reward_weight(env_steps, config.shaped_reward_steps)

        def step(runner: RunnerState, _: None) -> tuple[RunnerState, Any]:
            key, env_key, *group_keys = jax.random.split(runner.key, 2 + len(groups))
            timestep = runner.timestep
            starts = group_starts(runner.starts)
            masks = q.full_masks(timestep, env, counts)
            hidden, actions, values = {}, {}, {}
            for g, group_key in zip(groups, group_keys, strict=True):  # epsilon-greedy, each env its rate
                hidden[g], group_values = applies[g](runner.params[g], runner.hidden[g],
                                                     timestep.obs[g][None], starts[g][None])[:2]
                values[g] = group_values[0]
                actions[g] = q.epsilon_greedy(group_key, values[g], masks[g], epsilons[:, None])
                actions[g] = actions[g].astype(jnp.int32)
            env_actions = {g: actions[g].astype(env.action_space(g).dtype) for g in groups}
            env_state, next_timestep = env.step(env_key, runner.env_state, env_actions)
            ended = envs.agent_done(next_timestep)
            env_ended = next_timestep.info["episode_done"]
            transition = {
                "groups": {g: {"obs": timestep.obs[g], "starts": starts[g], "hidden": runner.hidden[g],
                               "q": values[g], "action": actions[g], "alive": runner.alive[g],
                               "reward": envs.training_reward(next_timestep, g, weight),
                               "terminated": next_timestep.terminated[g], "episode_end": ended[g],
                               "final_obs": next_timestep.info["final_obs"][g], "next_hidden": hidden[g]}
                           for g in groups},
                "next_mask": q.next_masks(q.full_masks(next_timestep, env, counts), env_ended),
                "env_terminated": q.all_agents(next_timestep.terminated).all(-1),
                "env_end": env_ended,
            }
            alive = {g: jnp.where(env_ended[:, None], True, runner.alive[g] & ~ended[g]) for g in groups}
            stats, greedy_stats = q.split_episode_stats(next_timestep, num_greedy)
            runner = runner.replace(env_state=env_state, timestep=envs.observation(env, next_timestep),
                                    hidden=hidden, starts=env_ended, alive=alive, key=key)
            return runner, (transition, stats, greedy_stats)

        runner, (trajectory, stats, greedy_stats) = loops.scan(step, runner, None, length=config.num_steps,
                                                                unroll=1)
        metrics = {**envs.episode_metrics(stats), "epsilon": epsilon}
        if greedy_stats:
            metrics.update({f"greedy_{k}": v for k, v in envs.episode_metrics(greedy_stats).items()})
        return runner, trajectory, metrics

    # --------------------------------------------------------------------------------------------- targets
    def q_lambda_targets(params: dict[str, Any], trajectory: dict[str, Any], hparams: HParams
                         ) -> dict[str, Array]:
        """Per group ``[T, B, n]`` Q(lambda) targets, or with ``vdn`` the team's ``[T, B]`` (under
        ``"team"``), bootstrapped from the acting network's legal max at the observation each step led to
        (its acting values of the next step, where the episode went on)."""
        truncated = trajectory["env_end"] & ~trajectory["env_terminated"]
        bootstrap = {}
        for g in groups:
            t = trajectory["groups"][g]
            next_q = q.next_q_values(applies[g], params[g], t["q"], t["next_hidden"], t["final_obs"],
                                     truncated, final_rows)
            bootstrap[g] = q.max_q(next_q, trajectory["next_mask"][g])
        if config.vdn:
            reward = q.team_reward({g: trajectory["groups"][g]["reward"] for g in groups},
                                   {g: trajectory["groups"][g]["alive"] for g in groups})
            return {"team": q.q_lambda_returns(hparams.reward_scale * reward, q.all_agents(bootstrap).sum(-1),
                                               trajectory["env_terminated"], trajectory["env_end"],
                                               hparams.gamma, hparams.q_lambda)}
        per_group = trajectory["groups"]
        return {g: q.q_lambda_returns(hparams.reward_scale * per_group[g]["reward"], bootstrap[g],
                                      per_group[g]["terminated"], per_group[g]["episode_end"], hparams.gamma,
                                      hparams.q_lambda)
                for g in groups}

    # ---------------------------------------------------------------------------------------------- loss
    def loss_fn(params: dict[str, Any], batch: dict[str, Any], hparams: HParams) -> tuple[Array, Any]:
        """Mean squared error of the taken actions' values against the Q(lambda) targets."""
        taken, terms = {}, []
        for g in groups:
            b = batch[g]
            _, values, _ = applies[g](params[g], b["hidden"], b["obs"], b["starts"])
            taken[g] = q.chosen_q(values, b["action"])
            if not config.vdn:
                weight = b["alive"].astype(jnp.float32)
                terms.append(jnp.sum(weight * (taken[g] - b["target"]) ** 2) / jnp.maximum(weight.sum(), 1.0))
        if config.vdn:
            team_target = batch[groups[0]]["team_target"][..., 0]
            loss = jnp.mean((q.all_agents(taken).sum(-1) - team_target) ** 2)
        else:
            loss = jnp.mean(jnp.stack(terms))
        return loss, {"q_taken": jnp.mean(q.all_agents(taken))}

    # -------------------------------------------------------------------------------------------- update
    def update(runner: RunnerState, hparams: HParams) -> tuple[RunnerState, dict[str, Array]]:
        runner, trajectory, metrics = rollout(runner, hparams)
        targets = q_lambda_targets(runner.params, trajectory, hparams)
        batch = {}
        for g in groups:
            t = trajectory["groups"][g]
            fields = {name: t[name] for name in ("obs", "starts", "action", "alive")}
            if config.vdn:  # the team's target rides along with every group, as [T, B, 1]
                fields["team_target"] = targets["team"][..., None]
            else:
                fields["target"] = targets[g]
            batch[g] = sequence_batch(config, fields, {"hidden": t["hidden"]})
        tx = optimizer(config, hparams)

        def apply_grads(grads: Any, opt_state: Any, params: Any) -> tuple[Any, Any]:
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        key, epoch_key = jax.random.split(runner.key)
        params, opt_state, losses = train_epochs(config, loss_fn, apply_grads, runner.params,
                                                 runner.opt_state, epoch_key, batch, hparams, ("hidden",))
        runner = runner.replace(params=params, opt_state=opt_state, key=key, update=runner.update + 1)
        return runner, {**metrics, "td_loss": losses["total_loss"], "q_taken": losses["q_taken"]}

    return Trainer(init, update, env)


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The greedy policy of the trained action values on ``env`` (any ``make_env(config, n)``)."""
    return q.greedy_policy(env, q.q_networks(config, env, config.layer_norm),
                           config.gru_size if config.recurrent else 0)


def policy_params(runner: RunnerState) -> dict[str, Any]:
    """The parameters ``make_policy``'s ``act`` takes: every group's action-value network."""
    return runner.params


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "pqn", argv)


if __name__ == "__main__":
    sys.exit(main())
