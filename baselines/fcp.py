"""FCP: Fictitious Co-Play (Strouse et al. 2021), an ego agent trained by PPO with partners drawn from a
frozen population, for any two-agent env, in one file.

Zero-shot coordination asks an agent to cooperate with partners it never trained with. Self-play agents
learn conventions only their own seed shares; FCP trains the ego instead against a population of frozen
partners: several self-play seeds, each at its start (untrained), middle and end of training, so the ego
meets skilled and unskilled partners with different conventions. The population comes from
``jaxmarl-suite population ippo ... --seeds N`` (a run folder whose ``population.json`` lists the
members); ``--partners RUN_DIR`` points here at it. Without ``--partners`` every partner acts uniformly at
random: a smoke-test setting, not FCP.

Reads top to bottom as IPPO does (this file is IPPO's with the partner added): the config, the
actor-critic, the clipped PPO loss, training sequences and epochs, the env, the partners, the rollout,
bootstrap values, the update, the policy and ``main``.

- Each episode, in every env, the ego takes a random seat (agent 0 or 1) and a random member of the
  population takes the other, both drawn when the episode starts. The members' parameters are stacked on
  a member axis, so one compiled program plays every partner at once.
- Where all episodes start together (``env.episodes_end_together``) the members are dealt out evenly
  (``partner_assignment="balanced"``): a random permutation deals the envs into a table of ``K`` slots
  per member, and each step every member acts, with its own parameters, on the envs in its row. Copying
  a member's parameters for each env, every step, is what made FCP's updates the slower
  (``scripts/bench_fcp.py`` times both). Elsewhere each env draws its member alone and gathers its
  parameters (``"per_env"``).
- The ego's network acts in every slot (it is IPPO's group network), but only the ego's seat goes to the
  env and into the loss: the partner's slot is masked out of the PPO objective like a dead agent.
- The trained policy is the ego's alone (``make_policy``), so ``eval``, ``render`` and
  ``xplay --partners`` treat an FCP run like any other.

Run: ``jaxmarl-suite train fcp --env Overcooked_counter_circuit --partners runs/population``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import ConfigError, require
from jaxmarl_suite.training.kit import envs, loops, networks, ppo
from jaxmarl_suite.training.kit.baseline import Policy, Trainer
from jaxmarl_suite.training.kit.gae import final_obs_rows, final_values, gae

Array = jax.Array

PARTNER_ASSIGNMENTS = ("balanced", "per_env")
"""The values of ``Config.partner_assignment``."""


@dataclasses.dataclass(frozen=True)
class Config(ppo.PPOConfig):
    """FCP's static settings: changing one recompiles. Besides the fields and checks shared with the
    other PPO baselines (``jaxmarl_suite.training.kit.ppo.PPOConfig``), the partner population, the torso
    and reward shaping; every field is a ``--dashed-flag``."""

    env_id: str = "Overcooked_cramped_room"
    """Registered env id of a two-agent env (JaxMARL's ids work)."""
    partners: str = ""
    """Population folder of frozen partners (``jaxmarl-suite population``; a plain run folder gives its
    seeds' final policies); empty: partners that act uniformly at random."""
    torso: str = "mlp"
    """How observations become features: mlp (flattened) or cnn (image observations, e.g. Overcooked)."""
    shaped_reward_steps: int = 0
    """Add the env's info["shaped_reward"] (Overcooked) to the reward, weighted 1 falling linearly to 0
    over this many env steps; 0 trains on the reward alone."""
    partner_assignment: str = "balanced"
    """How envs get their partner when an episode starts: balanced (a random permutation deals the envs
    evenly over the members, each member acting on its own envs as a batch; exactly ``num_envs / members``
    envs a member when that divides) or per_env (an independent uniform draw per env, each env gathering
    its member's parameters). Balanced falls back to per_env on envs whose episodes do not all start
    together (``episodes_end_together`` False), where the envs redraw at different steps."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        super().validate()
        require(self.torso in networks.TORSOS, "torso", f"must be one of {list(networks.TORSOS)}, "
                f"got {self.torso!r}")
        require(isinstance(self.shaped_reward_steps, int) and self.shaped_reward_steps >= 0,
                "shaped_reward_steps", f"must be an integer >= 0, got {self.shaped_reward_steps!r}")
        require(isinstance(self.partners, str), "partners", f"must be a folder path, got {self.partners!r}")
        require(self.partner_assignment in PARTNER_ASSIGNMENTS, "partner_assignment",
                f"must be one of {list(PARTNER_ASSIGNMENTS)}, got {self.partner_assignment!r}")


@struct.dataclass
class HParams(ppo.PPOHParams):
    """FCP's traceable hyperparameters (``PPOHParams``): vmapped for sweeps, so a grid compiles once."""


# ----------------------------------------------------------------------------------------------- network
class ActorCritic(nn.Module):
    """Separate actor and critic MLPs, behind the observation torso (flattening, or a CNN shared by both)
    and an optional shared GRU.

    ``(hidden [M, n, H], obs [L, M, n, *obs_shape], starts [L, M, n])`` ->
    ``(hidden, policy head [L, M, n, A], log_std [L, M, n, A], value [L, M, n, 1])``.
    """

    action_width: int
    hidden_sizes: Sequence[int]
    activation: str
    recurrent: bool
    gru_size: int
    torso: str = "mlp"

    @nn.compact
    def __call__(self, hidden: Array, obs: Array, starts: Array) -> tuple[Array, Array, Array, Array]:
        """Evaluate the policy head and the value along ``L`` steps."""
        x = networks.ObsEncoder(self.torso, self.activation)(obs)
        if self.recurrent:
            x = networks.MLP((self.gru_size,), self.activation)(x)
            hidden, x = networks.ResetGRU(self.gru_size)(hidden, x, starts)
        actor = (networks.MLP(self.hidden_sizes, self.activation),
                 networks.Dense(self.action_width, kernel_init=networks.orthogonal(0.01)))
        critic = (networks.MLP(self.hidden_sizes, self.activation),
                  networks.Dense(1, kernel_init=networks.orthogonal(1.0)))
        head, value = networks.two_towers(x, actor, critic)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_width,))
        return hidden, head, jnp.broadcast_to(log_std, head.shape), value


class Transition(NamedTuple):
    """One rollout step, every field ``{group: [B, n, ...]}``."""

    obs: dict[str, Array]
    action_mask: dict[str, Array]
    starts: dict[str, Array]
    hidden: dict[str, Array]
    action: dict[str, Array]
    log_prob: dict[str, Array]
    value: dict[str, Array]
    reward: dict[str, Array]
    terminated: dict[str, Array]
    episode_end: dict[str, Array]
    alive: dict[str, Array]
    final_obs: dict[str, Array]
    next_hidden: dict[str, Array]
    truncated: Array
    """``[B]``: the env's episode ended this step, and not because every agent's terminated."""


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
    partners: Any
    """The population's policy parameters, stacked on a member axis (frozen; empty for random partners)."""
    partner_index: Array
    """``[B]``: the member each env's partner is this episode."""
    ego_seat: Array
    """``[B]``: the seat (0 or 1, in ``env.agents`` order) the ego takes this episode."""
    partner_hidden: Any
    """The partners' recurrent state, ``{group: [B, n, H]}``."""


# ---------------------------------------------------------------------------------------------- loss
LOSS_PARTS = ("actor_loss", "value_loss", "entropy", "approx_kl", "clip_frac")
"""The loss terms logged beside ``total_loss`` (each averaged over groups)."""


def ppo_loss(outputs: dict[str, tuple[Array, Array, Array]], batch: dict[str, dict[str, Array]],
             hparams: HParams) -> tuple[Array, dict[str, Array]]:
    """The clipped PPO objective summed over groups, each agent-step weighted by ``alive``.

    ``outputs[g]`` is ``(log_prob, entropy, value)`` of the minibatch's actions under the current
    parameters; ``batch[g]`` holds the rollout's ``log_prob``, ``value``, ``advantage``, ``target`` and
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
    """The env stack FCP trains on (and evaluation renders): ``num_envs`` envs, default
    ``config.num_envs``."""
    return envs.make_training_env(config.env_id, config.num_envs if num_envs is None else num_envs,
                             config.env_kwargs, config.param_sharing, auto_reset=auto_reset)


# ------------------------------------------------------------------------------------------ partners
class Partners(NamedTuple):
    """The frozen population as the rollout uses it."""

    size: int
    """Members to draw from (1 for random partners)."""
    params: Any
    """Stacked member parameters (``{}`` for random partners)."""
    act: Callable[..., tuple[Any, dict[str, Array]]] | None
    """The members' ``Policy.act`` on a batch of envs (None: uniformly random legal actions)."""
    init_hidden: Callable[[int], Any]


def load_partners(config: Config, env: MultiAgentEnv) -> Partners:
    """The population in ``config.partners``, checked to play on ``env``: the same env and arguments and the
    same agent groups and spaces (``ConfigError`` otherwise)."""
    if not config.partners:
        return Partners(1, {}, None, lambda num: {})
    from jaxmarl_suite.core.registry import env_spec
    from jaxmarl_suite.training.runner.experiment import load_population

    population = load_population(config.partners)
    theirs = population.experiment.config

    def identity(env_id: str, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        spec = env_spec(env_id)
        return spec.env_id, {**spec.kwargs, **kwargs}

    if identity(theirs.env_id, dict(theirs.env_kwargs)) != identity(config.env_id, dict(config.env_kwargs)):
        raise ConfigError(f"partners: the population in {config.partners} was trained on {theirs.env_id} "
                          f"{dict(theirs.env_kwargs)}, not {config.env_id} {dict(config.env_kwargs)}")
    partner_env = population.module.make_env(theirs, config.num_envs)

    def layout(e: MultiAgentEnv) -> list[tuple[str, Any, str, str]]:
        return [(g, tuple(names), repr(e.observation_space(g)), repr(e.action_space(g)))
                for g, names in e.groups.items()]

    if layout(partner_env) != layout(env):
        raise ConfigError(f"partners: the population in {config.partners} sees the env through other agent "
                          f"groups or spaces ({list(partner_env.groups)} vs {list(env.groups)}); train the "
                          "ego with the population's --param-sharing")
    policy = population.module.make_policy(theirs, partner_env)
    size = len(population.members)
    return Partners(size, population.params, policy.act, policy.init_hidden)


def draw_members(key: Array, num_envs: int, size: int, balanced: bool) -> Array:
    """``[B]``: a member for each of ``num_envs`` envs, out of ``size``. Balanced: a random permutation
    deals the envs into ``K = ceil(B / size)`` slots per member, so no member plays more than ``K`` envs and
    each plays exactly ``K`` when ``size`` divides ``B``. Otherwise each env draws uniformly on its own."""
    if not balanced:
        return jax.random.randint(key, (num_envs,), 0, size)
    per_member = -(-num_envs // size)
    return jax.random.permutation(key, size * per_member)[:num_envs] // per_member


def member_table(partner_index: Array, size: int, per_member: int) -> tuple[Array, Array]:
    """Where each env sits in the ``[size, per_member]`` table whose row ``m`` holds member ``m``'s envs
    (in env order): ``(slot [B], env of each slot [size * per_member])``, ``B`` marking an empty slot.
    Every member must have at most ``per_member`` envs (``draw_members``'s balanced draws do)."""
    num_envs = partner_index.shape[0]
    envs_so_far = jnp.cumsum(jax.nn.one_hot(partner_index, size, dtype=jnp.int32), axis=0)  # [B, size]
    slot = partner_index * per_member + envs_so_far[jnp.arange(num_envs), partner_index] - 1
    env_of_slot = jnp.full((size * per_member,), num_envs).at[slot].set(jnp.arange(num_envs))
    return slot, env_of_slot


def act_alone(act: Callable[..., tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
    """``act`` for one env (inputs without the env axis): a batch of one, with the env's own key, so an env's
    partner acts alike however the envs are batched around it."""

    def one_env(params: Any, hidden: Any, timestep: Any, starts: Array, key: Array) -> tuple[Any, Any]:
        one = jax.tree.map(lambda x: x[None], (hidden, timestep))
        hidden, actions = act(params, *one, starts[None], key)
        return jax.tree.map(lambda x: x[0], (hidden, actions))

    return one_env


def act_per_env(act: Callable[..., tuple[Any, Any]], params: Any, partner_index: Array, hidden: Any,
                timestep: Any, starts: Array, keys: Array) -> tuple[Any, Any]:
    """Every env's partner acting (``act``, a ``Policy.act``) with its member's parameters gathered for
    that env: ``params`` stacked on a member axis, every other input ``[B, ...]``, one key per env."""
    member_params = jax.tree.map(lambda x: x[partner_index], params)
    return jax.vmap(act_alone(act))(member_params, hidden, timestep, starts, keys)


def act_by_member(act: Callable[..., tuple[Any, Any]], params: Any, partner_index: Array, hidden: Any,
                  timestep: Any, starts: Array, keys: Array, per_member: int) -> tuple[Any, Any]:
    """``act_per_env``'s result, computed member by member: the envs' inputs go into ``member_table``'s
    ``[size, per_member]`` table, each member acts on its row with its own parameters (the member axis of
    ``params``, read in place rather than copied per env) and the results come back in env order."""
    size = jax.tree.leaves(params)[0].shape[0]
    slot, env_of_slot = member_table(partner_index, size, per_member)

    def to_table(x: Array) -> Array:  # an empty slot repeats the last env; its result is never read
        return jnp.take(x, env_of_slot, axis=0, mode="clip").reshape(size, per_member, *x.shape[1:])

    table = jax.tree.map(to_table, (hidden, timestep, starts, keys))
    by_member = jax.vmap(jax.vmap(act_alone(act), in_axes=(None, 0, 0, 0, 0)))(params, *table)
    return jax.tree.map(lambda x: x.reshape(size * per_member, *x.shape[2:])[slot], by_member)


def make_trainer(config: Config, env: MultiAgentEnv) -> Trainer:
    """Build the pure ``init`` and ``update`` functions for ``config`` on ``env`` (``make_env(config)``)."""
    config.validate()
    groups = list(env.groups)
    if len(env.agents) != 2:
        raise ConfigError(f"env_id: FCP pairs the ego with one partner, so it needs a two-agent env; "
                          f"{config.env_id} has {len(env.agents)}: {', '.join(env.agents)}")
    partners = load_partners(config, env)
    balanced = config.partner_assignment == "balanced" and env.episodes_end_together
    per_member = -(-config.num_envs // partners.size)
    # seat_of[g][i]: the seat (index in env.agents) of slot i of group g
    seat_of = {g: jnp.array([list(env.agents).index(name) for name in names])
               for g, names in env.groups.items()}
    spaces = {g: env.action_space(g) for g in groups}
    independent = config.param_sharing == "agent"
    hidden_width = config.gru_size if config.recurrent else 0
    final_rows = final_obs_rows(config.num_steps, env.default_params.max_steps)
    for g in groups:
        networks.check_torso(config.torso, env.observation_space(g).shape, g)
    nets = {
        g: ActorCritic(networks.policy_width(spaces[g]), config.hidden_sizes, config.activation,
                       config.recurrent, config.gru_size, config.torso)
        for g in groups
    }
    # agent axes of (hidden [M, n, H], obs [L, M, n, d], starts [L, M, n])
    applies = {g: networks.group_apply(nets[g], independent, (1, 2, 2)) for g in groups}

    def zero_hidden(num: int) -> dict[str, Array]:
        return {g: jnp.zeros((num, env.group_size(g), hidden_width)) for g in groups}

    def init(key: Array, hparams: HParams) -> RunnerState:
        key, env_key, *net_keys = jax.random.split(key, 2 + len(groups))
        env_state, timestep = env.reset(env_key)
        params = {}
        for g, net_key in zip(groups, net_keys, strict=True):
            n = env.group_size(g)
            obs_shape = env.observation_space(g).shape
            per_agent = 1 if independent else n
            example = (jnp.zeros((1, per_agent, hidden_width)), jnp.zeros((1, 1, per_agent, *obs_shape)),
                       jnp.zeros((1, 1, per_agent), bool))
            params[g] = networks.init_group_params(nets[g], net_key, n, independent, *example)
        starts = jnp.ones((config.num_envs,), bool)
        alive = {g: jnp.ones((config.num_envs, env.group_size(g)), bool) for g in groups}
        zeros = jnp.zeros((config.num_envs,), jnp.int32)
        return RunnerState(params, ppo.optimizer(config, hparams).init(params), env_state,
                           envs.observation(env, timestep),
                           zero_hidden(config.num_envs), starts, alive, key, jnp.int32(0),
                           partners.params, zeros, zeros, partners.init_hidden(config.num_envs))

    def policy_step(params: dict[str, Any], hidden: dict[str, Array], obs: dict[str, Array],
                    starts: dict[str, Array]) -> tuple[dict[str, Array], dict[str, Any]]:
        """One step for every group: ``obs[g]`` is ``[B, n, d]``."""
        new_hidden, outputs = {}, {}
        for g in groups:
            h, head, log_std, value = applies[g](params[g], hidden[g], obs[g][None], starts[g][None])
            new_hidden[g] = h
            outputs[g] = (head[0], log_std[0], value[0, ..., 0])
        return new_hidden, outputs

    def group_starts(starts: Array) -> dict[str, Array]:
        return {g: jnp.broadcast_to(starts[:, None], (config.num_envs, env.group_size(g))) for g in groups}

    def partner_actions(runner: RunnerState, partner_index: Array, key: Array
                        ) -> tuple[Any, dict[str, Array]]:
        """Every env's partner acting for all slots (only its seat is kept). The population's policy is
        opaque (any baseline's ``Policy.act``; a Q-network may read agent ids, independent parameters
        differ by slot), so it acts for the whole group rather than the partner's slot alone."""
        timestep = runner.timestep
        if partners.act is None:
            keys = jax.random.split(key, len(groups))
            masks = envs.action_masks(env, timestep)
            return runner.partner_hidden, {
                g: env.action_space(g).sample(k, (config.num_envs, env.group_size(g)), masks.get(g))
                for g, k in zip(groups, keys, strict=True)}
        inputs = (runner.partner_hidden, timestep, runner.starts, jax.random.split(key, config.num_envs))
        if balanced:
            return act_by_member(partners.act, runner.partners, partner_index, *inputs, per_member)
        return act_per_env(partners.act, runner.partners, partner_index, *inputs)

    # ------------------------------------------------------------------------------------------- rollout
    def rollout(runner: RunnerState) -> tuple[RunnerState, Transition, dict[str, Array]]:
        def step(runner: RunnerState, _: None) -> tuple[RunnerState, tuple[Transition, dict[str, Array]]]:
            key, member_key, seat_key, partner_key, *group_keys = jax.random.split(runner.key,
                                                                                  5 + len(groups))
            env_key = group_keys.pop()
            timestep = runner.timestep
            masks = envs.action_masks(env, timestep)
            starts = group_starts(runner.starts)
            # A new episode draws its partner and the ego's seat.
            partner_index = jnp.where(runner.starts, draw_members(member_key, config.num_envs,
                                                                  partners.size, balanced),
                                      runner.partner_index)
            ego_seat = jnp.where(runner.starts, jax.random.randint(seat_key, (config.num_envs,), 0, 2),
                                 runner.ego_seat)
            is_ego = {g: seat_of[g][None, :] == ego_seat[:, None] for g in groups}
            partner_hidden, partner_env_actions = partner_actions(runner, partner_index, partner_key)
            hidden, outputs = policy_step(runner.params, runner.hidden, timestep.obs, starts)
            actions, log_probs, values = {}, {}, {}
            for g, group_key in zip(groups, group_keys, strict=True):
                head, log_std, values[g] = outputs[g]
                actions[g], log_probs[g] = networks.sample_action(spaces[g], head, log_std,
                                                                  masks.get(g), group_key)
            env_actions = {}
            for g in groups:
                ego = networks.to_env_action(spaces[g], actions[g])
                keep = is_ego[g].reshape(is_ego[g].shape + (1,) * (ego.ndim - 2))
                env_actions[g] = jnp.where(keep, ego, partner_env_actions[g].astype(ego.dtype))
            env_state, next_timestep = env.step(env_key, runner.env_state, env_actions)
            ended = envs.agent_done(next_timestep)
            env_ended = next_timestep.info["episode_done"]
            weight = envs.shaped_reward_weight(runner.update * config.batch_size, config.shaped_reward_steps)
            transition = Transition(
                obs=timestep.obs, action_mask=masks, starts=starts, hidden=runner.hidden,
                action=actions, log_prob=log_probs, value=values,
                reward={g: envs.training_reward(next_timestep, g, weight) for g in groups},
                # the partner's slot stays out of the loss, as a dead agent's would
                terminated=next_timestep.terminated, episode_end=ended,
                alive={g: runner.alive[g] & is_ego[g] for g in groups},
                final_obs=next_timestep.info["final_obs"], next_hidden=hidden,
                truncated=env_ended & ~jnp.concatenate(
                    [next_timestep.terminated[g] for g in groups], axis=-1).all(-1),
            )
            # An agent whose episode ended stays out of the loss until its env starts a new episode.
            alive = {g: jnp.where(env_ended[:, None], True, runner.alive[g] & ~ended[g]) for g in groups}
            runner = runner.replace(env_state=env_state, timestep=envs.observation(env, next_timestep),
                                    hidden=hidden, starts=env_ended, alive=alive, key=key,
                                    partner_index=partner_index, ego_seat=ego_seat,
                                    partner_hidden=partner_hidden)
            return runner, (transition, envs.completed_episode_stats(next_timestep))

        runner, (trajectory, stats) = loops.scan(step, runner, None, length=config.num_steps, unroll=1)
        return runner, trajectory, envs.episode_metrics(stats)

    def bootstrap_values(params: dict[str, Any], trajectory: Transition) -> dict[str, Array]:
        """``V`` of the observation each transition led to (pre-reset): the next step's value where the
        episode went on, and a fresh pass on ``final_obs`` from the hidden state after the step only where
        it was truncated or the rollout ends (``gae.final_values``)."""
        values = {}
        for g in groups:
            def value_of(params: Any, hidden: Array, obs: Array, starts: Array, g: str = g) -> Array:
                return applies[g](params, hidden, obs, starts)[3][..., 0]

            values[g] = final_values(value_of, params[g], trajectory.value[g], trajectory.next_hidden[g],
                                     trajectory.final_obs[g], trajectory.truncated, final_rows)
        return values

    # ---------------------------------------------------------------------------------------------- loss
    def loss_fn(params: dict[str, Any], batch: dict[str, Any], hparams: HParams) -> tuple[Array, Any]:
        outputs = {}
        for g in groups:
            b = batch[g]
            _, head, log_std, value = applies[g](params[g], b["hidden"], b["obs"], b["starts"])
            dist = networks.action_distribution(spaces[g], head, log_std, b.get("action_mask"))
            outputs[g] = (dist.log_prob(b["action"]), dist.entropy(), value[..., 0])
        return ppo_loss(outputs, batch, hparams)

    # -------------------------------------------------------------------------------------------- update
    def update(runner: RunnerState, hparams: HParams) -> tuple[RunnerState, dict[str, Array]]:
        runner, trajectory, metrics = rollout(runner)
        next_values = bootstrap_values(runner.params, trajectory)
        batch = {}
        for g in groups:
            advantage, target = gae(trajectory.reward[g], trajectory.value[g], next_values[g],
                                    trajectory.terminated[g], trajectory.episode_end[g], hparams.gamma,
                                    hparams.gae_lambda)
            fields = {name: getattr(trajectory, name)[g]
                      for name in ("obs", "starts", "action", "log_prob", "value", "alive")}
            fields.update(advantage=advantage, target=target)
            if g in trajectory.action_mask:  # discrete actions
                fields["action_mask"] = trajectory.action_mask[g]
            batch[g] = sequence_batch(config, fields, {"hidden": trajectory.hidden[g]})
        tx = ppo.optimizer(config, hparams)

        def apply_grads(grads: Any, opt_state: Any, params: Any) -> tuple[Any, Any]:
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        key, epoch_key = jax.random.split(runner.key)
        params, opt_state, losses = train_epochs(config, loss_fn, apply_grads, runner.params,
                                                 runner.opt_state, epoch_key, batch, hparams, ("hidden",))
        runner = runner.replace(params=params, opt_state=opt_state, key=key, update=runner.update + 1)
        return runner, {**metrics, **losses}

    return Trainer(init, update, env)


def make_policy(config: Config, env: MultiAgentEnv) -> Policy:
    """The trained ego on ``env`` (any ``make_env(config, n)``): each group's actor head of the
    actor-critic, acting in every seat."""
    actor_critics = {
        g: networks.group_apply(ActorCritic(networks.policy_width(env.action_space(g)), config.hidden_sizes,
                                            config.activation, config.recurrent, config.gru_size,
                                            config.torso),
                                config.param_sharing == "agent", (1, 2, 2))
        for g in env.groups
    }

    def actor(g: str) -> Any:
        return lambda params, hidden, obs, starts: actor_critics[g](params, hidden, obs, starts)[:3]

    return ppo.actor_policy(config, env, {g: actor(g) for g in env.groups})


def policy_params(runner: RunnerState) -> dict[str, Any]:
    """The ego's parameters, which ``make_policy``'s ``act`` takes."""
    return runner.params


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, train every seed and grid point, write the run folder."""
    from jaxmarl_suite.pipeline import run_from_command_line

    return run_from_command_line(sys.modules[__name__], "fcp", argv)


if __name__ == "__main__":
    sys.exit(main())
