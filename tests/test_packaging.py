"""The wheel maps environments/ and baselines/ into jaxmarl_suite and works from a fresh venv."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import jax, jaxmarl_suite
import jaxmarl_suite.environments.mpe as mpe
env = jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=2)
state, ts = env.reset(jax.random.PRNGKey(0))
state, ts = env.step(jax.random.PRNGKey(1), state, env.sample_actions(jax.random.PRNGKey(2)))
assert ts.obs["agents"].shape == (2, 3, 18), ts.obs["agents"].shape
print("FROM", jaxmarl_suite.__file__)
print("MPE", mpe.__file__)
"""


def test_wheel_installs_into_a_fresh_venv_and_steps(tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheel_dir.glob("jaxmarl_suite-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "jaxmarl_suite/environments/mpe/simple_spread.py" in names
    assert "jaxmarl_suite/baselines/__init__.py" in names
    assert not any(name.startswith(("environments/", "baselines/", "tests/")) for name in names)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # Dependencies come from this interpreter's site-packages (appended after the venv's own), so the
    # test stays offline; the package itself comes only from the wheel.
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "-q", str(wheel)], check=True)
    result = subprocess.run(
        [str(python), "-c", PROBE], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    assert f"FROM {site}" in result.stdout, result.stdout
    assert f"MPE {site}" in result.stdout, result.stdout
