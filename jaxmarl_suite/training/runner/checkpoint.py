"""Orbax checkpoints of a whole experiment's runner state, validated before anything is restored.

A checkpoint is ``RUN_DIR/checkpoints/<update>/``: orbax's array store under ``state/`` and our own
``meta.json`` (algorithm, config, grid, seeds, update, wall time, and the shape and dtype of every leaf).
The array store holds the state's leaves by their flat index; empty leaves (an MPE world without a
communication channel has a ``[..., 0, ...]`` one) are left out, because orbax refuses zero-size arrays,
and are rebuilt from ``meta.json`` on load.
Nothing is pickled. Loading compares ``meta.json`` with what the caller expects first, so a checkpoint from
another config, env or grid fails with a message naming the difference instead of an orbax traceback.
Runners once carried the whole last ``TimeStep``, and until 5ee6821 a world state that the observations
rebuild (now only ``kit.envs.observation`` of it); the leaves they still carry kept their paths, so such a
checkpoint loads, its further ``.timestep`` leaves read and dropped.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxmarl_suite.errors import CheckpointError
from jaxmarl_suite.training.runner.run_folder import is_run_dir

CHECKPOINT_DIR = "checkpoints"
"""Sub-folder of a run folder that holds one folder per saved update."""

FORMAT = 2
"""``meta.json``'s ``format``: 2 stores leaves by flat index without the empty ones."""

DROPPED_PREFIX = ".timestep"
"""Where a checkpoint may hold leaves the state does not have: runners before 2026-11-26 carried the whole
last ``TimeStep`` there (rewards, done flags, episode statistics, final observations), and before 5ee6821
``info["world_state"]`` where it is rebuilt now (MAPPO and QMIX on envs without their own, IPPO on SMAX)."""


def leaf_specs(tree: Any) -> list[list[Any]]:
    """``[path, shape, dtype]`` for every leaf of ``tree`` (arrays or ``ShapeDtypeStruct``)."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [[jax.tree_util.keystr(path), list(leaf.shape), str(np.dtype(leaf.dtype))]
            for path, leaf in leaves]


def find_run_dir(path: Path) -> Path:
    """The run folder for ``path``: a run folder, its ``checkpoints/`` folder, or one checkpoint in it."""
    path = Path(path)
    for candidate in (path, path.parent, path.parent.parent):
        if is_run_dir(candidate):
            return candidate
    raise CheckpointError(f"{path} is not inside a run folder (no config.yaml found beside it)")


def list_checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first (a folder without ``meta.json`` never finished)."""
    root = Path(run_dir) / CHECKPOINT_DIR
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and p.name.isdigit() and (p / "meta.json").is_file()]
    return sorted(found, key=lambda p: int(p.name))


def resolve_checkpoint(path: Path) -> Path:
    """``path`` itself when it is a checkpoint, else the newest checkpoint of the run folder holding it."""
    path = Path(path)
    if (path / "meta.json").is_file():
        return path
    checkpoints = list_checkpoints(find_run_dir(path))
    if not checkpoints:
        raise CheckpointError(f"no complete checkpoint under {find_run_dir(path) / CHECKPOINT_DIR}")
    return checkpoints[-1]


def save_checkpoint(run_dir: Path, state: Any, meta: dict[str, Any], keep: int = 3,
                    keep_updates: Sequence[int] = ()) -> Path:
    """Save ``state`` (a pytree of arrays) as ``run_dir/checkpoints/<meta['update']>`` and keep the newest
    ``keep``, and those at ``keep_updates`` (snapshots) for good. ``meta.json`` is written last, so a
    folder without it is an interrupted save.

    In a multi-process run every process calls this with the same global ``state`` and writes its own
    shards (the run folder must be on a filesystem they share); process 0 writes ``meta.json``.
    """
    import orbax.checkpoint as ocp

    from jaxmarl_suite.training.runner.sharding import barrier, is_primary

    folder = Path(run_dir).resolve() / CHECKPOINT_DIR / str(int(meta["update"]))
    if is_primary():
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    barrier(f"checkpoint {folder} prepared")
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(folder / "state", _stored(jax.tree.leaves(state)))
    checkpointer.wait_until_finished()
    checkpointer.close()
    if is_primary():
        meta = {**meta, "format": FORMAT, "leaves": leaf_specs(state)}
        (folder / "meta.json").write_text(json.dumps(meta, indent=1))
        for old in list_checkpoints(run_dir)[:-keep]:
            if int(old.name) not in keep_updates:
                shutil.rmtree(old)
    barrier(f"checkpoint {folder} saved")
    return folder


def _stored(leaves: list[Any]) -> dict[str, Any]:
    """The leaves orbax stores: every non-empty one, keyed by its flat index."""
    return {str(i): leaf for i, leaf in enumerate(leaves) if int(np.prod(leaf.shape)) > 0}


def read_meta(checkpoint: Path) -> dict[str, Any]:
    """A checkpoint's ``meta.json``, with a clear error when it is missing or unreadable."""
    path = Path(checkpoint) / "meta.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError as error:
        raise CheckpointError(f"{checkpoint} is not a complete checkpoint (no meta.json)") from error
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path} is corrupt: {error}") from error
    if not isinstance(meta, dict) or "update" not in meta or "leaves" not in meta:
        raise CheckpointError(f"{path} is corrupt: it lacks 'update' or 'leaves'")
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{checkpoint} was written in checkpoint format {meta.get('format', 1)}; this "
                              f"version of jaxmarl-suite reads format {FORMAT}. Retrain, or load it with "
                              "the version that wrote it")
    return meta


def check_compatible(meta: dict[str, Any], expected: dict[str, Any], checkpoint: Path) -> None:
    """Raise ``CheckpointError`` naming every key of ``expected`` whose value differs in ``meta``."""
    differences = [
        f"{key}: checkpoint has {meta.get(key)!r}, this run has {value!r}"
        for key, value in expected.items()
        if meta.get(key) != value
    ]
    if differences:
        raise CheckpointError(
            f"checkpoint {checkpoint} was saved by a different experiment:\n  " + "\n  ".join(differences)
        )


def load_checkpoint(checkpoint: Path, abstract_state: Any, expected: dict[str, Any]) -> tuple[Any, dict]:
    """Restore a state shaped like ``abstract_state`` after checking ``meta.json`` against ``expected``
    and every leaf's path, shape and dtype. A checkpoint whose only extra leaves are under
    ``DROPPED_PREFIX`` (an older runner's) loads too, and so does one whose feed-forward nets carried a
    width-1 recurrent state (``_feed_forward_state``). Returns ``(state, meta)``."""
    import orbax.checkpoint as ocp

    checkpoint = Path(checkpoint).resolve()
    meta = read_meta(checkpoint)
    check_compatible(meta, expected, checkpoint)
    wanted, saved = leaf_specs(abstract_state), meta["leaves"]
    saved_at = {spec[0]: i for i, spec in enumerate(saved)}
    wanted_paths = {spec[0] for spec in wanted}
    dropped_state = {w[0] for w in wanted
                     if w[0] in saved_at and _feed_forward_state(w, saved[saved_at[w[0]]])}
    mismatch = [(w, saved[saved_at[w[0]]] if w[0] in saved_at else None) for w in wanted
                if w[0] not in dropped_state and (w[0] not in saved_at or saved[saved_at[w[0]]] != w)]
    mismatch += [(None, x) for x in saved if x[0] not in wanted_paths and not x[0].startswith(DROPPED_PREFIX)]
    if mismatch:
        raise CheckpointError(
            f"checkpoint {checkpoint} holds a differently shaped state; first mismatches "
            f"(path, shape, dtype) wanted vs saved: " + "; ".join(f"{w} vs {x}" for w, x in mismatch[:3])
        )
    leaves, treedef = jax.tree.flatten(abstract_state)
    # Restore every saved leaf (orbax checks the store against the target), the wanted ones where the
    # state asks; an older runner's extra leaves come back as host arrays and are dropped.
    target: list[Any] = [jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype)) for _, shape, dtype in saved]
    for spec, leaf in zip(wanted, leaves, strict=True):
        if spec[0] not in dropped_state:  # an older feed-forward state is read as saved, then dropped
            target[saved_at[spec[0]]] = leaf
    checkpointer = ocp.StandardCheckpointer()
    try:
        stored = checkpointer.restore(checkpoint / "state", _stored(target))
    except Exception as error:  # orbax raises many types for damaged files; name the file instead
        raise CheckpointError(f"checkpoint {checkpoint} could not be read (corrupt or incomplete): "
                              f"{type(error).__name__}: {str(error).splitlines()[0][:300]}") from error
    finally:
        checkpointer.close()
    restored = [None if spec[0] in dropped_state else stored.get(str(saved_at[spec[0]]))
                for spec in wanted]  # None: an empty leaf (not stored), or an older feed-forward state
    restored = [_empty(leaf) if x is None else x for x, leaf in zip(restored, leaves, strict=True)]
    return jax.tree.unflatten(treedef, restored), meta


def _feed_forward_state(wanted: list[Any], saved: list[Any]) -> bool:
    """Whether a saved leaf is the width-1 recurrent state that feed-forward nets carried before they
    carried none (a ``hidden`` leaf of width 1 where the state now has width 0, same path and dtype): it
    holds zeros no network read, so it is dropped on load."""
    (path, shape, dtype), (_, saved_shape, saved_dtype) = wanted, saved
    return ("hidden" in path and dtype == saved_dtype and len(shape) == len(saved_shape) >= 1
            and shape[-1] == 0 and saved_shape[-1] == 1 and shape[:-1] == saved_shape[:-1])


def _empty(leaf: Any) -> Any:
    """A zero-size leaf, placed where the abstract leaf asks (it holds no data, so nothing was saved)."""
    value = np.zeros(leaf.shape, leaf.dtype)
    sharding = getattr(leaf, "sharding", None)
    return jax.device_put(value, sharding) if sharding is not None else jax.numpy.asarray(value)
