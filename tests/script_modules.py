"""Import a file of ``scripts/`` as a module (scripts are not a package), for the tests of scripts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(stem: str) -> ModuleType:
    """``scripts/<stem>.py`` as the module ``<stem>``, registered in ``sys.modules`` so the dataclasses it
    defines can look their module up."""
    spec = importlib.util.spec_from_file_location(stem, SCRIPTS / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    spec.loader.exec_module(module)
    return module
