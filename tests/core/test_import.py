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
    # reference_ids is no family: the registry's pure-Python parsers of reference packages' id schemes
    families = {name.split(".")[2] for name in json.loads(result.stdout)} - {"reference_ids"}
    assert families == {"mpe"}


def test_import_turns_the_deadlocking_cpu_scheduler_off_and_keeps_user_flags() -> None:
    probe = "import os, jaxmarl_suite; print(os.environ['XLA_FLAGS'])"
    env = {k: v for k, v in __import__("os").environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "--xla_cpu_enable_concurrency_optimized_scheduler=false"
    env["XLA_FLAGS"] = "--xla_dump_to=/nowhere --xla_cpu_enable_concurrency_optimized_scheduler=true"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == env["XLA_FLAGS"]  # the user's own choice wins
