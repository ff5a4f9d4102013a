"""Populations of partners: ``train --snapshots`` / ``jaxmarl-suite population`` keep checkpoints at stated
points of training for good and list every seed's in ``population.json``; ``load_population`` stacks the
members' policies; a resumed run keeps its snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxmarl_suite.baselines import ippo
from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.training.runner.checkpoint import list_checkpoints
from jaxmarl_suite.training.runner.config import parse_experiment, parse_snapshots, snapshot_updates
from jaxmarl_suite.training.runner.experiment import (
    build_trainer,
    chunk_lengths,
    load_policy,
    load_population,
    run_experiment,
    run_keys,
)
from jaxmarl_suite.training.runner.run_folder import read_population

TINY = ["--env", "MatrixGame", "--num-envs", "4", "--num-steps", "8", "--num-minibatches", "2",
        "--update-epochs", "1", "--hidden-sizes", "[8]", "--wandb", "disabled", "--no-progress",
        "--artifacts", "none"]
"""32 env steps per update."""


def test_chunks_cut_at_snapshots_and_checkpoints() -> None:
    # 10 updates, a checkpoint every 4, snapshots at 0, 5 and 10: compiled calls end at 4, 5, 8 and 10
    assert chunk_lengths(0, 10, 4, (0, 5, 10)) == [4, 1, 3, 2]
    assert chunk_lengths(0, 10, 0, (5,)) == [5, 5]
    assert chunk_lengths(6, 10, 4, (0, 5, 10)) == [2, 2]  # a resumed run cuts where the fresh one did
    assert chunk_lengths(0, 10, 0) == [10]
    assert chunk_lengths(10, 10, 4, (10,)) == []


def test_snapshots_are_fractions_of_training() -> None:
    assert parse_snapshots("0,0.5,1") == (0.0, 0.5, 1.0)
    assert parse_snapshots("1 0.5 0.5") == (0.5, 1.0)
    assert parse_snapshots(None) == ()
    assert snapshot_updates((0.0, 0.5, 1.0), 7) == (0, 4, 7)  # round half to even: 3.5 -> 4
    for bad in ("0,2", "-0.1", "half"):
        with pytest.raises(ConfigError, match="snapshots"):
            parse_snapshots(bad)


@pytest.fixture(scope="module")
def population(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``jaxmarl-suite population ippo``: 2 seeds x 8 updates, a checkpoint every update (so the newest-3
    rule deletes), default snapshots 0, 0.5 and 1."""
    run_dir = tmp_path_factory.mktemp("pop") / "population"
    code = cli_main(["population", "ippo", *TINY, "--seeds", "2", "--total-timesteps", "256",
                     "--checkpoint-every", "1", "--run-dir", str(run_dir)])
    assert code == 0
    return run_dir


def test_population_keeps_its_snapshots_and_lists_every_seed(population: Path) -> None:
    kept = [int(p.name) for p in list_checkpoints(population)]
    assert kept == [0, 4, 6, 7, 8]  # snapshots 0, 4, 8 for good; 6 and 7 are the newest three with 8
    listing = json.loads((population / "population.json").read_text())
    assert listing["algorithm"] == "ippo" and listing["env_id"] == "MatrixGame"
    assert listing["snapshots"] == [0, 4, 8]
    names = [m["name"] for m in listing["members"]]
    assert names == ["g0s0u0", "g0s0u4", "g0s0u8", "g0s1u0", "g0s1u4", "g0s1u8"]


def test_loaded_members_are_the_seeds_policies_at_each_snapshot(population: Path) -> None:
    loaded = load_population(population)
    assert [m["update"] for m in loaded.members] == [0, 4, 8, 0, 4, 8]
    leaves = jax.tree.leaves(loaded.params)
    assert all(leaf.shape[0] == 6 for leaf in leaves)
    for index, member in enumerate(loaded.members):
        expected = load_policy(population / member["checkpoint"], member["grid_index"], member["seed_index"])
        for got, want in zip(jax.tree.leaves(loaded.params), jax.tree.leaves(expected.params), strict=True):
            np.testing.assert_array_equal(np.asarray(got[index]), np.asarray(want))
    # the update-0 member is the untrained policy: what init draws from the seed's key
    trainer = build_trainer(ippo, loaded.experiment.config)
    keys = run_keys(loaded.experiment.seed, 2, 1)
    for seed_index in (0, 1):
        init = ippo.policy_params(trainer.init(keys[seed_index], loaded.experiment.grid[0]))
        index = [m["name"] for m in loaded.members].index(f"g0s{seed_index}u0")
        for got, want in zip(jax.tree.leaves(loaded.params), jax.tree.leaves(init), strict=True):
            np.testing.assert_allclose(np.asarray(got[index]), np.asarray(want), rtol=1e-6)
    # and the seeds differ, and training moved them
    first = max(jax.tree.leaves(loaded.params), key=lambda leaf: leaf.size)  # a kernel, not a zero bias
    assert not np.allclose(first[0], first[3]) and not np.allclose(first[0], first[2])


def test_a_plain_run_folder_is_a_population_of_its_final_seeds(population: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams,
                                          [*TINY, "--seeds", "2", "--total-timesteps", "64", "--run-dir",
                                           str(plain)]))
    members = read_population(plain)
    assert [(m["name"], m["checkpoint"]) for m in members] == [("g0s0", None), ("g0s1", None)]
    assert [m["update"] for m in load_population(plain).members] == [2, 2]


def test_bad_populations_are_refused(population: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a run folder"):
        read_population(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.yaml", "population.json"):
        (broken / name).write_text((population / name).read_text())
    with pytest.raises(ConfigError, match="not a complete checkpoint"):
        read_population(broken)


def test_resume_keeps_the_snapshots_and_refuses_new_ones(tmp_path: Path) -> None:
    run_dir = tmp_path / "resumed"
    flags = [*TINY, "--total-timesteps", "128", "--snapshots", "0,1", "--run-dir", str(run_dir)]
    first = parse_experiment("ippo", ippo.Config, ippo.HParams, flags)
    run_experiment(ippo, first)
    assert [int(p.name) for p in list_checkpoints(run_dir)] == [0, 4]
    flags = [*TINY, "--resume", str(run_dir), "--total-timesteps", "256", "--extend", "hold"]
    resumed = parse_experiment("ippo", ippo.Config, ippo.HParams, flags)
    assert resumed.snapshots == (0.0, 1.0)
    run_experiment(ippo, resumed)
    # snapshots are fractions of the (raised) run: 0 and 8; update 4 stays as one of the newest three
    assert [int(p.name) for p in list_checkpoints(run_dir)] == [0, 4, 8]
    assert json.loads((run_dir / "population.json").read_text())["snapshots"] == [0, 8]
    with pytest.raises(ConfigError, match="snapshots"):
        parse_experiment("ippo", ippo.Config, ippo.HParams,
                         [*TINY, "--resume", str(run_dir), "--snapshots", "0.5"])
