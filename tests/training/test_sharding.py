"""Device sharding and multi-process runs give the same results as one device in one process.

The sharded runs need several devices, which XLA's CPU backend only fakes when ``XLA_FLAGS`` is set before
JAX starts, so each configuration runs the real CLI in a subprocess and the tests compare the run folders.
"""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import pytest

from jaxmarl_suite.training.runner.config import ConfigError, baseline_module, parse_experiment
from jaxmarl_suite.training.runner.experiment import place_experiment, run_hparams, run_keys
from jaxmarl_suite.training.runner.sharding import Distributed, make_mesh, mesh_shape

TINY = ["--env", "MPE_simple_spread_v3", "--num-envs", "16", "--num-steps", "16", "--total-timesteps", "2048",
        "--update-epochs", "2", "--num-minibatches", "2", "--log-every", "1", "--checkpoint-every", "4",
        "--no-progress", "--wandb", "disabled"]
COMPARED = ("update", "env_steps", "seed", "grid_index", "return_mean", "episode_length", "total_loss",
            "value_loss", "actor_loss", "entropy", "approx_kl")


GRID = ("--seeds", "2", "--lr", "0.001", "0.002")
"""4 runs: on 8 devices a mesh of 4 runs x 2 env shards, so both axes are split (``mesh_shape``)."""

TINY_QMIX = ["--env", "MPE_simple_spread_v3", "--num-envs", "4", "--num-steps", "25",
             "--total-timesteps", "600", "--buffer-size", "16", "--buffer-batch-size", "4",
             "--learning-starts", "100",
             "--target-update-interval", "2", "--log-every", "1", "--checkpoint-every", "3", "--no-progress",
             "--wandb", "disabled"]
COMPARED_Q = ("update", "env_steps", "seed", "grid_index", "return_mean", "greedy_return_mean", "td_loss",
              "q_taken")


def train(run_dir: Path, devices: int, *flags: str, distributed: tuple[str, int, int] | None = None,
          background: bool = False, algorithm: str = "ippo") -> subprocess.Popen[str] | str:
    """``jaxmarl-suite train ALGORITHM`` (its tiny settings) in a fresh interpreter with ``devices`` fake
    CPU devices: its output, or with ``background`` the running process."""
    # the default selection's fast-compile flags (tests/conftest.py) stay; the device count is added
    xla_flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    env = {**os.environ, "XLA_FLAGS": xla_flags,
           "JAX_PLATFORMS": "cpu", "WANDB_MODE": "disabled"}
    tiny = TINY_QMIX if algorithm == "qmix" else TINY
    argv = [sys.executable, "-m", "jaxmarl_suite.cli", "train", algorithm, *tiny, *flags,
            "--run-dir", str(run_dir)]
    if distributed is not None:
        coordinator, count, index = distributed
        argv += ["--coordinator", coordinator, "--num-processes", str(count), "--process-id", str(index)]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if background:
        return process
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output[-3000:]
    return output


def metrics(run_dir: Path, columns: tuple[str, ...] = COMPARED) -> np.ndarray:
    with (run_dir / "metrics.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return np.array([[float(row[c]) for c in columns] for row in rows])


def assert_same_metrics(a: Path, b: Path, columns: tuple[str, ...] = COMPARED) -> None:
    """Counters exactly; metrics to float rounding. A device that vmaps over fewer runs, or over part of an
    env batch, gets other XLA fusions and summation orders: on CPU returns, value losses and entropies came
    out identical, while the actor loss (a mean of nearly cancelling terms, ~1e-3) moved by ~1e-7."""
    x, y = metrics(a, columns), metrics(b, columns)
    assert x.shape == y.shape and x.shape[0] > 0
    np.testing.assert_array_equal(x[:, :4], y[:, :4])  # update, env_steps, seed, grid_index
    np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-6)


@pytest.fixture(scope="module")
def unsharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One device: 2 learning rates x 2 seeds."""
    run_dir = tmp_path_factory.mktemp("one_device") / "grid"
    train(run_dir, 1, *GRID)
    return run_dir


def test_mesh_shape_prefers_runs_then_env_batch() -> None:
    assert mesh_shape(8, 16, 8) == (8, 1)     # one run per device, no communication
    assert mesh_shape(2, 16, 8) == (2, 4)     # the rest of the devices split each run's env batch
    assert mesh_shape(1, 16, 8) == (1, 8)
    assert mesh_shape(3, 16, 8) == (1, 8)
    assert mesh_shape(4, 6, 8) == (4, 2)
    assert mesh_shape(1, 5, 8) == (1, 1)      # nothing divides: one device does the work
    assert mesh_shape(6, 16, 1) == (1, 1)     # one device: a no-op


def test_one_device_is_a_no_op() -> None:
    module = baseline_module("ippo")
    experiment = parse_experiment("ippo", module.Config, module.HParams, [*TINY, "--seeds", "2"])
    keys, hparams = run_keys(0, 2, 1), run_hparams(experiment.grid, 2)
    trainer = module.make_trainer(experiment.config, module.make_env(experiment.config))
    placement = place_experiment(module, experiment, trainer, keys, hparams)
    assert placement.mesh.size == 1
    assert all(s.is_fully_replicated for s in jax.tree.leaves(placement.state))


def test_a_mesh_that_would_idle_a_process_is_refused() -> None:
    devices = [SimpleNamespace(id=i, process_index=i // 2) for i in range(4)]  # 2 processes x 2 devices
    with pytest.raises(ConfigError, match="process"):
        make_mesh(3, 5, devices)  # 3 runs of 5 envs fit on one device only


@pytest.mark.parametrize("flags", [["--num-processes", "2"], ["--process-id", "0"]])
def test_distributed_flags_need_a_coordinator(flags: list[str], tmp_path: Path) -> None:
    module = baseline_module("ippo")
    with pytest.raises(ConfigError, match="coordinator"):
        parse_experiment("ippo", module.Config, module.HParams, [*TINY, *flags, "--run-dir", str(tmp_path)])


@pytest.mark.parametrize(("spec", "field"), [
    (Distributed("localhost"), "coordinator"),
    (Distributed("localhost:x", 2, 0), "coordinator"),
    (Distributed("localhost:1234", 0, 0), "num_processes"),
    (Distributed("localhost:1234", 2, 2), "process_id"),
])
def test_bad_distributed_settings_name_the_flag(spec: Distributed, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        spec.validate()


def test_multi_process_run_needs_a_shared_run_dir() -> None:
    module = baseline_module("ippo")
    argv = [*TINY, "--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "0"]
    with pytest.raises(ConfigError, match="run-dir"):
        parse_experiment("ippo", module.Config, module.HParams, argv)


def test_runs_and_env_batch_sharded_over_8_devices_equal_one_device(unsharded: Path, tmp_path: Path) -> None:
    """4 runs on 8 devices: each run on 2 devices, its 16 envs split between them (so the losses' and the
    metrics' sums over the env batch cross devices), as one device trains all 4."""
    assert mesh_shape(4, 16, 8) == (4, 2)
    output = train(tmp_path / "run", 8, *GRID)
    assert "runs x envs 4 x 2" in output
    assert_same_metrics(unsharded, tmp_path / "run")
    # A checkpoint written from 8 devices loads into a process with one.
    from jaxmarl_suite.cli import main

    assert main(["eval", str(tmp_path / "run"), "--episodes", "4"]) == 0


@pytest.mark.slow  # two subprocess runs (about 40 s); the PPO tests above cover the sharding code by default
def test_qmix_grid_and_seeds_sharded_over_4_devices_equal_one_device(tmp_path: Path) -> None:
    """The replay learner's runs (each with its own flashbax buffer and target net) split over devices as
    PPO's do: 2 learning rates x 2 seeds on 4 devices, one run each, against all 4 on one device."""
    flags = ("--seeds", "2", "--lr", "0.001", "0.002")
    train(tmp_path / "one", 1, *flags, algorithm="qmix")
    train(tmp_path / "four", 4, *flags, algorithm="qmix")
    one = metrics(tmp_path / "one", COMPARED_Q)
    assert one.shape[0] == 4 * 6 and np.isfinite(one[:, -2]).sum() > 0  # 6 updates x 4 runs; learning began
    assert_same_metrics(tmp_path / "one", tmp_path / "four", COMPARED_Q)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def train_two_processes(run_dir: Path, *flags: str) -> list[str]:
    """Launch processes 0 and 1 of one run on 127.0.0.1 and return their outputs once both succeed."""
    coordinator = f"127.0.0.1:{free_port()}"
    processes = [train(run_dir, 1, *flags, background=True, distributed=(coordinator, 2, index))
                 for index in range(2)]
    outputs = []
    for process in processes:
        assert isinstance(process, subprocess.Popen)
        try:
            outputs.append(process.communicate(timeout=600)[0])
        finally:
            process.kill()
    for process, output in zip(processes, outputs, strict=True):
        assert isinstance(process, subprocess.Popen) and process.returncode == 0, output[-3000:]
    return outputs


@pytest.mark.slow  # two jax.distributed processes: about 50 s of the default suite's 15-minute budget
def test_two_processes_split_the_grid_and_match_one_process(unsharded: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    outputs = train_two_processes(run_dir, *GRID)
    assert "2 process(es)" in outputs[0]
    assert_same_metrics(unsharded, run_dir)  # process 0 wrote every run's rows
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["4", "8"]
    assert all((run_dir / "checkpoints" / u / "meta.json").is_file() for u in ("4", "8"))

    # As if both processes died during updates 5..8: resuming from update 4 restores each process's
    # shards and ends where the uninterrupted run did.
    shutil.rmtree(run_dir / "checkpoints" / "8")
    outputs = train_two_processes(run_dir, "--resume", str(run_dir))
    assert "from update 4" in outputs[0]
    assert_same_metrics(unsharded, run_dir)
