"""GIFs people can read: every family's frame is scaled to a legible size, each frame is captioned with its
step and the running return (read back here from the pixels, with digit shapes learnt from the GIF itself),
``size`` and ``fps`` take effect, and bad values fail in one line."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest
from PIL import Image

import jaxmarl_suite
from jaxmarl_suite.cli import main as cli_main
from jaxmarl_suite.core.registry import env_spec, registered_envs
from jaxmarl_suite.render import write_gif
from jaxmarl_suite.rollout import render_random_episode

LEGIBLE = 300
"""The shorter side, in pixels, that every family's GIF frame reaches by default."""

FIRST_OF_EACH_FAMILY = list({env_spec(e).family: e for e in reversed(registered_envs())}.values())
"""One env per family (its first registered), to keep the per-family checks cheap."""


def read_gif(path: Path) -> tuple[np.ndarray, list[int]]:
    """Every stored frame as ``uint8[T, H, W, 3]`` and each one's duration in ms."""
    frames, durations = [], []
    with Image.open(path) as image:
        for index in range(image.n_frames):
            image.seek(index)
            frames.append(np.asarray(image.convert("RGB")))
            durations.append(int(image.info["duration"]))
    return np.stack(frames), durations


def frame_shape(env_id: str) -> tuple[int, int]:
    """``(H, W)`` of the env's frame, from shapes only (nothing compiled)."""
    env = jaxmarl_suite.make(env_id)
    state = jax.eval_shape(env.reset, jax.random.PRNGKey(0))[0]
    return jax.eval_shape(env.render, state).shape[:2]


def caption_words(strip: np.ndarray) -> list[list[bytes]]:
    """The glyphs of a caption strip (light text on a dark strip), grouped into words.

    Glyphs are runs of inked columns; the gaps between words are wider than any gap inside a word, and a
    caption has four words (``step``, the step, ``return``, the return), so the three widest gaps split
    them. Each glyph is keyed by its cropped bitmap."""
    ink = strip.mean(axis=-1) > 128
    inked = ink.any(axis=0)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], inked.astype(int), [0]])))
    runs = list(zip(edges[::2], edges[1::2], strict=True))
    glyphs = []
    for start, stop in runs:
        columns = ink[:, start:stop]
        rows = np.flatnonzero(columns.any(axis=1))
        glyphs.append(np.packbits(columns[rows.min():rows.max() + 1]).tobytes() + bytes(columns.shape))
    gaps = [runs[i + 1][0] - runs[i][1] for i in range(len(runs) - 1)]
    cuts = sorted(np.argsort(gaps)[-3:] + 1)
    return [glyphs[a:b] for a, b in zip([0, *cuts], [*cuts, len(glyphs)], strict=True)]


def decode(word: list[bytes], digits: dict[bytes, str]) -> float:
    """A number from its glyphs: known digits, a leading glyph of another shape as a minus sign and any
    other unknown glyph as the decimal point."""
    text = ""
    for index, glyph in enumerate(word):
        if glyph in digits:
            text += digits[glyph]
        else:
            text += "-" if index == 0 else "."
    return float(text)


def captions(frames: np.ndarray, picture_rows: int) -> tuple[list[list[list[bytes]]], dict[bytes, str]]:
    """Each frame's caption words, and the digit glyphs learnt from steps 0 to 9 (frame t shows step t)."""
    words = [caption_words(frame[picture_rows:]) for frame in frames]
    assert all(w[0] == words[0][0] and w[2] == words[0][2] for w in words), "the words step and return"
    digits = {}
    for step in range(10):
        assert len(words[step][1]) == 1, f"step {step} is one digit"
        digits[words[step][1][0]] = str(step)
    assert len(digits) == 10, "ten distinct digit shapes"
    return words, digits


@pytest.mark.parametrize("env_id", FIRST_OF_EACH_FAMILY)
def test_every_family_is_legible_by_default(env_id: str, tmp_path: Path) -> None:
    height, width = frame_shape(env_id)
    frames = np.stack([np.full((height, width, 3), value, np.uint8) for value in (40, 200)])
    with Image.open(write_gif(tmp_path / "f.gif", frames, fps=5)) as image:
        gif_width, gif_height = image.size
    assert min(gif_width, gif_height) >= LEGIBLE, f"{env_id}: {gif_width} x {gif_height}"
    # a whole factor, the same on both axes, so every frame pixel is an equal square block
    assert gif_width % width == 0 and gif_width // width == gif_height // height == gif_height / height
    assert max(gif_width, gif_height) <= 1100, "not needlessly large either"


def test_the_caption_reads_step_and_running_return_of_a_played_game(tmp_path: Path) -> None:
    """A random Prisoner's Dilemma: the actions of each round are read off the lit cell of the frame, the
    per-agent mean reward computed from the textbook payoffs, and the sum compared with the caption."""
    height, width = frame_shape("MatrixGame")
    frames, durations = read_gif(render_random_episode("MatrixGame", tmp_path / "pd.gif", seed=3))
    env = jaxmarl_suite.make("MatrixGame")
    # every round's frame is kept (no two are alike) and plays at the env's frame rate
    assert len(frames) == env.default_params.max_steps + 1 and set(durations) == {1000 / env.render_fps}
    picture_rows = frames.shape[2] * height // width
    words, digits = captions(frames, picture_rows)
    assert [decode(w[1], digits) for w in words] == list(range(len(frames)))

    payoff = {(0, 0): 3.0, (0, 1): 0.0, (1, 0): 5.0, (1, 1): 1.0}  # R, S, T, P for (own, other's)
    expected, total = [0.0], 0.0
    for frame in frames[1:]:
        rgb = frame[:picture_rows].astype(int)
        lit = (rgb[..., 0] > 200) & (rgb[..., 1] > 100) & (rgb[..., 1] < 180) & (rgb[..., 2] < 80)
        rows, cols = np.nonzero(lit)
        own, other = int(rows.mean() >= picture_rows / 2), int(cols.mean() >= frame.shape[1] / 2)
        total += (payoff[own, other] + payoff[other, own]) / 2
        expected.append(total)
    shown = [decode(w[3], digits) for w in words]
    np.testing.assert_allclose(shown, expected, atol=0.0051)
    assert shown[-1] > shown[1] > 0


def test_the_caption_shows_negative_and_fractional_returns(tmp_path: Path) -> None:
    returns = -0.37 * np.arange(12) ** 2
    frames = np.zeros((12, 50, 80, 3), np.uint8)
    gif, _ = read_gif(write_gif(tmp_path / "c.gif", frames, fps=5, size=120, returns=returns))
    assert not (gif[:, :120] > 0).any(), "the caption lies under the picture, not on it"
    words, digits = captions(gif, 120)
    np.testing.assert_allclose([decode(w[3], digits) for w in words], returns, atol=0.0051)
    # the strip differs between frames 1 and 2 exactly where the step and the return are written
    assert (gif[1] != gif[2]).any() and np.array_equal(gif[1, :120], gif[2, :120])


def test_size_and_fps_take_effect(tmp_path: Path) -> None:
    frames = np.stack([np.full((50, 80, 3), value, np.uint8) for value in (0, 120, 240)])
    gif, durations = read_gif(write_gif(tmp_path / "s.gif", frames, fps=4, size=120))
    assert gif.shape[1:3] == (120, 80 * 120 // 50) and durations == [250, 250, 250]
    np.testing.assert_array_equal(gif[:, 60, 100], frames[:, 25, 40])  # nearest neighbour, exact colours
    gif, durations = read_gif(write_gif(tmp_path / "t.gif", frames, fps=20, size=25))
    assert gif.shape[1:3] == (25, 40) and durations == [50, 50, 50]


@pytest.mark.parametrize("command", ["render", "demo"])
@pytest.mark.parametrize("flag, value",
                         [("--size", "0"), ("--size", "-3"), ("--fps", "0"), ("--fps", "-2.5")])
def test_bad_size_or_fps_fail_in_one_line(command: str, flag: str, value: str,
                                          capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["render", str(tmp_path / "no_run")] if command == "render" else ["demo", "--out", str(tmp_path)]
    assert cli_main([*argv, flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag.strip("-") in err and value in err, err
    assert not list(tmp_path.iterdir()), "nothing was written"
