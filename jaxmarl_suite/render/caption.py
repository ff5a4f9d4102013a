"""The caption under each GIF frame: the step and the running return, in a small bitmap font (numpy, drawn
when the GIF is written, so ``env.render`` stays the env's own picture)."""

from __future__ import annotations

import math

import numpy as np

GLYPH_ROWS = {
    "0": (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###.", "....."),
    "1": ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###.", "....."),
    "2": (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####", "....."),
    "3": ("#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###.", "....."),
    "4": ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#.", "....."),
    "5": ("#####", "#....", "####.", "....#", "....#", "#...#", ".###.", "....."),
    "6": ("..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###.", "....."),
    "7": ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#...", "....."),
    "8": (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###.", "....."),
    "9": (".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##..", "....."),
    "-": (".....", ".....", ".....", ".###.", ".....", ".....", ".....", "....."),
    ".": (".....", ".....", ".....", ".....", ".....", ".##..", ".##..", "....."),
    " ": (".....",) * 8,
    "e": (".....", ".....", ".###.", "#...#", "#####", "#....", ".###.", "....."),
    "n": (".....", ".....", "#.##.", "##..#", "#...#", "#...#", "#...#", "....."),
    "p": (".....", ".....", "####.", "#...#", "#...#", "####.", "#....", "#...."),
    "r": (".....", ".....", "#.##.", "##..#", "#....", "#....", "#....", "....."),
    "s": (".....", ".....", ".####", "#....", ".###.", "....#", "####.", "....."),
    "t": (".#...", ".#...", "####.", ".#...", ".#...", ".#..#", "..##.", "....."),
    "u": (".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#", "....."),
}
"""Every character a caption uses, 5 x 8 pixels: the baseline is under row 7, row 8 is p's descender.
Each glyph's inked columns touch, so a blank column always lies between two glyphs (tests read captions
back by splitting on blank columns)."""
GLYPHS = {char: np.array([[c == "#" for c in row] for row in rows]) for char, rows in GLYPH_ROWS.items()}
CELL_W, CELL_H = 6, 9
"""A glyph's cell: 5 x 8 pixels of glyph, one blank column and row after it (before scaling)."""
PAD = 2
"""Blank font pixels above, below and left of the text (before scaling)."""


def caption_text(step: int, episode_return: float) -> str:
    """What a frame's caption says: the step and the running per-agent mean return (``--`` where the return
    is not finite: the font has no letters for nan or inf)."""
    shown = f"{episode_return:.2f}" if math.isfinite(episode_return) else "--"
    return f"step {step}  return {shown}"


def caption_scale(width: int, texts: list[str]) -> int:
    """The largest font scale (3 at most) at which the longest of ``texts`` fits ``width`` pixels; 1 when
    none does (the text is then cut at the right edge)."""
    longest = max((len(text) for text in texts), default=0)
    for scale in (3, 2):
        if (longest * CELL_W + 2 * PAD) * scale <= width:
            return scale
    return 1


def caption_height(scale: int) -> int:
    """Pixel rows of a caption strip at ``scale``."""
    return (CELL_H + 2 * PAD) * scale


def caption_ink(text: str, width: int, scale: int) -> np.ndarray:
    """``bool[caption_height(scale), width]``: True where ``text``'s glyphs are inked."""
    ink = np.zeros((CELL_H + 2 * PAD, len(text) * CELL_W + 2 * PAD), bool)
    for index, char in enumerate(text):
        left = PAD + index * CELL_W
        ink[PAD:PAD + 8, left:left + 5] = GLYPHS[char]
    ink = ink.repeat(scale, axis=0).repeat(scale, axis=1)
    strip = np.zeros((caption_height(scale), width), bool)
    shown = min(width, ink.shape[1])
    strip[:, :shown] = ink[:, :shown]
    return strip
