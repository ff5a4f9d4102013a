"""``jaxmarl_suite.errors``: the one "did you mean" search that ids, layouts, flags and fields share."""

from __future__ import annotations

from jaxmarl_suite.errors import closest, did_you_mean


def test_closest_ignores_case_and_keeps_the_known_spelling() -> None:
    known = ["cramped_room", "coordination_ring", "Counter_Circuit"]
    assert closest("CRAMPED", known) == ["cramped_room"]
    assert closest("counter_circuit", known) == ["Counter_Circuit"]
    assert closest("zebra", known) == []


def test_did_you_mean_lists_one_two_or_three() -> None:
    assert did_you_mean([]) == ""
    assert did_you_mean(["a"]) == "did you mean 'a'?"
    assert did_you_mean(["--lr", "--anneal-lr"], quote=False) == "did you mean --lr or --anneal-lr?"
    assert did_you_mean(["a", "b", "c"]) == "did you mean 'a', 'b' or 'c'?"
