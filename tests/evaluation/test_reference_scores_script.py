"""scripts/reference_scores.py rewrites its YAML keeping the comments written by hand (the header, and the
lines above an entry), with the new values in place."""

from __future__ import annotations

from pathlib import Path

from script_modules import load_script

from jaxmarl_suite.evaluation.reference import load_reference_scores


def _entry(random: float) -> dict:
    return {"random": random, "random_sem": 0.1, "random_episodes": 8, "strong": None, "strong_source": None}


def test_a_rewrite_keeps_the_header_and_each_entrys_comments(tmp_path: Path) -> None:
    script = load_script("reference_scores")
    path = tmp_path / "scores.yaml"
    path.write_text(
        "# a hand-written header\n# its second line\n"
        "MPE_simple_v3:\n  random: -1.0\n  random_sem: 0.1\n  random_episodes: 8\n  strong: null\n"
        "  strong_source: null\n"
        "# why simple_spread's score is what it is\n"
        "MPE_simple_spread_v3:\n  random: -2.0\n  random_sem: 0.1\n  random_episodes: 8\n  strong: null\n"
        "  strong_source: null\n"
    )
    script.write_file(path, {"MPE_simple_v3": _entry(-3.0), "MPE_simple_spread_v3": _entry(-4.0)},
                      episodes=8, seed=0)
    text = path.read_text()
    assert text.startswith("# a hand-written header\n# its second line\nMPE_simple_v3:\n"), text
    assert "# why simple_spread's score is what it is\nMPE_simple_spread_v3:\n" in text, text
    scores = load_reference_scores(path)
    assert (scores["MPE_simple_v3"].random, scores["MPE_simple_spread_v3"].random) == (-3.0, -4.0)


def test_a_new_file_gets_the_scripts_header(tmp_path: Path) -> None:
    script = load_script("reference_scores")
    path = tmp_path / "new.yaml"
    script.write_file(path, {"MPE_simple_v3": _entry(-3.0)}, episodes=8, seed=5)
    text = path.read_text()
    assert text.startswith("# Reference scores per env") and "8 episodes per env" in text and "seed 5" in text
    assert load_reference_scores(path)["MPE_simple_v3"].random == -3.0


def test_rewriting_the_shipped_file_keeps_every_comment_and_value(tmp_path: Path) -> None:
    """(Hand-wrapped long strings may be re-wrapped: YAML's values, not its line breaks, are the data.)"""
    script = load_script("reference_scores")
    shipped = Path(script.REFERENCE_FILE)
    copy = tmp_path / "copy.yaml"
    copy.write_text(shipped.read_text())
    keys = ("random", "random_sem", "random_episodes", "strong", "strong_source")
    entries = {env_id: {key: getattr(score, key) for key in keys}
               for env_id, score in load_reference_scores(shipped).items()}
    script.write_file(copy, entries, episodes=2048, seed=0)
    comments = lambda text: [line for line in text.splitlines() if line.startswith("#")]  # noqa: E731
    assert comments(copy.read_text()) == comments(shipped.read_text())
    assert load_reference_scores(copy) == load_reference_scores(shipped)
