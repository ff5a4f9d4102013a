"""scripts/ippo_curves.py --env hanabi at a tiny size, through its command line: both sides (JaxMARL's only
where its checkout is at /tmp/JaxMARL) train two updates, and the JSON and the table hold a curve per run
whose returns are final scores (0 to 25)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import jax
import jax.experimental
import jax.numpy as jnp
import numpy as np
import pytest
from script_modules import load_script

TINY_PRESET = {
    "algorithm": "ippo",
    "config": {"env_id": "Hanabi", "num_envs": 2, "num_steps": 128, "update_epochs": 1, "num_minibatches": 1,
               "hidden_sizes": [8], "anneal_lr": False},
    "hparams": {"lr": 5e-4},
}
"""Ours as small as JaxMARL's side gets from the command line: 2 envs x 128 steps per update."""
JAXMARL_NUM_ENVS = 2
"""With its config's 128 steps, 4 epochs and 4 minibatches of its 4 actors (2 envs x 2 players)."""
TIMESTEPS = 2 * 128 * 2
"""Two updates of 256 env steps; random legal play ends a game within a few dozen steps."""


@pytest.fixture(scope="module")
def curves_module() -> ModuleType:
    return load_script("ippo_curves")


@pytest.mark.slow  # 20-30 s; the shared machinery runs by default in tests/test_overcooked_curves.py
def test_tiny_hanabi_curves(curves_module: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                            ) -> None:
    ic = curves_module
    preset = tmp_path / "ippo_tiny_hanabi.yaml"
    preset.write_text(json.dumps(TINY_PRESET))  # JSON is YAML
    sides = ["ours", "jaxmarl"] if ic.HANABI.jaxmarl_script.is_file() else ["ours"]
    curves_json = tmp_path / "curves.json"
    ic.main(["--env", "hanabi", "--timesteps", str(TIMESTEPS), "--sides", *sides,
             "--ours-preset", str(preset), "--jaxmarl-num-envs", str(JAXMARL_NUM_ENVS),
             "--points", "256", "512", "1e6", "--half-window", "100", "--json", str(curves_json)])
    table = capsys.readouterr().out

    family, curves, machine, command, timesteps = ic.load_json(curves_json)
    assert family is ic.HANABI and timesteps == TIMESTEPS and "--env hanabi" in command
    assert machine["our preset"] == str(preset)
    assert [(c.task, c.side, c.seed) for c in curves] == [("Hanabi", side, 0) for side in sides]
    for curve in curves:
        np.testing.assert_array_equal(curve.env_steps, [256, 512])
        assert curve.episodes.sum() > 0 and (curve.episodes >= 0).all()
        finished = curve.episodes > 0
        assert np.isnan(curve.returns[~finished]).all()
        assert np.isfinite(curve.returns[finished]).all()
        assert ((curve.returns[finished] >= 0) & (curve.returns[finished] <= 25)).all(), curve.returns
        assert 0 <= curve.final_mean() <= 25
        assert math.isnan(curve.window_mean(1e6, 100))  # past the run
    if "jaxmarl" in sides:
        assert len(curves[1].extra["jaxmarl_logged"]) == 2

    lines = [line for line in table.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == ["env", "side", "seed", "0.000256e6", "0.000512e6", "1e6", "final", "seconds"]
    assert len(lines) == 2 + len(sides)
    for line, curve in zip(lines[2:], curves, strict=True):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[:3] == ["Hanabi", curve.side, "0"]
        assert cells[5] == "-"
        assert float(cells[7]) > 0

    ic.main(["--from-json", str(curves_json), "--points", "512", "--half-window", "300"])
    rebuilt = capsys.readouterr().out
    assert rebuilt.startswith("# IPPO on Hanabi") and "| env | side | seed | 0.000512e6 | final |" in rebuilt


def test_hanabi_flags_are_checked(curves_module: ModuleType) -> None:
    with pytest.raises(SystemExit):
        curves_module.main(["--env", "hanabi", "--layouts", "cramped_room"])  # Overcooked only
    with pytest.raises(SystemExit):
        curves_module.main(["--timesteps", "256"])  # no --env


def test_io_callback_info_is_averaged_per_update(curves_module: ModuleType) -> None:
    """JaxMARL's Hanabi script returns no metrics: the curve comes from the info it hands io_callback each
    update, averaged on the host, in update order, and its own callback still runs."""
    ic = curves_module
    handed: list[int] = []

    def update(step: jax.Array, _: None) -> tuple[jax.Array, None]:
        finished = jnp.array([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # [steps, actors]
        info = {"returned_episode": finished, "finished_episode_returns": finished * (step + 1),
                "returned_episode_returns": jnp.full((4, 2), step + 1.0), "update_steps": step}
        jax.experimental.io_callback(lambda metric: handed.append(int(metric["update_steps"])), None, info)
        return step + 1, None

    original = jax.experimental.io_callback
    with ic.averaging_io_callbacks() as logged:
        jax.block_until_ready(jax.jit(lambda: jax.lax.scan(update, jnp.int32(0), None, 3))())
        jax.effects_barrier()
    assert sorted(handed) == [0, 1, 2]
    means = ic.per_update_means({}, logged)
    np.testing.assert_allclose(means["returned_episode"], [0.25, 0.25, 0.25])
    np.testing.assert_allclose(means["finished_episode_returns"] / means["returned_episode"], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(means["returned_episode_returns"], [1.0, 2.0, 3.0])
    assert jax.experimental.io_callback is original  # restored on leaving
