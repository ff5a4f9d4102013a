"""``scripts/social_curves.py``: the tail of each seed's metric ignores updates with no finished episode, the
table gives the mean and range over seeds, and a preset's row carries the env's social measures (a tiny run
of the IPD preset, shortened)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from script_modules import SCRIPTS, load_script

social = load_script("social_curves")


def test_tail_is_per_seed_over_the_last_tenth_skipping_nans() -> None:
    values = np.array([[0.0] * 18 + [math.nan, 4.0], [1.0] * 18 + [2.0, 6.0]])
    np.testing.assert_allclose(social.tail(values), [4.0, 4.0])
    assert np.isnan(social.tail(np.full((1, 5), math.nan))).all()


@pytest.mark.slow  # a compile of IPPO: the test budget is kept for the envs' own cases
def test_a_preset_row_has_the_measures_and_the_table_shows_mean_and_range(tmp_path) -> None:
    preset = yaml.safe_load((SCRIPTS.parent / "baselines/configs/ippo_MatrixGame.yaml").read_text())
    preset["config"].update(num_envs=4, num_steps=10, total_timesteps=4 * 10 * 20,
                            env_kwargs={"max_steps": 10})
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(preset))
    row = social.train_preset(str(path), seeds=2)
    assert row["steps"] == 800 and row["env"] == "MatrixGame"
    assert row["random"] == pytest.approx(224.9, abs=0.1)  # reference_scores.yaml, 100 rounds by default
    assert row["final"].shape == (2,) and {"collective_return", "equality"} <= set(row)
    assert "cooperative_share" not in row  # the matrix game counts no pick-ups
    # 10 rounds: per-agent returns lie in [0, 50], collective returns in [0, 100]
    assert np.all((row["final"] >= 0) & (row["final"] <= 50))
    assert np.all((row["collective_return"] >= 0) & (row["collective_return"] <= 100))
    table = social.format_table([row], seeds=2)
    first_row = table.splitlines()[-1]
    assert first_row.startswith(f"| {path} | 8e+02 | 225 |")
    assert "win_rate" not in row  # no winner in the matrix game
    low, high = row["final"].min(), row["final"].max()
    assert f"({low:.3g} to {high:.3g})" in first_row
