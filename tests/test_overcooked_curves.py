"""scripts/overcooked_curves.py at a tiny size: both sides (JaxMARL's only where its checkout is at
/tmp/JaxMARL) train a few updates on one layout, and the table has a row per run and the expected columns."""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np
import pytest
from script_modules import load_script

TINY_OURS = {"num_envs": 2, "num_steps": 100, "update_epochs": 1, "num_minibatches": 1, "hidden_sizes": [8]}
TINY_JAXMARL = {"NUM_ENVS": 2, "NUM_STEPS": 100, "UPDATE_EPOCHS": 1, "NUM_MINIBATCHES": 1}
TIMESTEPS = 2 * 100 * 5
"""Five updates of 200 env steps: each env finishes its 400-step episode in the fourth."""


@pytest.fixture(scope="module")
def curves_module() -> ModuleType:
    return load_script("overcooked_curves")


@pytest.mark.slow  # 15 s on 2 cores
def test_tiny_curves_table(curves_module: ModuleType) -> None:
    oc = curves_module
    sides = ["ours"]
    jaxmarl = None
    if oc.DEFAULT_JAXMARL.is_file():
        jaxmarl = oc.load_jaxmarl_ippo(oc.DEFAULT_JAXMARL)
        sides.append("jaxmarl")
    curves = oc.run_curves(["coord_ring"], TIMESTEPS, [0], sides, jaxmarl, ours_overrides=TINY_OURS,
                           jaxmarl_overrides=TINY_JAXMARL)
    assert [(c.task, c.side, c.seed) for c in curves] == [("coordination_ring", s, 0) for s in sides]
    for curve in curves:
        np.testing.assert_array_equal(curve.env_steps, [200, 400, 600, 800, 1000])
        # Only the fourth update finishes episodes: one per env.
        np.testing.assert_array_equal(curve.episodes, [0, 0, 0, 2, 0])
        assert np.isnan(curve.returns[[0, 1, 2, 4]]).all()
        soups = curve.returns[3] / 20  # 20 per soup, the team's, to each agent
        assert soups >= 0 and soups == pytest.approx(round(soups), abs=1e-4)
        assert curve.final_mean() == pytest.approx(curve.returns[3])
        assert curve.window_mean(800, 100) == pytest.approx(curve.returns[3])
        assert math.isnan(curve.window_mean(400, 100))  # no episode ended in (300, 500]
        assert math.isnan(curve.window_mean(2000, 100))  # past the run
    table = oc.format_table(curves, points=(400, 800, 3_000_000), half_width=100)
    lines = table.strip().splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == ["layout", "side", "seed", "0.0004e6", "0.0008e6", "3e6", "final", "seconds"]
    assert len(lines) == 2 + len(sides)
    for line, side in zip(lines[2:], sides, strict=True):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[:3] == ["coordination_ring", side, "0"]
        assert cells[3] == "-" and cells[5] == "-"
        assert float(cells[4]) == float(cells[6]) >= 0
        assert float(cells[7]) > 0
