"""Offline datasets in Off-the-Grid MARL's format: a trained policy's experience written as a flashbax
``Vault``, and read back for offline learning (``jaxmarl-suite collect``).

OG-MARL (Formanek et al., 2023) stores a dataset as a flashbax vault named ``SOURCE/ENV/SCENARIO.vlt``
with one uid per behaviour quality (``Good``, ``Medium``, ``Poor``); ``collect`` writes
``OUT/jaxmarl_suite/FAMILY/ENV_ID.vlt/QUALITY``. Its experience is one trajectory buffer of one row and
a time axis of every step of every episode, back to back; per step, agents stacked in a fixed order:

- ``observations`` ``[1, T, N, O]`` float32: each agent's observation before it acted;
- ``actions`` ``[1, T, N]`` int32 (discrete) or ``[1, T, N, A]`` float32 (continuous);
- ``rewards`` ``[1, T, N]``, ``terminals`` and ``truncations`` ``[1, T, N]`` float32 (1.0 where the step
  ended the agent's episode; an episode ends at a step whose terminals or truncations are all set);
- ``infos``: ``legals`` ``[1, T, N, A]`` float32 (1.0 = legal) for discrete actions and ``state``
  ``[1, T, S]`` float32 (the world state) where the env has one.

``collect`` writes each of ``episodes`` parallel envs' first episode (so short episodes are not
over-represented), env by env. The vault's metadata says what wrote it: the env and its arguments, the
agents' order, the algorithm and run, each episode's return, and the quality label (``quality_label``).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.evaluation.policy import mean_ci
from jaxmarl_suite.evaluation.reference import reference_for

Array = jax.Array

QUALITY_BOUNDS = (("Good", 0.75), ("Medium", 0.35), ("Poor", -math.inf))
"""A dataset's label from its policy's normalised score, ``(mean return - random) / (strong - random)`` by
the env's reference scores: at least 0.75 is ``Good``, at least 0.35 ``Medium``, else ``Poor``. OG-MARL
names its datasets so; its bounds are per dataset, these are this suite's."""

SOURCE = "jaxmarl_suite"
"""The first level of a vault's name, ``SOURCE/FAMILY/ENV_ID.vlt`` (OG-MARL's ``source/env/scenario.vlt``),
so that OG-MARL's loader takes ``collect``'s output as it is."""

UNLABELLED = "Unlabelled"
"""The label where the env has no reference scores (or ran with non-default arguments)."""


def quality_label(env_id: str, mean_return: float, env_kwargs: dict[str, Any] | None = None
                  ) -> tuple[str, float | None]:
    """``(label, normalised score)`` of a policy whose episodes average ``mean_return`` per agent on
    ``env_id`` (``QUALITY_BOUNDS``); ``(UNLABELLED, None)`` without a reference scale."""
    reference = reference_for(env_id)
    if reference is None or reference.range is None or env_kwargs:
        return UNLABELLED, None
    low, high = reference.range
    score = (mean_return - low) / (high - low)
    return next(name for name, bound in QUALITY_BOUNDS if score >= bound), score


def _stack_agents(per_group: dict[str, Array], what: str, groups: dict[str, tuple[str, ...]]) -> Array:
    """Groups' ``[..., n_g, *shape]`` arrays as one ``[..., N, *shape]`` (agents in group order)."""
    shapes = {g: tuple(per_group[g].shape[3:]) for g in groups}
    if len(set(shapes.values())) > 1:
        raise ConfigError(f"OG-MARL's layout stacks every agent's {what} into one array, but this env's "
                          f"groups differ: {shapes}; train with --param-sharing all (one padded group) to "
                          f"collect it")
    return jnp.concatenate([per_group[g] for g in groups], axis=2)


def _rollout(module: ModuleType, config: Any, params: Any, episodes: int, key: Array,
             deterministic: bool) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """``episodes`` envs stepped until each has finished its first episode: per step ``[T, B, ...]`` the
    experience fields, whether the env was still in its first episode, and the episode-end flags."""
    env = module.make_env(config, episodes)
    policy = module.make_policy(config, env)
    groups = dict(env.groups)
    max_steps = int(env.default_params.max_steps)

    def run(key: Array) -> tuple[dict[str, Any], Array, Array]:
        reset_key, key = jax.random.split(key)
        env_state, timestep = env.reset(reset_key)
        carry = (env_state, timestep, policy.init_hidden(episodes), jnp.ones((episodes,), bool),
                 jnp.zeros((episodes,), bool))

        def step(carry: Any, step_key: Array) -> tuple[Any, Any]:
            env_state, timestep, hidden, starts, finished = carry
            act_key, env_key = jax.random.split(step_key)
            hidden, actions = policy.act(params, hidden, timestep, starts, act_key, deterministic)
            env_state, after = env.step(env_key, env_state, actions)
            record = {"obs": timestep.obs, "actions": actions, "legals": timestep.action_mask,
                      "reward": after.reward, "terminated": after.terminated, "truncated": after.truncated,
                      "state": timestep.info.get("world_state")}
            done = after.info["episode_done"]
            return (env_state, after, hidden, done, finished | done), (record, ~finished, done)

        _, (records, active, done) = jax.lax.scan(step, carry, jax.random.split(key, max_steps + 1))
        return records, active, done

    records, active, done = jax.jit(run)(key)

    def stacked(name: str, what: str) -> Array:
        return _stack_agents({g: records[name][g] for g in groups}, what, groups)

    fields: dict[str, Any] = {
        "observations": stacked("obs", "observation").astype(jnp.float32),
        "rewards": stacked("reward", "reward").astype(jnp.float32),
        "terminals": stacked("terminated", "termination").astype(jnp.float32),
        "truncations": stacked("truncated", "truncation").astype(jnp.float32),
    }
    discrete = all(g in records["legals"] for g in groups)
    if not discrete and any(g in records["legals"] for g in groups):
        raise ConfigError("OG-MARL's layout needs every agent's actions of one kind; this env mixes discrete "
                          "and continuous groups")
    if discrete:
        fields["actions"] = stacked("actions", "action").astype(jnp.int32)
        infos: dict[str, Any] = {"legals": stacked("legals", "legal actions").astype(jnp.float32)}
    else:
        fields["actions"] = stacked("actions", "action").astype(jnp.float32)
        infos = {}
    if records["state"] is not None:
        infos["state"] = records["state"].astype(jnp.float32)
    fields["infos"] = infos
    finished = np.asarray(done).any(axis=0)
    if not finished.all():
        raise RuntimeError(f"{int((~finished).sum())} of {finished.size} episodes did not end within "
                           f"max_steps + 1 = {max_steps + 1} steps")
    return jax.tree.map(np.asarray, fields), np.asarray(active), np.asarray(done)


@dataclass
class Dataset:
    """An OG-MARL vault read back: ``experience`` as numpy arrays ``[T, ...]`` (the vault's one row) and
    the vault's metadata."""

    experience: dict[str, Any]
    metadata: dict[str, Any]
    path: Path

    @property
    def num_steps(self) -> int:
        """Steps in the dataset, all episodes together."""
        return int(self.experience["observations"].shape[0])

    @property
    def episode_ends(self) -> np.ndarray:
        """``bool[T]``: the steps that end an episode (every agent terminated or truncated)."""
        return np.all((self.experience["terminals"] + self.experience["truncations"]) > 0, axis=-1)

    def episode_returns(self) -> np.ndarray:
        """Each episode's mean per-agent return, in order."""
        ends = np.flatnonzero(self.episode_ends)
        starts = np.concatenate([[0], ends[:-1] + 1])
        rewards = self.experience["rewards"].mean(axis=-1)
        return np.array([rewards[a:b + 1].sum() for a, b in zip(starts, ends, strict=True)])

    def sample(self, key: Array, batch_size: int) -> dict[str, Any]:
        """``batch_size`` steps drawn uniformly with replacement (every field, ``[batch_size, ...]``)."""
        index = np.asarray(jax.random.randint(key, (batch_size,), 0, self.num_steps))
        return jax.tree.map(lambda x: x[index], self.experience)


def collect(run_dir: str | Path, episodes: int, out: str | Path, *, grid_index: int = 0,
            seed_index: int = 0, seed: int = 0, deterministic: bool = False, overwrite: bool = False) -> Path:
    """Play ``episodes`` episodes (each env's first, in parallel, in one compiled program) with one run's
    policy of ``run_dir`` (its newest checkpoint) and write them as an OG-MARL vault
    ``OUT/jaxmarl_suite/FAMILY/ENV_ID.vlt/LABEL``, ``LABEL`` the behaviour quality (``quality_label``).
    Returns the vault's folder. An existing vault there is refused unless ``overwrite`` (a vault never
    mixes two policies)."""
    from jaxmarl_suite.training.runner.experiment import load_policy

    if episodes < 1:
        raise ConfigError(f"episodes: must be >= 1, got {episodes}")
    from jaxmarl_suite.zoo import load_run, resolve

    name = resolve(str(run_dir))
    loaded = (load_run(name, grid_index, seed_index) if name is not None
              else load_policy(Path(run_dir), grid_index, seed_index))
    config = loaded.experiment.config
    fields, active, done = _rollout(loaded.module, config, loaded.params, episodes, jax.random.PRNGKey(seed),
                                    deterministic)
    mask = np.swapaxes(active, 0, 1)  # [B, T]: each env's first episode, env by env
    experience = jax.tree.map(lambda x: np.swapaxes(x, 0, 1)[mask][None], fields)
    ends = np.swapaxes(done, 0, 1)[mask]
    per_step = experience["rewards"][0].mean(axis=-1)
    bounds = np.concatenate([[0], np.flatnonzero(ends) + 1])
    returns = np.array([per_step[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
    mean, low, high = mean_ci(returns)
    label, score = quality_label(config.env_id, mean, dict(config.env_kwargs))

    from jaxmarl_suite.core.registry import env_spec

    vault_name = f"{SOURCE}/{env_spec(config.env_id).family}/{config.env_id}.vlt"
    env = loaded.module.make_env(config, 1)
    metadata = {
        "env_id": config.env_id, "env_kwargs": dict(config.env_kwargs),
        "agents": [a for g in env.groups for a in env.groups[g]],
        "algorithm": loaded.experiment.algorithm,
        "run": str(run_dir) if name is not None else str(Path(run_dir).resolve()),
        "grid_index": grid_index, "seed_index": seed_index, "checkpoint_update": loaded.meta["update"],
        "episodes": int(returns.size), "steps": int(ends.size), "seed": seed, "deterministic": deterministic,
        "mean_return": mean, "return_ci95": [low, high] if returns.size > 1 else None,
        "normalised_score": score, "quality": label,
        "episode_returns": [float(r) for r in returns],
    }
    return write_vault(experience, out, vault_name, label, metadata, overwrite=overwrite)


def write_vault(experience: dict[str, Any], out: str | Path, vault_name: str, uid: str,
                metadata: dict[str, Any], overwrite: bool = False) -> Path:
    """Write ``experience`` (OG-MARL's fields, each ``[1, T, ...]``) as the flashbax vault
    ``OUT/VAULT_NAME/UID`` with ``metadata`` under ``jaxmarl_suite`` in its ``metadata.json``; returns its
    folder. An existing vault there is refused unless ``overwrite`` (a vault never mixes two policies)."""
    from flashbax.buffers.trajectory_buffer import TrajectoryBufferState
    from flashbax.vault import Vault

    root = Path(out).resolve()
    base = root / vault_name / uid
    if base.exists():
        if not overwrite:
            raise ConfigError(f"{base} already holds a vault; a vault never mixes two policies' data. Pass "
                              f"--overwrite to replace it, or another --out")
        shutil.rmtree(base)
    steps = int(jax.tree.leaves(experience)[0].shape[1])
    state = TrajectoryBufferState(experience=jax.tree.map(jnp.asarray, experience),
                                  current_index=jnp.asarray(steps), is_full=jnp.asarray(False))
    with contextlib.redirect_stdout(io.StringIO()):  # flashbax prints where it writes
        vault = Vault(vault_name, experience_structure=state.experience, rel_dir=str(root), vault_uid=uid,
                      metadata={"jaxmarl_suite": metadata})
        vault.write(state, source_interval=(0, steps))
    return base


def read_vault(path: str | Path) -> Dataset:
    """An OG-MARL vault folder (``.../NAME.vlt/UID``, as ``collect`` or OG-MARL writes them) read into
    memory. A path that is no vault raises ConfigError."""
    from flashbax.vault import Vault

    path = Path(path).resolve()
    if not (path / "metadata.json").is_file():
        inside = (sorted(p.name for p in path.iterdir() if (p / "metadata.json").is_file())
                  if path.is_dir() else [])
        hint = f" (it holds the vaults {inside}: pass one)" if inside else ""
        raise ConfigError(f"{path} is not a vault: no metadata.json{hint}")
    with contextlib.redirect_stdout(io.StringIO()):
        state = Vault(path.parent.name, rel_dir=str(path.parent.parent), vault_uid=path.name).read()
    experience = jax.tree.map(lambda x: np.asarray(x)[0], state.experience)
    metadata = json.loads((path / "metadata.json").read_text())
    return Dataset(experience, metadata.get("jaxmarl_suite", {}), path)
