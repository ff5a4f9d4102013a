"""The package's reference scores: one entry per registered env, the file's checks, alias lookup, and a live
re-measurement of the random-policy score of two envs against the stored value (and of two multi-agent
MuJoCo tasks, whose stored scores come from MuJoCo's C engine, under ``slow``)."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import yaml
from env_cases import missing_modules

from jaxmarl_suite.core.registry import env_spec, registered_envs
from jaxmarl_suite.evaluation.reference import (
    load_reference_scores,
    measure_random_score,
    reference_for,
    reference_scores,
)

MUJOCO_MARKS = [pytest.mark.skipif(
    bool(missing_modules(("mujoco.mjx", "gymnasium_robotics"))), reason="the mujoco extra is not installed"
)]
ENTRY = {"random": -20.0, "random_sem": 0.1, "random_episodes": 100, "strong": -10.0,
         "strong_source": "a test"}


def test_every_registered_env_has_a_random_score():
    scores = reference_scores()
    # Other tests in this process may register their own envs (SMAX scenarios, toy envs), so the built-in
    # ids are read in a fresh interpreter.
    listing = subprocess.run([sys.executable, "-c", "import json, jaxmarl_suite; "
                              "print(json.dumps(jaxmarl_suite.registered_envs()))"],
                             capture_output=True, text=True, check=True)
    builtin = json.loads(listing.stdout)
    assert set(builtin) <= set(registered_envs())
    assert sorted(scores) == sorted(builtin)
    for env_id, score in scores.items():
        assert math.isfinite(score.random) and score.random_episodes >= 1000, env_id
        if score.strong is not None:
            assert score.strong > score.random and score.strong_source, env_id
    # the report's sweep example and tests aggregate these two tasks, so both need a full range
    assert scores["MPE_simple_spread_v3"].range is not None
    assert scores["MPE_simple_reference_v3"].range is not None


def test_hanabi_and_every_overcooked_layout_have_a_full_range():
    """So a report across families (MPE, Hanabi, Overcooked) needs no --normalize."""
    scores = reference_scores()
    # Overcooked V2 has no strong score yet: nobody has trained on it here
    cooperative = [env_id for env_id in scores if env_spec(env_id).family in ("overcooked", "hanabi")]
    assert len(cooperative) == 7  # Hanabi, Overcooked and its five layouts
    for env_id in cooperative:
        assert scores[env_id].range is not None, env_id
    assert scores["Hanabi"].strong == 25.0  # a perfect game: five fireworks of five cards each
    assert reference_for("overcooked") == scores["Overcooked"]  # JaxMARL's id
    assert scores["Overcooked"].range == scores["Overcooked_cramped_room"].range  # its default layout


def test_reference_for_resolves_aliases():
    assert reference_for("MPE_simple_spread_v3") == reference_scores()["MPE_simple_spread_v3"]
    assert reference_for("simple_spread_v3") == reference_scores()["MPE_simple_spread_v3"]  # mpe2's name
    assert reference_for("Not_an_env") is None


@pytest.mark.parametrize("env_id", [
    "MPE_simple_spread_v3",
    "SMAX_3m",
    # measured on MuJoCo's C engine (scripts/reference_scores.py); ours runs MJX: a slow compile
    pytest.param("MaMuJoCo_Reacher_2x1", marks=[pytest.mark.slow, *MUJOCO_MARKS]),
    pytest.param("MaMuJoCo_Hopper_3x1", marks=[pytest.mark.slow, *MUJOCO_MARKS]),
])
def test_stored_random_score_matches_a_live_rollout(env_id):
    """A fresh rollout on another seed lands within 4 combined standard errors of the stored value (a
    false alarm about once in 16,000 runs); a changed reward or episode rule moves it much further."""
    stored = reference_scores()[env_id]
    returns = measure_random_score(env_id, num_episodes=256, seed=12345)
    sem = returns.std(ddof=1) / np.sqrt(returns.size)
    tolerance = 4.0 * math.hypot(sem, stored.random_sem)
    assert abs(returns.mean() - stored.random) <= tolerance, (returns.mean(), stored.random, tolerance)


@pytest.mark.parametrize("change, message", [
    ({"strong": -30.0}, "strong .* must be above random"),
    ({"strong_source": None}, "strong_source must say where strong comes from"),
    ({"strong": None}, "has a strong_source but no strong score"),
    ({"random": float("nan")}, "random must be a finite number"),
    ({"random_episodes": 0}, "random_episodes must be a positive integer"),
    ({"extra": 1}, "must hold exactly"),
])
def test_a_bad_reference_file_is_a_clear_error(tmp_path, change, message):
    path = tmp_path / "scores.yaml"
    path.write_text(yaml.safe_dump({"MPE_simple_spread_v3": {**ENTRY, **change}}))
    with pytest.raises(ValueError, match=message):
        load_reference_scores(path)

