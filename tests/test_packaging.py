"""The wheel maps environments/ and baselines/ into jaxmarl_suite and works from a fresh venv."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import sysconfig
import tomllib
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


def _requirement_name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()  # type: ignore[union-attr]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_readme_lists_every_runtime_dependency_and_every_extra() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Dependencies", 1)[1].split("\n## ", 1)[0]
    project = _project()
    missing = [name for name in map(_requirement_name, project["dependencies"]) if f"`{name}`" not in section]
    assert not missing, f"README's Dependencies section does not name {missing}"
    extras = [extra for extra in project["optional-dependencies"] if f"`{extra}`" not in section]
    assert not extras, f"README's Dependencies section does not name the extras {extras}"


def test_the_pettingzoo_extra_holds_every_third_party_module_the_adapter_imports() -> None:
    """What the adapter imports beyond the standard library, the suite and its runtime dependencies (at the
    top or in a function, such as pygame for human mode) is what `pip install "jaxmarl-suite[pettingzoo]"`
    installs."""
    source = (ROOT / "jaxmarl_suite" / "compat" / "pettingzoo.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    project = _project()
    runtime = {"jax", "numpy", *map(_requirement_name, project["dependencies"])}
    third_party = imported - set(sys.stdlib_module_names) - runtime - {"jaxmarl_suite"}
    assert third_party == {"gymnasium", "pettingzoo", "pygame"}  # a new import must join the extra
    assert third_party <= set(map(_requirement_name, project["optional-dependencies"]["pettingzoo"]))
