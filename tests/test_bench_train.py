"""scripts/bench_train.py runs every section for our IPPO alone at a tiny size and builds its tables."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import pytest
from script_modules import load_script


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench_train")


@pytest.fixture(scope="module")
def tiny(bench: ModuleType) -> tuple[object, object]:
    config, hparams = bench.load_ours(bench.DEFAULT_PRESET)
    config = dataclasses.replace(config, num_envs=4, num_steps=32, num_minibatches=2, update_epochs=1,
                                 hidden_sizes=(8,), total_timesteps=4 * 32 * 2)
    return config, hparams


def _header(table: str) -> list[str]:
    return [cell.strip() for cell in table.splitlines()[0].strip("|").split("|")]


def test_time_to_target_section(bench: ModuleType, tiny: tuple[object, object]) -> None:
    config, hparams = tiny
    # A target every finished episode beats: reached on the first update (32 steps > a 25-step episode).
    rows = bench.time_to_target(config, hparams, None, target=-1e9, seeds=(0,), max_seconds=120.0,
                                window_episodes=1, log=None)
    assert [r["side"] for r in rows] == ["ours (fast preset)"]
    assert rows[0]["reached"] and rows[0]["updates"] == 1
    assert rows[0]["time_to_target_s"] >= rows[0]["compile_s"] > 0
    table = bench.format_target(bench.summarize_target(rows))
    assert _header(table) == list(bench.TARGET_COLUMNS)
    assert len(table.splitlines()) == 3 and "| ours (fast preset) | 1/1 |" in table


def test_identical_config_section(bench: ModuleType, tiny: tuple[object, object]) -> None:
    config, _ = tiny
    rows = bench.identical_config(None, timesteps=(config.total_timesteps,), repeats=1, ours=tiny, log=None,
                                  with_mappo=True)
    assert [r["side"] for r in rows] == ["ours", "ours MAPPO"] and rows[0]["sps"] > 0 and rows[1]["sps"] > 0
    assert rows[0]["ratio"] is None
    table = bench.format_identical(rows)
    assert _header(table) == list(bench.IDENTICAL_COLUMNS) and len(table.splitlines()) == 4


def test_seed_scaling_section(bench: ModuleType, tiny: tuple[object, object]) -> None:
    config, _ = tiny
    rows = bench.seed_scaling(None, seeds=(2,), timesteps=config.total_timesteps, ours=tiny, log=None)
    assert [(r["side"], r["seeds"]) for r in rows] == [("ours", 2)] and rows[0]["sps"] > 0
    table = bench.format_seeds(rows)
    assert _header(table) == list(bench.SEEDS_COLUMNS) and len(table.splitlines()) == 3


def test_profile_section_attributes_ops_to_phases(bench: ModuleType, tiny: tuple[object, object]) -> None:
    profile = bench.profile_sides(None, updates=2, ours=tiny)
    phases = profile["ours"]["ms_per_update"]
    assert set(phases) == set(bench.PHASES)
    assert phases["loss backward"] > 0 and phases["rollout: env step"] > 0
    assert phases["other"] < 0.5 * profile["ours"]["traced_ms_per_update"], "ops were not attributed"
    table = bench.format_profile(profile)
    assert _header(table) == list(bench.PROFILE_COLUMNS)
    assert len(table.splitlines()) == 2 + len(bench.PHASES) + 2


def test_clock_uses_an_episode_window_and_stops_at_the_target(bench: ModuleType) -> None:
    clock = bench.UpdateClock(target=-20.0, window_episodes=10)
    clock.record(-30.0, 5)
    clock.record(-19.0, 4)  # first raw crossing, but 9 episodes are not a full window
    assert clock.first_raw_update == 1 and clock.stopped is None
    with pytest.raises(bench.StopTrainingError):
        clock.record(-10.0, 6)  # window: 6 at -10 and 4 at -19 -> -13.6
    assert clock.hit_update == 2 and clock.stopped == "target"
    assert clock.windowed_return() == pytest.approx((6 * -10.0 + 4 * -19.0) / 10)


def test_jaxmarl_config_maps_onto_the_default_preset(bench: ModuleType, tmp_path: Path) -> None:
    # JaxMARL's baselines/IPPO/config/ippo_ff_mpe.yaml (values only), with its PyYAML-unfriendly "1e7".
    (tmp_path / "ippo_ff_mpe.yaml").write_text(
        '"LR": 2.5e-4\n"NUM_ENVS": 16\n"NUM_STEPS": 128\n"TOTAL_TIMESTEPS": 1e7\n"UPDATE_EPOCHS": 4\n'
        '"NUM_MINIBATCHES": 4\n"GAMMA": 0.99\n"GAE_LAMBDA": 0.95\n"CLIP_EPS": 0.2\n"ENT_COEF": 0.01\n'
        '"VF_COEF": 0.5\n"MAX_GRAD_NORM": 0.5\n"ACTIVATION": "tanh"\n"ENV_NAME": "MPE_simple_spread_v3"\n'
        '"ENV_KWARGS": {}\n"ANNEAL_LR": True\n"SEED": 30\n"NUM_SEEDS": 10\n'
    )
    assert bench.find_jaxmarl_config(tmp_path / "ippo_ff_mpe.py") == tmp_path / "ippo_ff_mpe.yaml"
    config = bench.read_jaxmarl_config(tmp_path / "ippo_ff_mpe.yaml")
    assert config["TOTAL_TIMESTEPS"] == 10_000_000 and isinstance(config["TOTAL_TIMESTEPS"], int)
    assert bench.ours_from_jaxmarl(config) == bench.load_ours(bench.DEFAULT_PRESET)
    fast_config, fast_hparams = bench.load_ours(bench.FAST_PRESET)
    fast_config.validate()
    fast_hparams.validate()
    assert fast_config.env_id == "MPE_simple_spread_v3"


def test_missing_jaxmarl_file_is_a_clear_error(bench: ModuleType, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--jaxmarl-ippo", str(tmp_path / "nope.py"), "--sections", "identical"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert "--jaxmarl-ippo" in bench.build_parser().format_help()


def test_race_window_skips_updates_without_episodes_and_finds_the_first_crossing(bench: ModuleType) -> None:
    nan = float("nan")
    rates = [0.5, nan, 0.9, 1.0, 1.0, 0.8, 1.0, 1.0, nan]
    assert bench.window_mean(rates, 1, 3) != bench.window_mean(rates, 1, 3)  # only one finite value yet
    assert bench.window_mean(rates, 3, 3) == pytest.approx((0.5 + 0.9 + 1.0) / 3)
    # the finite 3-update means: (0.5+0.9+1)/3=0.8, (0.9+1+1)/3=0.967, then 0.933, 0.933, 0.933
    assert bench.first_crossing(rates, 0.95, 3) == 4
    assert bench.first_crossing(rates, 0.99, 3) is None
    assert bench.window_mean(rates, len(rates) - 1, 3) == pytest.approx((0.8 + 1.0 + 1.0) / 3)


RACE_SIZES = {"num_envs": 4, "num_steps": 8, "total_timesteps": 64}


@pytest.mark.slow  # 16 s on 2 cores
def test_smax_race_stops_a_side_on_its_time_limit(bench: ModuleType) -> None:
    # The feed-forward side stops on its time limit after its first update (how a machine whose calls are
    # time-limited runs the sides apart); the recurrent side running to the end is the slow test below.
    assert bench.RACE_SIDES[:2] == ("ff", "gru")  # the default order of the rows
    stopped = bench.smax_race(None, sizes=RACE_SIZES, sides=("ff",), max_seconds=0.0, log=None)
    assert [row["side"].split(" (")[0] for row in stopped] == ["ours MAPPO-FF"]
    assert stopped[0]["stopped"] == "time limit" and stopped[0]["env_steps"] == 32  # after its first update
    table = bench.format_race(stopped)
    assert _header(table)[2] == "s to 0.9 (5-update mean)" and len(table.splitlines()) == 3
    assert "(stopped: time limit)" in table
    with pytest.raises(ValueError, match="unknown race sides"):
        bench.smax_race(None, sides=("ours",))


@pytest.mark.slow  # a recurrent MAPPO compile on SMAX (about 20 s); the time-limited side runs by default
def test_smax_race_runs_the_recurrent_side_to_the_end(bench: ModuleType) -> None:
    finished = bench.smax_race(None, sizes=RACE_SIZES, sides=("gru",), log=None)
    assert [row["side"].split(" (")[0] for row in finished] == ["ours MAPPO-GRU"]
    row = finished[0]
    assert row["env_steps"] == 64 and row["steps_per_s"] > 0 and row["wall_s"] >= row["compile_s"] > 0
    assert row["time_to_target_s"] is None and row["speedup"] is None  # 2 updates: no 5-update mean
    assert row["stopped"] is None
    table = bench.format_race(finished)
    assert len(table.splitlines()) == 3 and "stopped" not in table
