"""CI's reference gate (tests/conftest.py): with ``JAXMARL_SUITE_REQUIRE_REFERENCES=1`` a reference package
that does not import stops the run with a failure naming it, where without the variable its parity tests
only skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


def _run(tmp_path: Path, require: bool) -> subprocess.CompletedProcess[str]:
    shadow = tmp_path / "shadow"
    shadow.mkdir(exist_ok=True)
    # a module of the reference's name earlier on the path that raises what a missing package raises
    (shadow / "mpe2.py").write_text('raise ModuleNotFoundError("No module named \'mpe2\'", name="mpe2")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")]))
    env.pop("JAXMARL_SUITE_REQUIRE_REFERENCES", None)
    if require:
        env["JAXMARL_SUITE_REQUIRE_REFERENCES"] = "1"
    command = [sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:randomly", "-p", "no:cacheprovider",
               str(TESTS / "environments" / "test_mpe_simple_line_parity.py")]
    return subprocess.run(command, cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=600)


def test_a_missing_reference_fails_the_run_when_references_are_required(tmp_path: Path) -> None:
    pytest.importorskip("mpe2", reason="the gate is checked against a shadowed mpe2; install the dev extra")
    required = _run(tmp_path, require=True)
    assert required.returncode == 3, required.stdout[-2000:] + required.stderr[-2000:]
    assert "mpe2 (ModuleNotFoundError: No module named 'mpe2')" in required.stdout + required.stderr
    # the control: without the variable the same run skips the parity module and passes
    optional = _run(tmp_path, require=False)
    assert optional.returncode == 5, optional.stdout[-2000:]  # the module skipped: no test ran
    assert "skipped" in optional.stdout and "failed" not in optional.stdout
