"""Shared pytest setup: tests run offline and on CPU, and no test leaks a changed Ctrl-C handler."""

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).parent))


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
