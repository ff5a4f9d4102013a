"""The LBF and RWARE cards' "Against Jumanji" tables say what scripts/jumanji_rules.py measures.

The script runs each situation in the original package, ours and Jumanji 1.1.2. Here it runs with fewer
resets: the rows of single situations must equal the card's; the rows of reset frequencies must agree with
the card's on which side is zero; ours must follow the original on every row.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("jumanji")
pytest.importorskip("lbforaging")
pytest.importorskip("rware")

from script_modules import load_script  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
rules = load_script("jumanji_rules")


def card_rows(family: str) -> list[tuple[str, ...]]:
    """The table between the card's ``jumanji-rules`` markers."""
    text = (ROOT / "environments" / family / "README.md").read_text()
    block = re.search(rf"<!-- jumanji-rules:{family} -->\n(.*?)<!-- /jumanji-rules:{family} -->", text, re.S)
    assert block, f"environments/{family}/README.md has no jumanji-rules table"
    lines = block.group(1).strip().splitlines()[2:]
    return [tuple(cell.strip() for cell in line.strip().strip("|").split(" | ")) for line in lines]


# slow: half a minute per family of op-by-op steps in three implementations, outside the default budget
@pytest.mark.slow
@pytest.mark.parametrize("family", ["lbf", "rware"])
def test_the_card_says_what_running_both_shows(family: str) -> None:
    build, _ = rules.FAMILIES[family]
    resets = 300
    measured = build(resets)
    card = card_rows(family)
    assert [row[0] for row in measured] == [row[0] for row in card]
    for got, want in zip(measured, card, strict=True):
        if want[2].endswith("%"):
            zero = lambda cell: float(cell[:-1]) == 0  # noqa: E731
            assert [zero(c) for c in got[2:]] == [zero(c) for c in want[2:]], (got, want)
        else:
            assert got[1:] == want[1:], (got, want)
        assert got[2] != got[4], f"the original and Jumanji agree on {got[0]!r}: not a difference"
    assert rules.check_ours_follows_the_original(measured, resets) == []
