"""Running JaxMARL's baseline scripts beside ours, in one process: the one loader and the one stdout guard
that every comparison script (``scripts/bench_train.py``, ``ippo_curves.py``, ``q_curves.py``,
``mamujoco_curves.py``, ``run_jaxmarl_baselines.py``) and ``jaxmarl_suite.bench`` use.

JaxMARL's baselines are not in its pip package: a user clones FLAIROx/JaxMARL and passes a script's path.
The scripts import ``hydra``, ``omegaconf`` and ``wandb`` at module level and print on import and while
tracing; ``import_jaxmarl_script`` imports one with those three stubbed (so neither its command line nor
wandb runs, and nothing reaches the network) and its prints sent to stderr, so a report on stdout stays
clean.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send what is printed inside the block to stderr: Python's ``sys.stdout`` (also where a test has
    replaced it) and file descriptor 1 (JaxMARL's imports print from C and reset ``sys.stdout`` themselves).
    Where there is no real descriptor 1 (some notebooks) only ``sys.stdout`` is redirected."""
    with contextlib.redirect_stdout(sys.stderr):
        try:
            if sys.__stdout__:
                sys.__stdout__.flush()
            saved = os.dup(1)
            os.dup2(2, 1)
        except (OSError, ValueError, AttributeError):
            yield
            return
        try:
            yield
        finally:
            if sys.__stdout__:
                sys.__stdout__.flush()
            os.dup2(saved, 1)
            os.close(saved)


def _stubs(wandb_log: Callable[..., None] | None) -> dict[str, types.ModuleType]:
    """Stand-ins for the modules JaxMARL's scripts import but a side-by-side run must not use."""
    hydra = types.ModuleType("hydra")
    hydra.main = lambda *args, **kwargs: (lambda function: function)  # type: ignore[attr-defined]
    omegaconf = types.ModuleType("omegaconf")
    omegaconf.OmegaConf = type("OmegaConf", (), {})  # type: ignore[attr-defined]
    wandb = types.ModuleType("wandb")
    wandb.log = wandb_log or (lambda *args, **kwargs: None)  # type: ignore[attr-defined]
    wandb.init = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    stubs = {"hydra": hydra, "omegaconf": omegaconf, "wandb": wandb}
    try:
        import matplotlib.pyplot  # noqa: F401  (JaxMARL imports it; stub it only when it is missing)
    except ImportError:
        matplotlib = types.ModuleType("matplotlib")
        matplotlib.pyplot = types.ModuleType("matplotlib.pyplot")  # type: ignore[attr-defined]
        stubs |= {"matplotlib": matplotlib, "matplotlib.pyplot": matplotlib.pyplot}  # type: ignore[attr-defined]
    return stubs


def import_jaxmarl_script(path: str | os.PathLike[str], *, module_name: str | None = None,
                          wandb_log: Callable[..., None] | None = None, stub: bool = True,
                          register: bool = False) -> types.ModuleType:
    """Import one of JaxMARL's baseline scripts as a module (its ``__main__`` block does not run).

    With ``stub`` (the default) ``hydra``, ``omegaconf`` and ``wandb`` are stubbed while it imports and put
    back after; ``wandb_log`` receives what the script logs (else it is dropped). ``register`` keeps the
    module in ``sys.modules`` under its name (scripts that define dataclasses need it) and puts the
    script's folder on ``sys.path`` (scripts that import a sibling ``utils``). Raises ``FileNotFoundError``
    naming the repository to clone when the script is missing."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"JaxMARL script {path} does not exist: clone FLAIROx/JaxMARL (its baselines "
                                "are not in the pip package) and pass the script's path")
    name = module_name or f"jaxmarl_{path.stem}"
    stubs = _stubs(wandb_log) if stub else {}
    saved = {key: sys.modules.get(key) for key in stubs}
    sys.modules.update(stubs)
    if register and str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        if register:
            sys.modules[name] = module  # dataclasses defined in the script look their module up there
        with stdout_to_stderr():
            spec.loader.exec_module(module)
    finally:
        for key, previous in saved.items():
            if previous is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = previous
    return module
