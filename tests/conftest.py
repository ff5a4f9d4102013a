"""Shared pytest setup: tests run offline and on CPU, no test leaks a changed Ctrl-C handler, and where
``JAXMARL_SUITE_REQUIRE_REFERENCES=1`` (CI sets it) a missing reference package fails the run instead of
skipping its parity tests."""

import importlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
FAST_COMPILE_FLAGS = {"--xla_backend_optimization_level": "0", "--xla_cpu_use_fusion_emitters": "false"}
"""XLA flags of the default selection (``pytest_configure``), each unless ``XLA_FLAGS`` already sets it."""
sys.path.insert(0, str(Path(__file__).parent))

REQUIRED_REFERENCES = (
    "mpe2",
    "pettingzoo.test",
    "pettingzoo.utils.conversions",
    "jaxmarl.environments.storm.storm",
    "overcooked_ai_py.mdp.overcooked_mdp",
    "overcooked_ai_py.planning.planners",
    "hanabi_learning_environment.pyhanabi",
    "mujoco.mjx",
    "gymnasium_robotics",
    "scipy.optimize",
    "lbforaging.foraging",
    "rware.warehouse",
    "jumanji",
)
"""The modules the parity and reference tests import (they ``importorskip`` them, so that a user's install
without the dev extra still runs the rest): under ``JAXMARL_SUITE_REQUIRE_REFERENCES=1`` each must import,
and the GPU-target tests' compiler must load."""


def missing_references(modules: tuple[str, ...] = REQUIRED_REFERENCES) -> list[str]:
    """Each module of ``modules`` that does not import, with the error it raised, and JAX's CUDA plugin
    (the GPU-target tests' compiler) where it is missing."""
    import numpy as np

    if not hasattr(np, "Inf"):  # overcooked-ai 1.1.0 reads np.Inf, which NumPy 2 removed (its tests alias it)
        np.Inf = np.inf  # type: ignore[attr-defined]  # noqa: N816
    missing = []
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as error:  # a reference can fail to import in many ways (a missing build, an ABI)
            missing.append(f"{module} ({type(error).__name__}: {error})")
    from jaxmarl_suite import bench

    try:  # the GPU-target tests compile for an H200 through JAX's CUDA plugin (the gpu-target extra)
        bench.gpu_target_device()
    except bench.GpuTargetUnavailableError as error:
        missing.append(f"JAX's CUDA plugin ({error})")
    return missing


def pytest_configure(config: pytest.Config) -> None:
    """Compile fast for the default selection (``-m 'not slow'``): XLA's backend optimization level 0, and
    its CPU backend's older elemental emitters instead of its fusion emitters (``FAST_COMPILE_FLAGS``).

    Most of the default suite's time is XLA compiling small programs that then run for well under a
    second. LLVM's backend passes were most of that: at level 0 the default suite took 12:49 instead of
    about 20 minutes on 2 cores (2026-11-29). Of what was left, most was the fusion emitters': without them
    an IPPO and a MAPPO program compiled in 5.8 s instead of 13.9 s, and the pinned metrics and IPPO's tests
    took 81 s instead of 152 s (2026-11-30). The programs compute the same things (the regression pins
    hold; their loss diagnostics to the tolerance they state). The slow tests are long training runs, whose
    time is running, not compiling, so any other selection compiles as a user's run does; so does a run
    whose ``XLA_FLAGS`` already sets a flag, for that flag. Runs before JAX starts a backend (nothing
    imports JAX before collection), and xdist's workers and the tests' subprocesses inherit it."""
    flags = os.environ.get("XLA_FLAGS", "")
    if config.option.markexpr.strip() == "not slow":
        added = [f"{flag}={value}" for flag, value in FAST_COMPILE_FLAGS.items() if flag not in flags]
        os.environ["XLA_FLAGS"] = " ".join([flags, *added]).strip()


def pytest_sessionstart(session: pytest.Session) -> None:
    """In CI, stop before any test when a reference package is missing: its parity tests would skip."""
    if os.environ.get("JAXMARL_SUITE_REQUIRE_REFERENCES") != "1" or hasattr(session.config, "workerinput"):
        return
    missing = missing_references()
    if missing:
        pytest.exit(
            "JAXMARL_SUITE_REQUIRE_REFERENCES=1 and these reference modules do not import, so their parity "
            "tests would skip: " + "; ".join(missing) + ' (install them: pip install -e ".[dev,gpu-target]")',
            returncode=3,
        )


@pytest.fixture(autouse=True)
def _sigint_handler_restored(request: pytest.FixtureRequest) -> Iterator[None]:
    """Put back the SIGINT handler a test (or a library it drives) changed, and say which test it was (a
    warning in the summary): in a CI run a worker's SIGINT was found ignored, set by some earlier test, and
    Ctrl-C tests compare handlers."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        message = f"changed the SIGINT handler ({before!r} -> {after!r}); restored"
        request.node.warn(pytest.PytestWarning(message))


@pytest.fixture
def gpu_target() -> object:
    """XLA's compile-only H200 device (``bench.gpu_target_device``); the test skips, naming what to install,
    where JAX's CUDA plugin is missing (CI requires it: see ``missing_references``)."""
    from jaxmarl_suite import bench

    try:
        return bench.gpu_target_device()
    except bench.GpuTargetUnavailableError as error:
        pytest.skip(f"no GPU compiler to count an H200's kernels: {error}")
