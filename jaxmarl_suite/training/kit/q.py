"""The value-based pieces the Q-learning baselines (IQL, VDN, QMIX, PQN) share: the Q-network, acting by
masked epsilon-greedy (with a slice of the envs greedy, for measuring), masked maxima and double-Q
bootstraps for targets, Q(lambda) returns over a rollout (PQN), the team reward the mixers learn from,
the greedy policy, and a flashbax replay buffer whose memory is checked before anything is allocated. The
losses, exploration loops, replay schedules and target updates are each baseline file's own.

Written once here, as GAE is, and tested against plain Python (tests/training/test_q.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.core.spaces import Discrete
from jaxmarl_suite.core.types import TimeStep
from jaxmarl_suite.errors import ConfigError, IncompatibleEnvError, check_range, require
from jaxmarl_suite.training.kit import networks
from jaxmarl_suite.training.kit.baseline import Policy
from jaxmarl_suite.training.kit.envs import Observation, completed_episode_stats
from jaxmarl_suite.training.kit.gae import final_obs_rows as final_obs_rows  # re-exported for the Q files
from jaxmarl_suite.training.kit.gae import final_values, reverse_scan

Array = jax.Array


OPTIMIZERS = ("adam", "radam")
"""The optimizers the value-based baselines take (``--optimizer``)."""


def linear_epsilon(step: Array | int, start: float | Array, end: float | Array,
                   decay_steps: float | Array) -> Array:
    """Exploration rate after ``step`` env steps: ``start`` falling linearly to ``end`` over ``decay_steps``,
    then ``end``."""
    progress = jnp.clip(jnp.asarray(step, jnp.float32) / jnp.maximum(decay_steps, 1), 0.0, 1.0)
    return jnp.asarray(start + (end - start) * progress, jnp.float32)


def epsilon_schedule_flags(grid: Sequence[Any]) -> list[str]:
    """``["--epsilon-decay"]`` when some grid point's epsilon moves over a fraction of the run (so a raised
    ``total_timesteps`` changes it), else nothing."""
    moving = any(p.epsilon_decay > 0 and p.epsilon_start != p.epsilon_end for p in grid)
    return ["--epsilon-decay"] if moving else []


def masked_q(q: Array, mask: Array | None) -> Array:
    """``q`` with illegal actions (``mask`` False) at the dtype's lowest finite value: never the max, and
    finite, so no NaN reaches a gradient. ``mask`` None means every action is legal."""
    if mask is None:
        return q
    return jnp.where(mask, q, jnp.finfo(q.dtype).min)


def greedy_actions(q: Array, mask: Array | None) -> Array:
    """``argmax`` over the last axis among legal actions."""
    return jnp.argmax(masked_q(q, mask), axis=-1)


def max_q(q: Array, mask: Array | None) -> Array:
    """``max`` over the last axis among legal actions (a target's bootstrap)."""
    return jnp.max(masked_q(q, mask), axis=-1)


def epsilon_greedy(key: Array, q: Array, mask: Array | None, epsilon: float | Array) -> Array:
    """Per agent: with probability ``epsilon`` a uniformly random legal action, otherwise the greedy one."""
    explore_key, action_key = jax.random.split(key)
    legal = jnp.ones(q.shape, bool) if mask is None else mask
    random_actions = jax.random.categorical(action_key, jnp.where(legal, 0.0, -jnp.inf), axis=-1)
    explore = jax.random.uniform(explore_key, q.shape[:-1]) < epsilon
    return jnp.where(explore, random_actions, greedy_actions(q, mask))


def q_lambda_returns(
    rewards: Array,
    next_max_q: Array,
    terminated: Array,
    episode_end: Array,
    gamma: float | Array,
    q_lambda: float | Array,
) -> Array:
    """Q(lambda) targets for a rollout, time on the leading axis (``[T, ...]`` everywhere), as PQN uses:

    ``G_t = r_t + gamma * (1 - terminated_t) * ((1 - lambda) * M_t + lambda * (G_{t+1} if the episode goes
    on else M_t))``, where ``M_t`` (``next_max_q``) is the max Q of the observation the transition led to,
    before any auto-reset (``info["final_obs"]``), so truncation bootstraps and termination does not. The
    last step of the rollout bootstraps from its own ``M``. ``lambda = 0`` is the one-step target.
    """
    not_terminated = 1.0 - terminated.astype(next_max_q.dtype)
    continues = 1.0 - episode_end.astype(next_max_q.dtype)

    def backwards(next_return: Array, step: tuple[Array, Array, Array, Array]) -> tuple[Array, Array]:
        reward, bootstrap, alive, carry_on = step
        ahead = carry_on * next_return + (1.0 - carry_on) * bootstrap
        target = reward + gamma * alive * ((1.0 - q_lambda) * bootstrap + q_lambda * ahead)
        return target, target

    return reverse_scan(backwards, next_max_q[-1], (rewards, next_max_q, not_terminated, continues))


# ------------------------------------------------------------------------------------------------ replay
def replay_bytes(item: Any, capacity: int) -> int:
    """Bytes a buffer of ``capacity`` items like ``item`` (arrays or ``ShapeDtypeStruct``) holds."""
    per_item = sum(int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(item))
    return per_item * int(capacity)


def free_memory_bytes(device: Any = None) -> int | None:
    """Free memory of ``device`` (default: the first device): the accelerator's allocator limit minus what
    is in use, or the host's available RAM for a CPU. None when neither can be read."""
    device = device or jax.devices()[0]
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_replay_fits(num_bytes: int, flag: str = "buffer_size", device: Any = None,
                      free_bytes: int | None = None, share: float = 0.8,
                      what: str = "the replay buffer") -> None:
    """Raise ``ConfigError`` naming ``flag`` when a buffer of ``num_bytes`` exceeds ``share`` of the
    device's free memory (``free_bytes`` overrides the measurement), before anything compiles: a buffer
    that does not fit would otherwise crash the run partway through. ``what`` names what is measured."""
    free = free_memory_bytes(device) if free_bytes is None else free_bytes
    if free is None:
        return
    if num_bytes > share * free:
        gib = 2.0**30
        raise ConfigError(
            f"{flag}: {what} needs {num_bytes / gib:.2f} GiB, more than {share:.0%} of the "
            f"{free / gib:.2f} GiB free on {device or jax.devices()[0]}; lower --{flag.replace('_', '-')}")


def make_replay(item: Any, capacity: int, sample_batch_size: int, items_per_add: int, *,
                min_length: int | None = None, flag: str = "buffer_size",
                free_bytes: int | None = None) -> Any:
    """A flashbax item buffer of ``capacity`` items like ``item`` (one rollout sequence of one env, for the
    Q-learning baselines), added ``items_per_add`` at a time and sampled ``sample_batch_size`` at a time,
    after ``check_replay_fits``. Returns flashbax's buffer (``init``, ``add``, ``sample``, ``can_sample``);
    a sample's ``experience`` holds ``[sample_batch_size, ...]`` items."""
    import flashbax as fbx

    check_replay_fits(replay_bytes(item, capacity), flag, free_bytes=free_bytes)
    if capacity < max(items_per_add, sample_batch_size):
        raise ConfigError(f"{flag}: must hold at least the {items_per_add} sequences one update adds and the "
                          f"{sample_batch_size} one gradient step samples, got {capacity}")
    return fbx.make_item_buffer(max_length=capacity, min_length=min_length or sample_batch_size,
                                sample_batch_size=sample_batch_size, add_sequences=True)


# ---------------------------------------------------------------------------------------------- network
class QNetwork(nn.Module):
    """Per-agent action values: the observation torso, optional agent-id features, an optional GRU, dense
    layers (each optionally layer-normalised, as PQN uses) and a linear head of one value per action.

    ``(hidden [M, n, H], obs [L, M, n, *obs_shape], starts [L, M, n])`` ->
    ``(hidden, q [L, M, n, A], hiddens [L, M, n, H])``, where ``hiddens`` is the recurrent state after each
    step (zeros for a feed-forward net): a target's next observation is valued from it.
    """

    num_actions: int
    hidden_sizes: Sequence[int]
    activation: str
    recurrent: bool
    gru_size: int
    torso: str = "mlp"
    layer_norm: bool = False
    agent_ids: bool = False

    @nn.compact
    def __call__(self, hidden: Array, obs: Array, starts: Array) -> tuple[Array, Array, Array]:
        """Evaluate the action values along ``L`` steps."""
        x = networks.ObsEncoder(self.torso, self.activation)(obs)
        n = x.shape[-2]
        if self.agent_ids and n > 1:
            # Agents that share parameters need to know which of them is acting (JaxMARL adds the same).
            x = jnp.concatenate([x, jnp.broadcast_to(jnp.eye(n, dtype=x.dtype), (*x.shape[:-2], n, n))], -1)
        act = networks.ACTIVATIONS[self.activation]
        if self.recurrent:
            x = act(networks.Dense(self.gru_size, kernel_init=networks.orthogonal(np.sqrt(2)))(x))
            hidden, x = networks.ResetGRU(self.gru_size)(hidden, x, starts)
            hiddens = x
        else:
            hiddens = jnp.zeros((*x.shape[:-1], hidden.shape[-1]), x.dtype)
        lead = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])  # XLA's CPU backend reduces [rows, features] far faster than 4-D
        for size in self.hidden_sizes:
            x = networks.Dense(size, kernel_init=networks.orthogonal(np.sqrt(2)))(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = act(x)
        q = networks.Dense(self.num_actions, kernel_init=networks.orthogonal(1.0))(x)
        return hidden, q.reshape(*lead, self.num_actions), hiddens


def discrete_actions(env: MultiAgentEnv) -> dict[str, int]:
    """Actions per agent of each group; ``IncompatibleEnvError`` unless every group acts discretely."""
    counts = {}
    for g in env.groups:
        space = env.action_space(g)
        if not isinstance(space, Discrete):
            raise IncompatibleEnvError(
                f"Q-learning needs Discrete actions; group {g!r} acts in {space} (use ippo or mappo, or the "
                "env's discrete-action option)")
        counts[g] = int(space.n)
    return counts


def full_masks(timestep: TimeStep | Observation, env: MultiAgentEnv,
               num_actions: Mapping[str, int]) -> dict[str, Array]:
    """Each group's ``action_mask``, all True where the env has none, so every value-based path can mask."""
    masks = {}
    for g in env.groups:
        mask = timestep.action_mask.get(g)
        shape = (*timestep.obs[g].shape[:2], num_actions[g])
        masks[g] = jnp.ones(shape, bool) if mask is None else jnp.broadcast_to(mask, shape)
    return masks


def next_masks(masks: Mapping[str, Array], env_ended: Array) -> dict[str, Array]:
    """The masks of the observation each transition led to, from the next timestep's ``masks``. Where an
    episode ended (``env_ended [B]``), that timestep already shows the next episode's first step, whose
    mask is not the ended one's: every action counts there (it only matters when a truncated episode is
    bootstrapped)."""
    return {g: jnp.where(env_ended[:, None, None], True, m) for g, m in masks.items()}


def team_reward(rewards: Mapping[str, Array], alive: Mapping[str, Array]) -> Array:
    """The team's reward per env for the mixers (VDN, QMIX, PQN-VDN): the mean over the agents of every
    group that were alive at the step (``[..., n]`` per group -> ``[...]``). Where agents share one reward
    (SMAX, Hanabi) it is that reward, also after some have died (SMAX gives the dead 0); on MPE spread it is
    the mean of the agents' rewards. JaxMARL sums the agents' rewards instead on MPE (the agent count times
    ours) and takes the first agent's elsewhere."""
    weight = all_agents({g: a.astype(jnp.float32) for g, a in alive.items()})
    total = jnp.sum(all_agents(rewards) * weight, axis=-1)
    return total / jnp.maximum(weight.sum(-1), 1.0)


def all_agents(values: Mapping[str, Array]) -> Array:
    """Per-group ``[..., n]`` arrays joined on the agent axis, in group order: what a mixer takes."""
    return jnp.concatenate(list(values.values()), axis=-1)


QApply = Callable[[Any, Array, Array, Array], tuple[Array, Array, Array]]
"""A group's ``QNetwork`` apply: ``(params, hidden [M, n, H], obs [L, M, n, ...], starts [L, M, n])``."""


@struct.dataclass
class QHParams:
    """The traceable hyperparameters every value-based baseline takes (each adds its own): vmapped over for
    sweeps, so a grid compiles once."""

    lr: float = 5e-4
    """Learning rate (the start value when annealed)."""
    gamma: float = 0.99
    """Discount factor."""
    epsilon_start: float = 1.0
    """Exploration rate at the start."""
    epsilon_end: float = 0.05
    """Exploration rate after the decay."""
    epsilon_decay: float = 0.1
    """Fraction of total_timesteps over which exploration falls linearly from start to end."""
    max_grad_norm: float = 1.0
    """Global gradient-norm clip."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this before the targets (JaxMARL's REW_SCALE)."""

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad field."""
        check_range(self, "lr", 0.0, 1.0, open_low=True)
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "epsilon_start", 0.0, 1.0)
        check_range(self, "epsilon_end", 0.0, 1.0)
        check_range(self, "epsilon_decay", 0.0, 1.0)
        check_range(self, "max_grad_norm", 0.0, 1e6, open_low=True)
        check_range(self, "reward_scale", 0.0, 1e6, open_low=True)


def greedy_policy(env: MultiAgentEnv, applies: Mapping[str, QApply], hidden_width: int,
                  epsilon: float = 0.0) -> Policy:
    """Acting with trained action values: the greedy legal action (``deterministic``), or epsilon-greedy
    with ``epsilon`` otherwise (0: greedy either way). ``params`` is ``{group: QNetwork parameters}``."""
    groups = list(env.groups)

    def init_hidden(num_envs: int) -> dict[str, Array]:
        return {g: jnp.zeros((num_envs, env.group_size(g), hidden_width)) for g in groups}

    def act(params: dict[str, Any], hidden: dict[str, Array], timestep: Any, starts: Array, key: Array,
            deterministic: bool = False) -> tuple[dict[str, Array], dict[str, Array]]:
        new_hidden, actions = {}, {}
        for g, group_key in zip(groups, jax.random.split(key, len(groups)), strict=True):
            group_starts = jnp.broadcast_to(starts[:, None], timestep.obs[g].shape[:2])
            h, q, _ = applies[g](params[g], hidden[g], timestep.obs[g][None], group_starts[None])
            mask = timestep.action_mask.get(g)
            chosen = (greedy_actions(q[0], mask) if deterministic or epsilon == 0.0
                      else epsilon_greedy(group_key, q[0], mask, epsilon))
            new_hidden[g], actions[g] = h, chosen.astype(env.action_space(g).dtype)
        return new_hidden, actions

    return Policy(init_hidden, act)


def next_q_values(apply: QApply, params: Any, q_seq: Array, hiddens: Array, final_obs: Array,
                  truncated: Array, rows_per_sequence: int) -> Array:
    """The action values of the observation each step led to (``info["final_obs"]``), ``[T, M, n, A]``:
    ``gae.final_values`` with the Q-network (``q_seq[t + 1]`` where the episode went on, a fresh pass
    where it was truncated or the sequence ends)."""
    return final_values(lambda p, h, o, s: apply(p, h, o, s)[1], params, q_seq, hiddens, final_obs,
                        truncated, rows_per_sequence)


def chosen_q(q: Array, action: Array) -> Array:
    """``q[..., action]``: the value of the action taken."""
    return jnp.take_along_axis(q, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def bootstrap_q(next_q_target: Array, next_q_online: Array | None, next_mask: Array) -> Array:
    """The value a target bootstraps from: the target net's max over legal actions, or (double Q, when
    ``next_q_online`` is given) the target net's value of the online net's greedy legal action."""
    if next_q_online is None:
        return max_q(next_q_target, next_mask)
    return chosen_q(next_q_target, greedy_actions(next_q_online, next_mask))


def greedy_env_count(num_envs: int, fraction: float) -> int:
    """How many of ``num_envs`` training envs act greedily: ``round(fraction * num_envs)``, at least one
    when ``fraction`` is positive, and never all of them."""
    if fraction <= 0.0:
        return 0
    return min(max(1, round(fraction * num_envs)), num_envs - 1)


def check_greedy_fraction(config: Any) -> None:
    """``greedy_fraction`` in [0, 1), and at least two envs when it is positive (one must explore)."""
    fraction = config.greedy_fraction
    require(isinstance(fraction, int | float) and not isinstance(fraction, bool) and 0.0 <= fraction < 1.0,
            "greedy_fraction", f"must lie in [0, 1), got {fraction!r}")
    require(fraction == 0.0 or config.num_envs >= 2, "greedy_fraction",
            f"needs at least 2 envs (one explores, one acts greedily), got num_envs={config.num_envs}; "
            "set it to 0 to measure no greedy episodes")


def env_epsilons(num_envs: int, num_greedy: int, epsilon: Array) -> Array:
    """``[num_envs]`` exploration rates: 0 for the first ``num_greedy`` envs (they measure the greedy
    policy), ``epsilon`` for the rest (per-actor rates, as Ape-X gives its actors)."""
    return jnp.where(jnp.arange(num_envs) < num_greedy, 0.0, epsilon)


def split_episode_stats(timestep: TimeStep, num_greedy: int) -> tuple[dict[str, Array], dict[str, Array]]:
    """``completed_episode_stats`` of the exploring envs and of the greedy ones (empty without any)."""
    greedy = jnp.arange(timestep.info["episode_done"].shape[0]) < num_greedy
    exploring = completed_episode_stats(timestep, ~greedy)
    return exploring, (completed_episode_stats(timestep, greedy) if num_greedy else {})


def q_networks(config: Any, env: MultiAgentEnv, layer_norm: bool = False) -> dict[str, QApply]:
    """Each group's ``QNetwork`` apply (``group_apply``: per agent with ``param_sharing="agent"``)."""
    counts = discrete_actions(env)
    for g in env.groups:
        networks.check_torso(config.torso, env.observation_space(g).shape, g)
    return {
        g: networks.group_apply(
            QNetwork(counts[g], config.hidden_sizes, config.activation, config.recurrent, config.gru_size,
                       config.torso, layer_norm, config.agent_ids and config.param_sharing != "agent"),
            config.param_sharing == "agent", (1, 2, 2))
        for g in env.groups
    }


def init_q_params(config: Any, env: MultiAgentEnv, key: Array, layer_norm: bool = False) -> dict[str, Any]:
    """Fresh ``QNetwork`` parameters for every group."""
    hidden_width = config.gru_size if config.recurrent else 0
    counts = discrete_actions(env)
    independent = config.param_sharing == "agent"
    params = {}
    for g, group_key in zip(env.groups, jax.random.split(key, len(env.groups)), strict=True):
        n = env.group_size(g)
        per_agent = 1 if independent else n
        net = QNetwork(counts[g], config.hidden_sizes, config.activation, config.recurrent, config.gru_size,
                         config.torso, layer_norm, config.agent_ids and not independent)
        example = (jnp.zeros((1, per_agent, hidden_width)),
                   jnp.zeros((1, 1, per_agent, *env.observation_space(g).shape)),
                   jnp.zeros((1, 1, per_agent), bool))
        params[g] = networks.init_group_params(net, group_key, n, independent, *example)
    return params
