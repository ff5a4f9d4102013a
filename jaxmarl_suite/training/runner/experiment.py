"""Running a baseline's experiment: every seed and grid point in one compiled program, with logging from
inside the loop, orbax checkpoints between chunks, and the run folder the other tools read.

A baseline module follows the kit's ``Baseline`` protocol. The runner builds its env once
(``make_env``), hands it to ``make_trainer``, vmaps ``trainer.init`` and ``trainer.update`` over seeds
(keys) and over the grid (stacked ``HParams``), and runs ``checkpoint_every`` updates per compiled call
through the kit's ``scan_updates``, the loop ``make_train`` runs too. Chunk boundaries are the same
whether a run is fresh or resumed, so a resumed run computes exactly what an uninterrupted one does.

Run folder contract: ``config.yaml``, ``metrics.csv`` (one row per logged update, seed and grid point:
``update, env_steps, seed, grid_index, return_mean, episode_length, episodes, wall_s`` and the losses),
``summary.json`` and ``checkpoints/<update>/``; after the run, ``jaxmarl_suite.pipeline`` adds
``returns.png`` and, where the env renders, ``policy.gif``.
``return_mean`` is the mean episode return *per agent* (JaxMARL's MPE logs multiply it by the number of
agents).

Devices and hosts: the run axis (and, with more devices than runs, the env batch) is sharded over every
device of every process (``training.runner.sharding``). In a multi-process run every process runs
this same function; process 0 writes the run folder's files and checkpoints are saved by all of them.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.core.env import MultiAgentEnv
from jaxmarl_suite.errors import ConfigError, IncompatibleEnvError, require
from jaxmarl_suite.training.kit.baseline import Trainer, scan_updates
from jaxmarl_suite.training.kit.q import check_replay_fits, replay_bytes
from jaxmarl_suite.training.runner.checkpoint import (
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)
from jaxmarl_suite.training.runner.config import (
    Experiment,
    baseline_module,
    experiment_identity,
    run_record,
    to_plain,
)
from jaxmarl_suite.training.runner.logger import MetricsLogger, resolve_wandb_mode, start_wandb
from jaxmarl_suite.training.runner.run_folder import (
    check_run_dir,
    is_finished,
    prepare_run_dir,
    write_population,
    write_summary,
)
from jaxmarl_suite.training.runner.sharding import (
    barrier,
    env_batch_axes,
    is_primary,
    make_mesh,
    replicated,
    run_axis_sharding,
    state_shardings,
    to_host,
    with_shardings,
)

Array = jax.Array


class RunResult(NamedTuple):
    """What ``run_experiment`` leaves in memory (everything is also in the run folder)."""

    run_dir: Path
    state: Any
    """The final runner state, leaves shaped ``[grid * seeds, ...]`` (see ``select_run``)."""
    metrics: dict[str, np.ndarray]
    """Per-update metrics of this invocation, ``[updates, grid, seeds]``."""
    mesh: Any
    """The device mesh ``state`` lives on."""
    compile_s: float = 0.0
    """Seconds spent compiling the training program in this invocation."""
    train_s: float = 0.0
    """Seconds spent running it (every chunk and its checkpoint)."""


def stack_hparams(grid: Sequence[Any]) -> Any:
    """The grid's ``HParams`` as one pytree with a leading ``[grid]`` axis (float32 leaves)."""
    return jax.tree.map(lambda *xs: jnp.asarray(np.array(xs, np.float32)), *grid)


def seed_keys(seed: int, num_seeds: int) -> Array:
    """``[num_seeds, 2]`` keys; seed ``s`` uses ``fold_in(PRNGKey(seed), s)`` at every grid point."""
    base = jax.random.PRNGKey(seed)
    return jnp.stack([jax.random.fold_in(base, s) for s in range(num_seeds)])


def run_hparams(grid: Sequence[Any], num_seeds: int) -> Any:
    """The grid's ``HParams`` repeated per seed: one pytree with a leading ``[grid * seeds]`` axis,
    grid point ``g``, seed ``s`` at index ``g * seeds + s``."""
    return stack_hparams([point for point in grid for _ in range(num_seeds)])


def run_keys(seed: int, num_seeds: int, grid_size: int) -> Array:
    """``[grid * seeds, 2]`` keys in ``run_hparams``'s order (every grid point sees the same seeds)."""
    return jnp.tile(seed_keys(seed, num_seeds), (grid_size, 1))


def batched_trainer(trainer: Trainer, grid_size: int, num_seeds: int) -> tuple[Any, Any]:
    """``init(keys, hparams)`` and ``update(state, hparams) -> (state, metrics [grid, seeds])`` over the
    flat ``[grid * seeds]`` axis of ``run_keys`` and ``run_hparams``.

    One flat vmap keeps the metrics and checkpoints simple. (On jax 0.10.2's CPU backend the nested form
    deadlocked for 2 x 2 runs, as did 16 flat seeds, until ``jaxmarl_suite._xla`` turned XLA's
    concurrency-optimised CPU scheduler off; both run with it off.)
    """
    update_runs = jax.vmap(trainer.update)

    def update(state: Any, hparams: Any) -> tuple[Any, dict[str, Array]]:
        state, metrics = update_runs(state, hparams)
        return state, jax.tree.map(lambda m: m.reshape(grid_size, num_seeds), metrics)

    return jax.vmap(trainer.init), update


class Placement(NamedTuple):
    """Where an experiment's arrays live: the mesh and the sharding of the state, hparams and keys."""

    mesh: Any
    state: Any
    hparams: Any
    keys: Any


def build_trainer(module: ModuleType, config: Any, env: MultiAgentEnv | None = None) -> Trainer:
    """``module.make_trainer`` on ``env``, built here (``module.make_env``) when not given: the one env of
    a run. The config is validated first, so errors name the field; bad env arguments raise
    ``ConfigError``, and a pairing the baseline cannot train raises ``IncompatibleEnvError`` naming both.
    Anything else is a bug and keeps its traceback."""
    config.validate()
    name = module.__name__.rsplit(".", 1)[-1]
    try:
        env = module.make_env(config) if env is None else env
        batch = getattr(env, "num_envs", None)
        require(batch == config.num_envs, "num_envs",
                f"the env steps {batch} envs but the config asks for {config.num_envs}; build it with "
                f"{name}.make_env(config)")
        return module.make_trainer(config, env)
    except IncompatibleEnvError as error:
        raise IncompatibleEnvError(f"{name} cannot train on {config.env_id}: {error}") from error


def place_experiment(module: ModuleType, experiment: Experiment, trainer: Trainer, keys: Array,
                     hparams: Any) -> Placement:
    """Shard the runs (and the env batch, with more devices than runs) over every device of every
    process. With one device every sharding is trivial."""
    config = experiment.config
    grid_size, num_seeds = len(experiment.grid), experiment.num_seeds
    num_envs = getattr(config, "num_envs", 1)
    mesh = make_mesh(grid_size * num_seeds, num_envs)
    env_axes = None
    if mesh.shape["envs"] > 1:
        # Which state axes are the env batch: probed with two batch sizes, so only here is a second env built.
        def make_init(n: int) -> Any:
            smaller = dataclasses.replace(config, num_envs=n)
            return batched_trainer(build_trainer(module, smaller), grid_size, num_seeds)[0]

        env_axes = env_batch_axes(make_init, num_envs, keys, hparams)
    init_all = batched_trainer(trainer, grid_size, num_seeds)[0]
    abstract = jax.eval_shape(init_all, keys, hparams)
    return Placement(mesh, state_shardings(mesh, abstract, env_axes), run_axis_sharding(mesh, hparams),
                     run_axis_sharding(mesh, keys))


def check_state_fits(experiment: Experiment, trainer: Trainer, free_bytes: int | None = None) -> None:
    """For baselines with a replay buffer (a ``buffer_size`` setting): the state of every seed and grid
    point, buffers included, must fit in the free memory of the devices it is spread over. Checked from
    shapes before anything compiles or is written, so a grid of seeds that cannot fit fails at once with
    ``ConfigError`` naming ``buffer_size`` rather than partway through (``free_bytes`` overrides the
    measurement, for tests)."""
    if not hasattr(experiment.config, "buffer_size"):
        return
    grid_size, num_seeds = len(experiment.grid), experiment.num_seeds
    init_all = batched_trainer(trainer, grid_size, num_seeds)[0]
    abstract = jax.eval_shape(init_all, run_keys(experiment.seed, num_seeds, grid_size),
                              run_hparams(experiment.grid, num_seeds))
    per_device = replay_bytes(abstract, 1) // max(1, jax.device_count())
    runs = grid_size * num_seeds
    check_replay_fits(per_device, "buffer_size", free_bytes=free_bytes,
                      what=f"the state of {runs} run(s), replay buffers included, per device")


def checkpoint_identity(experiment: Experiment) -> dict[str, Any]:
    """What a checkpoint must match to be loaded into ``experiment``: its identity but for
    ``total_timesteps``, which a resume may raise, and the record of such raises (``extensions``)."""
    identity = experiment_identity(experiment)
    identity["config"].pop("total_timesteps", None)
    identity["config"].pop("extensions", None)
    return identity


def finished_update(experiment: Experiment) -> int | None:
    """For a resumed experiment whose newest checkpoint already holds its last update and whose summary was
    written: that update, so the caller can say the run is finished instead of loading and compiling it for
    nothing; else None. (A run stopped between its last checkpoint and its summary resumes: nothing is left
    to train, so only the summary and the artifacts are written.)"""
    from jaxmarl_suite.training.runner.checkpoint import list_checkpoints, read_meta

    if experiment.resume is None or not is_finished(experiment.run_dir):
        return None
    checkpoints = list_checkpoints(experiment.run_dir)
    if not checkpoints:
        return None
    update = int(read_meta(checkpoints[-1])["update"])
    return update if update >= experiment.config.num_updates else None


def finished_message(experiment: Experiment, update: int) -> str:
    """One line for resuming a finished run: where it stands and how to train it longer."""
    config = experiment.config
    return (f"{experiment.run_dir} is finished: update {update} of {config.num_updates} "
            f"({update * config.batch_size:,} env steps per run); nothing to do. To train it longer: "
            f"jaxmarl-suite train {experiment.algorithm} --resume {experiment.run_dir} --total-timesteps N "
            "(with --extend hold|restart where its schedules depend on its length; docs/training.md)")


def chunk_lengths(start: int, total: int, every: int, cuts: Sequence[int] = ()) -> list[int]:
    """Update counts per compiled call from ``start`` to ``total``, cut at multiples of ``every``
    (none when ``every`` is 0) and at every update in ``cuts`` (the snapshots), so fresh and resumed runs
    cut at the same updates."""
    ends = {total} | {c for c in cuts if start < c < total}
    if every > 0:
        ends |= set(range((start // every + 1) * every, total, every))
    lengths, update = [], start
    for end in sorted(e for e in ends if e > start):
        lengths.append(end - update)
        update = end
    return lengths


JAX_CALLBACK_LOGGER = "jax._src.debugging"
"""The logger jax reports a failed ``jax.debug.callback`` on (jax 0.10), with the callback's traceback."""


class _QuietCallbackInterrupts(logging.Filter):
    """Drops jax's report of a debug callback that Ctrl-C stopped: the run ends with one line saying where
    it can resume, not a traceback from the logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.exc_info[0] is KeyboardInterrupt)


@contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C until the block ends, then raise it: a checkpoint is either saved whole or not begun.
    Python's handler only records the signal meanwhile, and SIGINT is blocked for the calling thread, so the
    threads orbax starts for the save inherit the block and never take it (in CI, a save that a Ctrl-C hit
    waited on its writer threads for ever). Off the main thread, or without signal masks, the block just
    runs."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    # the signal is process-wide: another thread (XLA's) may take it, so Python's handler only records it
    received: list[int] = []
    handler = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, handler)
    if received:
        raise KeyboardInterrupt


def _run_chunk(executable: Any, state: Any, hparams: Any) -> tuple[Any, dict[str, Array]]:
    """One compiled chunk of updates, to completion. On the CPU the logging callback can run on the main
    thread (it does on jax 0.10), so a Ctrl-C that lands while it runs raises ``KeyboardInterrupt`` inside
    it, and XLA hands that back as a ``JaxRuntimeError`` around the callback's traceback; it is raised
    again as the ``KeyboardInterrupt`` it was, so callers (the CLI, a notebook) see every Ctrl-C alike."""
    try:
        return jax.block_until_ready(executable(state, hparams))
    except jax.errors.JaxRuntimeError as error:
        # the traceback's last line names the exception; a word in a quoted source line does not count
        if re.search(r"^KeyboardInterrupt\b", str(error), re.MULTILINE):
            raise KeyboardInterrupt from None
        raise


def run_experiment(module: ModuleType, experiment: Experiment, env: MultiAgentEnv | None = None) -> RunResult:
    """Train every seed and grid point of ``experiment`` and write its run folder (config, metrics,
    summary, checkpoints). ``env`` is the run's env when the caller has built it (``module.make_env``);
    otherwise it is built here, once, before anything is written."""
    config = experiment.config
    run_dir = experiment.run_dir
    primary = is_primary()
    done = finished_update(experiment)
    if done is not None:
        raise ConfigError(f"resume: {finished_message(experiment, done)}")
    # a used or unwritable folder is refused before anything is built
    check_run_dir(experiment.run_dir, resume=experiment.resume is not None, overwrite=experiment.overwrite)
    trainer = build_trainer(module, config, env)
    check_state_fits(experiment, trainer)
    prepare_run_dir(experiment.run_dir, run_record(experiment),
                    clear=experiment.resume is None and experiment.overwrite)
    grid_size, num_seeds = len(experiment.grid), experiment.num_seeds
    init_all, update_all = batched_trainer(trainer, grid_size, num_seeds)
    hparams = run_hparams(experiment.grid, num_seeds)
    keys = run_keys(experiment.seed, num_seeds, grid_size)
    placement = place_experiment(module, experiment, trainer, keys, hparams)
    hparams = jax.device_put(hparams, placement.hparams)
    keys = jax.device_put(keys, placement.keys)
    identity = checkpoint_identity(experiment)

    start_update, wall_offset = 0, 0.0
    if experiment.resume is not None:
        checkpoint = resolve_checkpoint(experiment.resume)
        abstract = with_shardings(jax.eval_shape(init_all, keys, hparams), placement.state)
        state, meta = load_checkpoint(checkpoint, abstract, identity)
        start_update, wall_offset = int(meta["update"]), float(meta.get("wall_s", 0.0))
        if primary:
            print(f"resuming {run_dir} from update {start_update} ({checkpoint})", file=sys.stderr)
    else:
        state = jax.jit(init_all, out_shardings=placement.state)(keys, hparams)

    metric_shapes = jax.eval_shape(update_all, state, hparams)[1]
    wandb_run = None
    if primary:
        wandb_mode = resolve_wandb_mode(experiment.wandb)
        wandb_run = start_wandb(wandb_mode, run_dir, run_dir.name,
                                {"algorithm": experiment.algorithm, **to_plain(config)})
    logger = MetricsLogger(
        run_dir, list(metric_shapes), batch_size=config.batch_size, num_updates=config.num_updates,
        num_seeds=num_seeds, grid_size=grid_size, log_every=config.log_every, start_update=start_update,
        wall_offset=wall_offset, progress=experiment.progress, wandb_run=wandb_run, enabled=primary,
    )

    def log_update(updates: np.ndarray, metrics: dict[str, np.ndarray]) -> None:
        # The callback's operands are gathered to device 0, so only process 0 logs (every run).
        logger.on_update(updates[0], metrics)

    def run_chunk(length: int, state: Any, hparams: Any) -> tuple[Any, dict[str, Array]]:
        return scan_updates(update_all, state, hparams, length, log_update)

    snapshots = experiment.snapshot_updates
    lengths = chunk_lengths(start_update, config.num_updates, config.checkpoint_every, snapshots)
    mesh = placement.mesh
    if primary:
        print(f"{experiment.algorithm} on {config.env_id}: {grid_size} grid point(s) x {num_seeds} seed(s), "
              f"{config.num_updates} updates of {config.batch_size} env steps each, on {mesh.size} device(s) "
              f"(runs x envs {mesh.shape['runs']} x {mesh.shape['envs']}, {jax.process_count()} "
              f"process(es)), run folder {run_dir}", file=sys.stderr)
    compile_start = time.perf_counter()
    shardings = {"in_shardings": (placement.state, placement.hparams),
                 "out_shardings": (placement.state, replicated(mesh))}
    executables = {
        length: jax.jit(functools.partial(run_chunk, length), **shardings).lower(state, hparams).compile()
        for length in sorted(set(lengths))
    }
    compile_s = time.perf_counter() - compile_start
    if primary:
        print(f"compiled in {compile_s:.1f} s", file=sys.stderr)
    logger.mark_compute_start()
    train_start = time.perf_counter()

    chunks, update = [], start_update

    def save(state: Any, update: int) -> None:
        with sigint_deferred():
            meta = {**identity, "update": update, "wall_s": logger.wall_s(),
                    "total_timesteps": config.total_timesteps}
            save_checkpoint(run_dir, state, meta, keep_updates=snapshots)

    if 0 in snapshots and start_update == 0:
        save(state, 0)  # the untrained policy: FCP's first partner of every seed
    quiet = _QuietCallbackInterrupts()
    logging.getLogger(JAX_CALLBACK_LOGGER).addFilter(quiet)
    try:
        for length in lengths:
            state, metrics = _run_chunk(executables[length], state, hparams)
            chunks.append(to_host(metrics))
            update += length
            save(state, update)
    finally:
        logging.getLogger(JAX_CALLBACK_LOGGER).removeFilter(quiet)
        logger.close()
    train_s = time.perf_counter() - train_start
    metrics = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]} if chunks else {}
    if primary:
        write_summary(run_dir, run_record(experiment), logger.wall_s())
        if snapshots:
            write_population(run_dir, run_record(experiment), snapshots)
    barrier("run_experiment done")
    return RunResult(run_dir, state, metrics, placement.mesh, compile_s, train_s)


def select_run(state: Any, num_seeds: int, grid_index: int = 0, seed_index: int = 0) -> Any:
    """One run's state out of a ``[grid * seeds, ...]`` state."""
    if not 0 <= seed_index < num_seeds:
        raise ValueError(f"seed_index: must be in [0, {num_seeds - 1}], got {seed_index}")
    index = grid_index * num_seeds + seed_index
    size = jax.tree.leaves(state)[0].shape[0]
    if not 0 <= index < size:
        raise ValueError(f"grid_index: must be in [0, {size // num_seeds - 1}], got {grid_index}")
    return jax.tree.map(lambda x: x[index], state)


def first_run_params(module: ModuleType, result: RunResult, num_seeds: int) -> Any:
    """The policy parameters of grid point 0, seed 0 on the host. Every process calls it (fetching run 0
    from whichever process holds it is collective)."""
    first = jax.jit(lambda s: select_run(s, num_seeds), out_shardings=replicated(result.mesh))
    return module.policy_params(to_host(first(result.state)))


def _run_loader(run_dir: Path) -> tuple[ModuleType, Experiment, Any]:
    """A run folder's baseline module, experiment, and the abstract state its checkpoints load into."""
    from jaxmarl_suite.training.runner.config import experiment_from_run_dir

    experiment = experiment_from_run_dir(run_dir)
    module = baseline_module(experiment.algorithm)
    trainer = build_trainer(module, experiment.config)
    grid_size, num_seeds = len(experiment.grid), experiment.num_seeds
    init_all, _ = batched_trainer(trainer, grid_size, num_seeds)
    keys, hparams = run_keys(experiment.seed, num_seeds, grid_size), run_hparams(experiment.grid, num_seeds)
    placement = place_experiment(module, experiment, trainer, keys, hparams)
    abstract = with_shardings(jax.eval_shape(init_all, keys, hparams), placement.state)
    return module, experiment, abstract


def load_run(run_or_checkpoint: Path) -> tuple[ModuleType, Experiment, Any, dict[str, Any]]:
    """Load a run folder (or one of its checkpoints) for evaluation: ``(module, experiment, state, meta)``."""
    from jaxmarl_suite.training.runner.checkpoint import find_run_dir

    module, experiment, abstract = _run_loader(find_run_dir(Path(run_or_checkpoint)))
    checkpoint = resolve_checkpoint(Path(run_or_checkpoint))
    state, meta = load_checkpoint(checkpoint, abstract, checkpoint_identity(experiment))
    return module, experiment, state, meta


def interrupted_message(experiment: Experiment) -> str:
    """One line for a Ctrl-C: the newest complete checkpoint and the command that resumes from it."""
    from jaxmarl_suite.training.runner.checkpoint import list_checkpoints

    run_dir = experiment.run_dir
    checkpoints = list_checkpoints(run_dir) if run_dir.is_dir() else []
    if not checkpoints:
        return (f"interrupted before the first checkpoint of {run_dir}; nothing to resume. Train again with "
                f"--run-dir {run_dir} --overwrite")
    update = int(checkpoints[-1].name)
    steps = update * experiment.config.batch_size
    return (f"interrupted; last checkpoint {checkpoints[-1]} (update {update}, {steps:,} env steps per run). "
            f"Resume with: jaxmarl-suite train {experiment.algorithm} --resume {run_dir}")


class LoadedPolicy(NamedTuple):
    """One run's trained policy, loaded from a checkpoint."""

    module: ModuleType
    """The baseline module (``make_env``, ``make_policy``)."""
    experiment: Experiment
    params: Any
    """What ``module.make_policy(...).act`` takes."""
    meta: dict[str, Any]
    """The checkpoint's ``meta.json`` (``update``, ``wall_s``, ...)."""


def load_policy(run_or_checkpoint: Path, grid_index: int = 0, seed_index: int = 0) -> LoadedPolicy:
    """The policy of one grid point and seed of a run folder (its newest checkpoint) or a checkpoint
    folder; a checkpoint that does not match the folder's config raises ``CheckpointError``."""
    module, experiment, state, meta = load_run(Path(run_or_checkpoint))
    params = module.policy_params(select_run(state, experiment.num_seeds, grid_index, seed_index))
    return LoadedPolicy(module, experiment, params, meta)


def load_policies(run_or_checkpoint: Path) -> LoadedPolicy:
    """Every run's policy of a run folder (its newest checkpoint) or a checkpoint folder: ``params`` with a
    leading ``[grid * seeds]`` axis, grid point ``g``, seed ``s`` at ``g * num_seeds + s``."""
    module, experiment, state, meta = load_run(Path(run_or_checkpoint))
    return LoadedPolicy(module, experiment, module.policy_params(state), meta)


class Population(NamedTuple):
    """Frozen partner policies out of one run folder (``run_folder.read_population``)."""

    module: ModuleType
    """The baseline module every member was trained with."""
    experiment: Experiment
    members: list[dict[str, Any]]
    """Each member's ``name``, ``grid_index``, ``seed_index``, ``update`` and ``checkpoint``."""
    params: Any
    """What ``module.make_policy(experiment.config, env).act`` takes, stacked on a leading member axis."""
    run_dir: Path


def load_population(run_dir: str | Path) -> Population:
    """The members of a population folder (``jaxmarl-suite population``, or ``train --snapshots``) as one
    stack of policy parameters; a plain run folder's members are its seeds at the newest checkpoint. Bad
    folders and missing snapshots raise ``ConfigError``."""
    from jaxmarl_suite.training.runner.run_folder import read_population

    run_dir = Path(run_dir).resolve()
    members = read_population(run_dir)
    module, experiment, abstract = _run_loader(run_dir)
    identity = checkpoint_identity(experiment)
    loaded: dict[Any, Any] = {}
    params, listed = [], []
    for member in members:
        where = member["checkpoint"]
        if where not in loaded:
            folder = resolve_checkpoint(run_dir if where is None else run_dir / where)
            loaded[where] = load_checkpoint(folder, abstract, identity)
        state, meta = loaded[where]
        params.append(module.policy_params(select_run(state, experiment.num_seeds, member["grid_index"],
                                                      member["seed_index"])))
        listed.append({**member, "update": int(meta["update"])})
    stacked = jax.tree.map(lambda *leaves: jnp.stack([jnp.asarray(x) for x in leaves]), *params)
    return Population(module, experiment, listed, stacked, run_dir)
