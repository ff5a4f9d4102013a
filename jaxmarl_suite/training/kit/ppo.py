"""What the PPO-family baselines (``ippo.py``, ``mappo.py``) share: their ``Config`` and ``HParams`` (the
two algorithms take the same settings), the annealed optimizer, the masked clipped PPO loss, training
sequences and minibatch shuffling (``train_epochs``), and acting with a trained actor.

Each baseline keeps its networks, rollout, GAE call and the assembly of its update, so
``diff baselines/ippo.py baselines/mappo.py`` shows the algorithmic difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.typing import ArrayLike

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import check_positive_ints, check_range, require
from jaxmarl_suite.training.kit import loops
from jaxmarl_suite.training.kit.baseline import Policy
from jaxmarl_suite.training.kit.envs import PARAM_SHARING, check_env_id
from jaxmarl_suite.training.kit.networks import ACTIVATIONS, action_distribution, sample_action, to_env_action
from jaxmarl_suite.training.kit.schedule import Extension, check_extensions, schedule_knots, schedule_progress

Array = jax.Array


def annealed_adam(
    lr: float | Array,
    max_grad_norm: float | Array,
    *,
    anneal_lr: bool,
    num_updates: int,
    steps_per_update: int,
    rectified: bool = False,
    knots: tuple[tuple[float, float], ...] = (),
) -> optax.GradientTransformation:
    """Global-norm clipping then Adam (eps 1e-5), or RAdam (``rectified``, optax's defaults: JaxMARL's
    value-based scripts use it), the learning rate decaying linearly to zero over ``num_updates`` updates of
    ``steps_per_update`` optimizer steps each when ``anneal_lr``. An extended run passes its
    ``schedule.schedule_knots``: the rate is then ``lr`` times one minus the run's progress through them.

    The rate drops once per update, not per minibatch, so every minibatch of an update sees the same one.
    """

    def learning_rate(count: ArrayLike) -> Array:
        update = jnp.asarray(count) // steps_per_update
        progress = schedule_progress(update, knots) if knots else update / num_updates
        return jnp.asarray(lr * (1.0 - progress) if anneal_lr else lr)

    step = optax.radam(learning_rate) if rectified else optax.adam(learning_rate, eps=1e-5)
    return optax.chain(clip_by_global_norm(max_grad_norm), step)


def clip_by_global_norm(max_norm: float | Array) -> optax.GradientTransformation:
    """``optax.clip_by_global_norm(max_norm)`` itself on the CPU, and off it the same rule with the norm
    summed as one reduction over all leaves laid end to end (``max_norm`` a scalar, or one per run under
    ``vmap``). The state is optax's empty one, so checkpoints are unchanged.

    optax sums the squares leaf by leaf, which a GPU runs as one reduction kernel per parameter leaf every
    minibatch (IPPO with JaxMARL's MPE config compiled for an H200: 9 kernels fewer a minibatch, 5,614 to
    5,470 an update at 1,024 envs). The two norms differ only in the order of their terms.
    """
    if jnp.ndim(max_norm) != 0:
        shape = jnp.shape(max_norm)
        raise ValueError(f"max_norm must be a scalar (one per run under vmap), not of shape {shape}")
    reference = optax.clip_by_global_norm(max_norm)

    def update(updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        del params
        leaves, treedef = jax.tree.flatten(updates)
        if not leaves:
            return updates, state

        def with_optax(*leaves: Array) -> list[Array]:
            return jax.tree.leaves(reference.update(jax.tree.unflatten(treedef, leaves), state)[0])

        def end_to_end(*leaves: Array) -> list[Array]:
            norm = _norm_end_to_end(*leaves)
            return [_clip(leaf, norm, max_norm) for leaf in leaves]

        clipped = jax.lax.platform_dependent(*leaves, cpu=with_optax, default=end_to_end)
        return jax.tree.unflatten(treedef, clipped), state

    return optax.GradientTransformation(reference.init, update)


def _norm_end_to_end(*leaves: Array) -> Array:
    return jnp.sqrt(jnp.sum(jnp.square(jnp.concatenate([jnp.ravel(leaf) for leaf in leaves]))))


def _clip(leaf: Array, norm: Array, max_norm: float | Array) -> Array:
    # optax's rule and its order of operations, so the two sides differ only through the norm
    return jnp.where(norm < max_norm, leaf, (leaf / norm.astype(leaf.dtype)) * max_norm)


def divisors(n: int) -> list[int]:
    """The first 12 divisors of ``n``: the allowed values quoted when ``num_minibatches`` does not divide."""
    return [d for d in range(1, n + 1) if n % d == 0][:12]


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Static settings of a PPO-family baseline: changing one recompiles."""

    env_id: str = "MPE_simple_spread_v3"
    """Registered env id (JaxMARL's ids work)."""
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Env constructor arguments as JSON, e.g. '{"continuous_actions": true}'."""
    num_envs: int = 16
    """Envs stepped in parallel per run."""
    num_steps: int = 128
    """Steps per env in each rollout."""
    total_timesteps: int = 1_000_000
    """Env steps per run (one env step = every agent acting once)."""
    update_epochs: int = 4
    """Passes over each rollout."""
    num_minibatches: int = 4
    """Minibatches per epoch; must divide the number of sequences per rollout."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the actor's and the critic's hidden layers, as JSON, e.g. '[64, 64]'."""
    activation: str = "tanh"
    """Hidden activation: tanh, relu or gelu."""
    recurrent: bool = False
    """Put a GRU after the first layer; minibatches then hold whole rollout sequences."""
    gru_size: int = 64
    """GRU width (and its embedding) when recurrent."""
    param_sharing: str = "group"
    """group: one set of nets per group; agent: one per agent; all: one for every agent (padded, group id)."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to zero over the run."""
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
        return ["--anneal-lr"] if self.anneal_lr else []

    @property
    def num_updates(self) -> int:
        """Rollout-and-update iterations per run."""
        return self.total_timesteps // self.batch_size

    @property
    def sequence_length(self) -> int:
        """Steps per training sequence: the whole rollout for a GRU, one step otherwise."""
        return self.num_steps if self.recurrent else 1

    @property
    def num_sequences(self) -> int:
        """Sequences per rollout (each holds every agent of its env)."""
        return self.batch_size // self.sequence_length

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_positive_ints(self, ["num_envs", "num_steps", "total_timesteps", "update_epochs",
                                   "num_minibatches", "gru_size", "log_every"])
        require(isinstance(self.checkpoint_every, int) and self.checkpoint_every >= 0, "checkpoint_every",
                f"must be an integer >= 0, got {self.checkpoint_every!r}")
        require(self.activation in ACTIVATIONS, "activation",
                f"must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        require(self.param_sharing in PARAM_SHARING, "param_sharing",
                f"must be one of {list(PARAM_SHARING)}, got {self.param_sharing!r}")
        require(len(self.hidden_sizes) >= 1 and min(self.hidden_sizes) >= 1, "hidden_sizes",
                f"must be one or more positive widths, got {self.hidden_sizes!r}")
        require(self.num_updates >= 1, "total_timesteps",
                f"must be at least num_envs * num_steps = {self.batch_size}, got {self.total_timesteps}")
        require(self.num_sequences % self.num_minibatches == 0, "num_minibatches",
                f"must divide the {self.num_sequences} sequences per rollout (num_envs * num_steps / "
                f"sequence_length); allowed values: {divisors(self.num_sequences)}")
        check_extensions(self)
        check_env_id(self.env_id)
        require(isinstance(self.env_kwargs, dict), "env_kwargs",
                f"must be a mapping, got {self.env_kwargs!r}")


@struct.dataclass
class PPOHParams:
    """Traceable hyperparameters: vmapped over for sweeps, so a grid compiles once."""

    lr: float = 2.5e-4
    """Adam learning rate (the start value when annealed)."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_eps: float = 0.2
    """PPO ratio clip, also used to clip value updates."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_range(self, "lr", 0.0, 1.0, open_low=True)
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "gae_lambda", 0.0, 1.0)
        check_range(self, "clip_eps", 0.0, 10.0, open_low=True)
        check_range(self, "ent_coef", 0.0, 10.0)
        check_range(self, "vf_coef", 0.0, 100.0)
        check_range(self, "max_grad_norm", 0.0, 1e6, open_low=True)


def optimizer(config: PPOConfig, hparams: PPOHParams) -> optax.GradientTransformation:
    """``annealed_adam`` with the run's settings: one rate per update of
    ``update_epochs * num_minibatches`` steps, decayed over ``num_updates`` when ``anneal_lr``."""
    return annealed_adam(hparams.lr, hparams.max_grad_norm, anneal_lr=config.anneal_lr,
                         num_updates=config.num_updates,
                         steps_per_update=config.update_epochs * config.num_minibatches,
                         knots=schedule_knots(config))


# -------------------------------------------------------------------------------------------------- loss
LOSS_PARTS = ("actor_loss", "value_loss", "entropy", "approx_kl", "clip_frac")
"""The loss terms logged beside ``total_loss`` (each averaged over groups)."""


def clipped_ppo_loss(
    outputs: Mapping[str, tuple[Array, Array, Array]], batch: Mapping[str, Mapping[str, Array]], hparams: Any
) -> tuple[Array, dict[str, Array]]:
    """The clipped PPO objective summed over groups, each agent-step weighted by ``alive``.

    ``outputs[g]`` is ``(log_prob, entropy, value)`` of the minibatch's actions under the current
    parameters and ``batch[g]`` holds the rollout's ``log_prob``, ``value``, ``advantage``, ``target`` and
    ``alive``. Advantages are normalised per group over the live agent-steps; the value loss is clipped
    around the rollout's values (``clip_eps``). Returns the total and the ``LOSS_PARTS`` averaged over
    groups.
    """
    total = jnp.float32(0.0)
    parts = {name: jnp.float32(0.0) for name in LOSS_PARTS}
    for g, (log_prob, entropy_per_step, value) in outputs.items():
        b = batch[g]
        weight = b["alive"].astype(jnp.float32)
        count = jnp.maximum(weight.sum(), 1.0)

        def mean(x: Array, weight: Array = weight, count: Array = count) -> Array:
            return jnp.sum(x * weight) / count

        advantage = b["advantage"]
        advantage_mean = mean(advantage)
        advantage_std = jnp.sqrt(mean((advantage - advantage_mean) ** 2))
        advantage = (advantage - advantage_mean) / (advantage_std + 1e-8)
        log_ratio = log_prob - b["log_prob"]
        ratio = jnp.exp(log_ratio)
        clipped_ratio = jnp.clip(ratio, 1.0 - hparams.clip_eps, 1.0 + hparams.clip_eps)
        actor_loss = -mean(jnp.minimum(ratio * advantage, clipped_ratio * advantage))
        value_clipped = b["value"] + jnp.clip(value - b["value"], -hparams.clip_eps, hparams.clip_eps)
        value_loss = 0.5 * mean(jnp.maximum((value - b["target"]) ** 2, (value_clipped - b["target"]) ** 2))
        entropy = mean(entropy_per_step)
        total = total + actor_loss + hparams.vf_coef * value_loss - hparams.ent_coef * entropy
        parts["actor_loss"] += actor_loss
        parts["value_loss"] += value_loss
        parts["entropy"] += entropy
        parts["approx_kl"] += mean((ratio - 1.0) - log_ratio)
        parts["clip_frac"] += mean((jnp.abs(ratio - 1.0) > hparams.clip_eps).astype(jnp.float32))
    return total, {name: value / len(outputs) for name, value in parts.items()}


# ------------------------------------------------------------------------------------- sequences, epochs
def loss_fields(trajectory: Any, group: str, advantage: Array, target: Array) -> dict[str, Array]:
    """One group's ``[T, B, ...]`` arrays the PPO loss reads: the rollout's ``obs``, ``starts``, ``action``,
    ``log_prob``, ``value``, ``alive`` (and ``action_mask`` for discrete actions), with GAE's
    ``advantage`` and ``target``."""
    fields = {name: getattr(trajectory, name)[group]
              for name in ("obs", "starts", "action", "log_prob", "value", "alive")}
    fields.update(advantage=advantage, target=target)
    if group in trajectory.action_mask:
        fields["action_mask"] = trajectory.action_mask[group]
    return fields


def sequence_batch(config: PPOConfig, fields: Mapping[str, Array], start_states: Mapping[str, Array]
                   ) -> dict[str, Array]:
    """A group's rollout as training sequences: every ``[T, B, ...]`` field becomes
    ``[L, (T / L) * B, ...]`` (``L = config.sequence_length``), and each start state (a recurrent
    state) keeps only the value each sequence starts from, ``[(T / L) * B, ...]``."""
    length = config.sequence_length

    def to_sequences(x: Array) -> Array:
        x = x.reshape(config.num_steps // length, length, *x.shape[1:])
        x = jnp.swapaxes(x, 0, 1)
        return x.reshape(length, -1, *x.shape[3:])

    batch = {name: to_sequences(x) for name, x in fields.items()}
    batch.update({name: to_sequences(x)[0] for name, x in start_states.items()})
    return batch


LossFn = Callable[[Any, Any, Any], tuple[Array, dict[str, Array]]]
"""``(params, minibatch, hparams) -> (loss, parts)``."""
ApplyGrads = Callable[[Any, Any, Any], tuple[Any, Any]]
"""``(grads, opt_state, params) -> (params, opt_state)``."""


def train_epochs(
    config: PPOConfig, loss_fn: LossFn, apply_grads: ApplyGrads, params: Any, opt_state: Any, key: Array,
    batch: Mapping[str, Mapping[str, Array]], hparams: Any, start_states: tuple[str, ...] = ("hidden",),
) -> tuple[Any, Any, dict[str, Array]]:
    """``update_epochs`` passes over a rollout's sequences: each pass shuffles the sequence axis, cuts it
    into ``num_minibatches`` and takes one gradient step per minibatch.

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
            x = x.reshape(config.num_minibatches, -1, *x.shape[1:])
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


# ----------------------------------------------------------------------------------------------- acting
ActorApply = Callable[[Any, Array, Array, Array], tuple[Array, Array, Array]]
"""``(params, hidden [M, n, H], obs [L, M, n, d], starts [L, M, n]) -> (hidden, head, log_std)``."""


def actor_policy(config: PPOConfig, env: MultiAgentEnv, actors: Mapping[str, ActorApply]) -> Policy:
    """Acting with each group's actor: sample (or take the mode of) its action distribution, masked by
    ``action_mask``. ``params`` is ``{group: actor parameters}``."""
    groups = list(env.groups)
    spaces = {g: env.action_space(g) for g in groups}
    hidden_width = config.gru_size if config.recurrent else 1

    def init_hidden(num_envs: int) -> dict[str, Array]:
        return {g: jnp.zeros((num_envs, env.group_size(g), hidden_width)) for g in groups}

    def act(params: dict[str, Any], hidden: dict[str, Array], timestep: Any, starts: Array, key: Array,
            deterministic: bool = False) -> tuple[dict[str, Array], dict[str, Array]]:
        new_hidden, actions = {}, {}
        for g, group_key in zip(groups, jax.random.split(key, len(groups)), strict=True):
            group_starts = jnp.broadcast_to(starts[:, None], timestep.obs[g].shape[:2])
            h, head, log_std = actors[g](params[g], hidden[g], timestep.obs[g][None], group_starts[None])
            mask = timestep.action_mask.get(g)
            if deterministic:
                action = action_distribution(spaces[g], head[0], log_std[0], mask).mode()
            else:
                action, _ = sample_action(spaces[g], head[0], log_std[0], mask, group_key)
            new_hidden[g], actions[g] = h, to_env_action(spaces[g], action)
        return new_hidden, actions

    return Policy(init_hidden, act)
