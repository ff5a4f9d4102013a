"""The run folder, in one module: where a run's folder goes, the checks before a run writes to it, and
the files the runner writes there for the other tools (plots, reports, ``eval``, ``render``, sweeps).

A run folder holds ``config.yaml`` (the run record: algorithm, preset, seeds, config, grid),
``metrics.csv`` (one row per logged update, seed and grid point; ``logger``), ``summary.json`` (each
run's final score, ``final_score``) and ``checkpoints/<update>/`` (``checkpoint``). Two runs never share
a folder: a fresh run's must be new, empty, or an earlier run that ``--overwrite`` clears.

The functions take paths and plain values (the run record is ``config.run_record(experiment)``), so the
config layer builds on this module; a trained policy is loaded from a folder by
``experiment.load_policy``, which rebuilds the trainer to restore the checkpoint into.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.training.runner.logger import (
    FINAL_FRACTION,
    final_score,
    headline_metrics,
    read_metrics,
)
from jaxmarl_suite.training.runner.sharding import barrier, is_primary

__all__ = ["CONFIG_FILE", "FINAL_FRACTION", "SUMMARY_FILE", "SUMMARY_METRICS", "check_run_dir",
           "clear_run_dir", "default_run_dir", "final_score", "headline_metrics", "is_finished", "is_run_dir",
           "prepare_run_dir",
           "read_metrics", "read_run_config", "read_summary", "write_run_config", "write_summary"]

CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
RECORD_KEYS = ("algorithm", "config", "grid", "num_seeds", "seed")
"""What every ``config.yaml`` holds (and ``preset``, None for none)."""


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is a run folder: it holds ``config.yaml``."""
    return (Path(path) / CONFIG_FILE).is_file()


def is_finished(run_dir: Path) -> bool:
    """Whether the run in ``run_dir`` finished: the runner writes ``summary.json`` last."""
    return (Path(run_dir) / SUMMARY_FILE).is_file()


def default_run_dir(algorithm: str, env_id: str) -> Path:
    """``runs/<algorithm>_<env>_<YYYYmmdd-HHMMSS>``."""
    return Path("runs") / f"{algorithm}_{env_id}_{time.strftime('%Y%m%d-%H%M%S')}"


def check_run_dir(run_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """Before anything is built or written: a fresh run's folder must be new or empty, or hold an earlier
    run that ``overwrite`` may clear (so an earlier run's checkpoints never outlive its config and metrics
    and become what ``eval`` loads), and must be writable. Raises ``ConfigError`` naming the ways on.
    Every process checks the shared folder before process 0 changes it."""
    if not resume and run_dir.exists():
        if not run_dir.is_dir():
            raise ConfigError(f"run_dir: {run_dir} exists and is not a folder")
        if any(run_dir.iterdir()):
            if not is_run_dir(run_dir):
                raise ConfigError(f"run_dir: {run_dir} is not empty and holds no jaxmarl-suite run; give a "
                                  "new or empty --run-dir (--overwrite only clears an earlier run's folder)")
            if not overwrite:
                raise ConfigError(
                    f"run_dir: {run_dir} already holds a run. Continue it with --resume {run_dir}, train "
                    f"into another --run-dir, or pass --overwrite to delete the earlier run and start again "
                    f"there")
    # Nothing is created yet, so a config that then fails to build its env leaves no folder behind.
    existing = Path(run_dir).absolute()
    while not existing.exists():
        existing = existing.parent
    problem = None
    if not existing.is_dir():
        problem = "Not a directory"
    elif not os.access(existing, os.W_OK | os.X_OK):
        problem = "Permission denied"
    if problem is not None:
        raise ConfigError(f"run_dir: cannot write to {run_dir}: {problem}")
    barrier("run folder checked")


def prepare_run_dir(run_dir: Path, record: dict[str, Any], *, clear: bool) -> None:
    """After ``check_run_dir``, on process 0: create the folder, clear an earlier run's files (``clear``,
    from ``--overwrite``) and write the run record as ``config.yaml``."""
    if is_primary():
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"run_dir: cannot write to {run_dir}: {error.strerror or error}") from None
        if clear:
            clear_run_dir(run_dir)
        # A resume rewrites it too: a raised --total-timesteps is what a later --resume continues to.
        write_run_config(run_dir, record)
    barrier("run folder ready")


def clear_run_dir(run_dir: Path) -> None:
    """Delete an earlier run's files from ``run_dir`` (``check_run_dir`` has made sure it is a run)."""
    for entry in Path(run_dir).iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def write_run_config(run_dir: Path, record: dict[str, Any]) -> Path:
    """Write the run record (``config.run_record``) as ``config.yaml``."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    path = Path(run_dir) / CONFIG_FILE
    path.write_text(yaml.safe_dump(record, sort_keys=False))
    return path


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """Read a run folder's ``config.yaml``, with a clear error when it is missing or malformed."""
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"run folder {run_dir} has no {CONFIG_FILE}; is it a jaxmarl-suite run?")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {error}") from error
    if not isinstance(data, dict) or not set(RECORD_KEYS) <= set(data):
        raise ConfigError(f"{path} must hold {sorted(RECORD_KEYS)}")
    return data


SUMMARY_METRICS = ("return_mean", "win_rate", "greedy_return_mean", "greedy_win_rate")
"""What ``summary.json`` scores: the return, the win rate where the env reports wins, and the same for the
greedy episodes of the value-based baselines (the envs that act with epsilon 0). Its headline,
``final_score`` (and ``final_win_score``), is that of ``score_metric``, the evaluation policy's column
(``logger.headline_metrics``)."""


def write_summary(run_dir: Path, record: dict[str, Any], wall_s: float) -> Path:
    """``summary.json``: each grid point's and seed's final score (``final_score`` of each of
    ``SUMMARY_METRICS`` the run logs), computed from the whole ``metrics.csv`` so that a resumed
    run's summary equals the uninterrupted run's; and the wall time. ``record`` is the run record."""
    rows = read_metrics(run_dir) if (Path(run_dir) / "metrics.csv").is_file() else []
    grid_size, num_seeds = len(record["grid"]), int(record["num_seeds"])

    def finals(name: str) -> list[list[float | None]]:
        table = []
        for g in range(grid_size):
            table.append([])
            for s in range(num_seeds):
                mine = sorted((r for r in rows if r["grid_index"] == g and r["seed"] == s),
                              key=lambda r: r["update"])
                score = final_score([r.get(name, math.nan) for r in mine]) if mine else math.nan
                table[-1].append(None if math.isnan(score) else score)  # JSON has no NaN
        return table

    final: dict[str, Any] = {}
    for name in SUMMARY_METRICS:
        if rows and name in rows[0]:
            final[f"final_{name}"] = finals(name)
    score, wins = headline_metrics(rows)
    final["score_metric"] = score
    final["final_score"] = finals(score) if rows else []
    if rows and wins in rows[0]:
        final["final_win_score"] = finals(wins)
    summary = {"algorithm": record["algorithm"], "env_id": record["config"]["env_id"],
               "grid": record["grid"], "num_seeds": num_seeds,
               "final_fraction": FINAL_FRACTION, "updates_logged": len({r["update"] for r in rows}),
               "wall_s": round(wall_s, 3), **final}
    path = Path(run_dir) / SUMMARY_FILE
    path.write_text(json.dumps(summary, indent=1))
    return path


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    """``summary.json`` of a finished run, or None while the run has not finished."""
    return json.loads((Path(run_dir) / SUMMARY_FILE).read_text()) if is_finished(run_dir) else None


POPULATION_FILE = "population.json"


def population_members(record: dict[str, Any], snapshots: Sequence[int]) -> list[dict[str, Any]]:
    """Every (grid point, seed, snapshot update) of a run as a population member: its ``name``
    (``g0s1u50``), the ``checkpoint`` folder relative to the run folder, and its indices."""
    grid_size, num_seeds = len(record["grid"]), int(record["num_seeds"])
    return [{"name": f"g{g}s{s}u{u}", "checkpoint": f"checkpoints/{u}", "grid_index": g, "seed_index": s,
             "update": int(u)}
            for g in range(grid_size) for s in range(num_seeds) for u in snapshots]


def write_population(run_dir: Path, record: dict[str, Any], snapshots: Sequence[int]) -> Path:
    """``population.json``: the run's members (``population_members``) with the algorithm and env, written
    once the run has finished and every snapshot exists."""
    config = record["config"]
    data = {"algorithm": record["algorithm"], "env_id": config.get("env_id"),
            "env_kwargs": config.get("env_kwargs") or {}, "snapshots": [int(u) for u in snapshots],
            "members": population_members(record, snapshots)}
    path = Path(run_dir) / POPULATION_FILE
    path.write_text(json.dumps(data, indent=1))
    return path


def read_population(path: Path) -> list[dict[str, Any]]:
    """The members of a population: a run folder's ``population.json`` when it has one, otherwise every grid
    point and seed of the run at its newest checkpoint (``checkpoint`` None). Raises ``ConfigError`` when
    ``path`` is not a run folder, or a listed snapshot is missing."""
    run_dir = Path(path)
    if not is_run_dir(run_dir):
        raise ConfigError(f"partners: {run_dir} is not a run folder (it has no {CONFIG_FILE}); give a folder "
                          "written by `jaxmarl-suite population` or `train`")
    listing = run_dir / POPULATION_FILE
    if not listing.is_file():
        record = read_run_config(run_dir)
        return [{**member, "name": member["name"][:member["name"].index("u")], "checkpoint": None,
                 "update": None} for member in population_members(record, [0])]
    try:
        data = json.loads(listing.read_text())
        members = list(data["members"])
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"partners: {listing} is not a valid population listing: {error}") from None
    for member in members:
        folder = run_dir / str(member.get("checkpoint"))
        if not (folder / "meta.json").is_file():
            raise ConfigError(f"partners: member {member.get('name')} of {run_dir} lists {folder}, which is "
                              "not a complete checkpoint (was the population cut short or edited?)")
    return members
