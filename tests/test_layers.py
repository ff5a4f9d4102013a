"""The import graph of ``jaxmarl_suite/``, ``environments/`` and ``baselines/`` has no cycle, and every
import points down the layers (docs/architecture.md):

    errors, accelerated < core < wrappers, render < environments < training.kit < training.runner
           < evaluation, compat, testing, zoo < pipeline, cli, bench, rollout, make < baselines

Imports inside functions count: a lazy import is still a dependency. The graph is read from the source
with ``ast``, so nothing is imported to check it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"jaxmarl_suite": "jaxmarl_suite", "environments": "jaxmarl_suite.environments",
           "baselines": "jaxmarl_suite.baselines"}

LAYERS = [
    ("jaxmarl_suite.errors", "jaxmarl_suite._version", "jaxmarl_suite._xla", "jaxmarl_suite.accelerated"),
    ("jaxmarl_suite.core",),
    ("jaxmarl_suite.wrappers", "jaxmarl_suite.render"),
    ("jaxmarl_suite.environments",),
    ("jaxmarl_suite.training", "jaxmarl_suite.training.kit"),
    ("jaxmarl_suite.training.runner",),
    ("jaxmarl_suite.evaluation", "jaxmarl_suite.compat", "jaxmarl_suite.testing", "jaxmarl_suite.zoo"),
    ("jaxmarl_suite.pipeline", "jaxmarl_suite.cli", "jaxmarl_suite.bench", "jaxmarl_suite.rollout",
     "jaxmarl_suite._make"),
    ("jaxmarl_suite.baselines",),
]
"""Lowest first. A module's layer is that of the longest prefix listed; the package ``jaxmarl_suite``
itself (its ``__init__``) sits with the top-level commands."""


def module_files() -> dict[str, Path]:
    found = {}
    for folder, package in SOURCES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def layer_of(module: str) -> int:
    if module == "jaxmarl_suite":
        return len(LAYERS) - 2
    best = max(((len(prefix), rank) for rank, prefixes in enumerate(LAYERS) for prefix in prefixes
                if module == prefix or module.startswith(prefix + ".")), default=None)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_layers.py")
    return best[1]


def import_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """``module -> internal modules it imports`` (the longest known prefix of each imported name)."""
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                names = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                known = [m for m in modules if name == m or name.startswith(m + ".")]
                if known:
                    target = max(known, key=len)
                    # Importing a module runs its packages' __init__ anyway: not an edge of its own. The
                    # root package is the exception: its __init__ re-exports the top layer (``make``).
                    inside = module.startswith(target + ".") and target != "jaxmarl_suite"
                    if target != module and not inside:
                        edges[module].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def edges() -> dict[str, set[str]]:
    return import_edges(module_files())


def test_no_import_cycle(edges: dict[str, set[str]]) -> None:
    assert cycles(edges) == []


def test_imports_point_down_the_layers(edges: dict[str, set[str]]) -> None:
    upward = sorted(f"{a} -> {b}" for a in edges for b in edges[a] if layer_of(b) > layer_of(a))
    assert upward == []


def test_the_checks_catch_a_cycle_and_an_upward_import() -> None:
    """Negative control: a made-up graph with a cycle and a kit module importing the runner."""
    graph = {"jaxmarl_suite.training.kit.ppo": {"jaxmarl_suite.training.runner.config"},
             "jaxmarl_suite.training.runner.config": {"jaxmarl_suite.training.kit.ppo"}}
    assert cycles(graph) == [sorted(graph)]
    assert layer_of("jaxmarl_suite.training.runner.config") > layer_of("jaxmarl_suite.training.kit.ppo")
    assert layer_of("jaxmarl_suite.evaluation.plots") > layer_of("jaxmarl_suite.training.runner.experiment")
    assert layer_of("jaxmarl_suite.baselines.ippo") > layer_of("jaxmarl_suite.training.runner.config")


def test_importing_the_root_package_counts(tmp_path: Path) -> None:
    """``from jaxmarl_suite import make`` inside an env would pull in the wrappers: it is an edge to the
    top layer, not a package import to ignore."""
    module = tmp_path / "env.py"
    module.write_text("def build():\n    from jaxmarl_suite import make\n    return make\n")
    graph = import_edges({"jaxmarl_suite.environments.fake": module, "jaxmarl_suite": ROOT / "jaxmarl_suite"
                          / "__init__.py"})
    assert graph["jaxmarl_suite.environments.fake"] == {"jaxmarl_suite"}
    assert layer_of("jaxmarl_suite") > layer_of("jaxmarl_suite.environments.fake")


def test_edges_are_found_in_real_source(edges: dict[str, set[str]]) -> None:
    """The walker sees module-level and function-level imports (else the tests above pass vacuously)."""
    assert "jaxmarl_suite.training.kit.ppo" in edges["jaxmarl_suite.baselines.ippo"]
    assert "jaxmarl_suite.pipeline" in edges["jaxmarl_suite.baselines.ippo"]  # inside main()
    assert "jaxmarl_suite.training.runner.experiment" in edges["jaxmarl_suite.pipeline"]
