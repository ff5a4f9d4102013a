"""``compat.jaxmarl_scripts``: the one loader of JaxMARL's baseline scripts and the one stdout guard, on a
stand-in script that does what JaxMARL's do at import (import hydra, omegaconf and wandb, print)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from jaxmarl_suite.compat.jaxmarl_scripts import import_jaxmarl_script, stdout_to_stderr

SCRIPT = '''
import hydra
import wandb
from omegaconf import OmegaConf

print("chatter on import")


@hydra.main(version_base=None, config_path="config", config_name="x")
def main(config):
    raise SystemExit("the command line must not run")


def make_train(config):
    wandb.init(project="nothing")
    wandb.log({"returned_episode_returns": 1.5})
    return config["LR"] * 2
'''


def test_prints_from_python_and_from_the_descriptor_go_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with stdout_to_stderr():
        print("from python")
        os.write(1, b"from the descriptor\n")
    print("after")
    out, err = capfd.readouterr()
    assert "from python" in err and "from the descriptor" in err
    assert out == "after\n"


def test_a_script_imports_with_its_modules_stubbed_and_put_back(tmp_path: Path,
                                                                 capfd: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ippo_stand_in.py"
    path.write_text(SCRIPT)
    before = {name: sys.modules.get(name) for name in ("hydra", "omegaconf", "wandb")}
    logged: list[dict] = []
    module = import_jaxmarl_script(path, wandb_log=lambda metric, *a, **k: logged.append(metric))
    assert module.__name__ == "jaxmarl_ippo_stand_in" and module.make_train({"LR": 0.25}) == 0.5
    assert logged == [{"returned_episode_returns": 1.5}]
    assert {name: sys.modules.get(name) for name in before} == before, "the stubs must not outlive the import"
    assert "jaxmarl_ippo_stand_in" not in sys.modules and str(tmp_path) not in sys.path
    out, err = capfd.readouterr()
    assert "chatter on import" in err and "chatter" not in out


def test_register_keeps_the_module_and_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "with_sibling.py"
    (tmp_path / "sibling_helper_for_test.py").write_text("VALUE = 7\n")
    path.write_text("import sibling_helper_for_test\nVALUE = sibling_helper_for_test.VALUE\n")
    try:
        module = import_jaxmarl_script(path, module_name="registered_stand_in", stub=False, register=True)
        assert module.VALUE == 7 and sys.modules["registered_stand_in"] is module
    finally:
        sys.modules.pop("registered_stand_in", None)
        sys.modules.pop("sibling_helper_for_test", None)
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))


def test_a_missing_script_says_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="clone FLAIROx/JaxMARL"):
        import_jaxmarl_script(tmp_path / "ippo_ff_mpe.py")
