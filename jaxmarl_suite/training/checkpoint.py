"""Orbax checkpoints of a whole experiment's runner state, validated before anything is restored.

A checkpoint is ``RUN_DIR/checkpoints/<update>/``: orbax's array store under ``state/`` and our own
``meta.json`` (algorithm, config, grid, seeds, update, wall time, and the shape and dtype of every leaf).
Nothing is pickled. Loading compares ``meta.json`` with what the caller expects first, so a checkpoint from
another config, env or grid fails with a message naming the difference instead of an orbax traceback.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jax
import numpy as np

CHECKPOINT_DIR = "checkpoints"
"""Sub-folder of a run folder that holds one folder per saved update."""


class CheckpointError(ValueError):
    """A checkpoint is missing, corrupt, or does not belong to the run asking for it."""


def leaf_specs(tree: Any) -> list[list[Any]]:
    """``[path, shape, dtype]`` for every leaf of ``tree`` (arrays or ``ShapeDtypeStruct``)."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [[jax.tree_util.keystr(path), list(leaf.shape), str(np.dtype(leaf.dtype))]
            for path, leaf in leaves]


def find_run_dir(path: Path) -> Path:
    """The run folder for ``path``: a run folder, its ``checkpoints/`` folder, or one checkpoint in it."""
    path = Path(path)
    for candidate in (path, path.parent, path.parent.parent):
        if (candidate / "config.yaml").is_file():
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


def save_checkpoint(run_dir: Path, state: Any, meta: dict[str, Any], keep: int = 3) -> Path:
    """Save ``state`` (a pytree of arrays) as ``run_dir/checkpoints/<meta['update']>`` and keep the newest
    ``keep``. ``meta.json`` is written last, so a folder without it is an interrupted save.

    In a multi-process run every process calls this with the same global ``state`` and writes its own
    shards (the run folder must be on a filesystem they share); process 0 writes ``meta.json``.
    """
    import orbax.checkpoint as ocp

    from jaxmarl_suite.training.sharding import barrier, is_primary

    folder = Path(run_dir).resolve() / CHECKPOINT_DIR / str(int(meta["update"]))
    if is_primary():
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    barrier(f"checkpoint {folder} prepared")
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(folder / "state", state)
    checkpointer.wait_until_finished()
    checkpointer.close()
    if is_primary():
        (folder / "meta.json").write_text(json.dumps({**meta, "leaves": leaf_specs(state)}, indent=1))
        for old in list_checkpoints(run_dir)[:-keep]:
            shutil.rmtree(old)
    barrier(f"checkpoint {folder} saved")
    return folder


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
    and every leaf's path, shape and dtype. Returns ``(state, meta)``."""
    import orbax.checkpoint as ocp

    checkpoint = Path(checkpoint).resolve()
    meta = read_meta(checkpoint)
    check_compatible(meta, expected, checkpoint)
    wanted = leaf_specs(abstract_state)
    if meta["leaves"] != wanted:
        saved = {tuple(x[:1]): x for x in meta["leaves"]}
        mismatch = [w for w in wanted if saved.get(tuple(w[:1])) != w][:3]
        raise CheckpointError(
            f"checkpoint {checkpoint} holds a differently shaped state; first mismatches "
            f"(path, shape, dtype) wanted vs saved: "
            + "; ".join(f"{w} vs {saved.get(tuple(w[:1]))}" for w in mismatch)
        )
    checkpointer = ocp.StandardCheckpointer()
    try:
        state = checkpointer.restore(checkpoint / "state", abstract_state)
    except Exception as error:  # orbax raises many types for damaged files; name the file instead
        raise CheckpointError(f"checkpoint {checkpoint} could not be read (corrupt or incomplete): "
                              f"{type(error).__name__}: {str(error).splitlines()[0][:300]}") from error
    finally:
        checkpointer.close()
    return state, meta
