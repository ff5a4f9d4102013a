"""Importing the package is silent and cheap: no JAX, no env family, no output."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import sys
import jaxmarl_suite
import jaxmarl_suite.core
heavy = [m for m in ("jax", "flax", "jaxmarl_suite.environments.mpe", "wandb") if m in sys.modules]
print("HEAVY", heavy)
print("VERSION", jaxmarl_suite.__version__)
"""


def test_import_is_silent_and_lazy() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == "HEAVY []", result.stdout
    assert lines[1].startswith("VERSION ") and len(lines) == 2
    assert result.stderr == ""


def test_make_imports_only_the_requested_family() -> None:
    probe = (
        "import json, sys, jaxmarl_suite; jaxmarl_suite.make('MPE_simple_spread_v3'); "
        "print(json.dumps([m for m in sys.modules if m.startswith('jaxmarl_suite.environments.')]))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    families = {name.split(".")[2] for name in json.loads(result.stdout)}
    assert families == {"mpe"}
