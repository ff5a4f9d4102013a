"""A jittable table view of one Hanabi game: every hand (one row per player, player 0 on top), whose turn it
is, the fireworks, the information and life tokens, the discard pile and the cards left in the deck.

The layout is static (it depends only on the env's numbers of players, hand slots, colours, ranks and
tokens), so every pixel looks up its element from a fixed map and a frame is a handful of gathers and
elementwise selects: it jits, and vmaps over a stacked episode.

Cards show their colour (HLE's order: red, yellow, green, white, blue) and their rank as 1..R pips. Seen
by an ``observer``, the observer's own cards lie face down (grey) and show only what hints revealed: a
hinted colour as a coloured rim, a hinted rank as dark pips. Under every card a strip repeats the hints
its holder got (a colour bar and rank dots), which every player knows.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


class Game(Protocol):
    """What the table needs of a ``Hanabi`` env: its static sizes (this module does not import hanabi.py,
    which imports it to render)."""

    num_players: int
    hand_size: int
    num_colors: int
    num_ranks: int
    max_info_tokens: int
    max_life_tokens: int
    deck_size: int
    copies: np.ndarray


CARD_COLORS = np.array([
    (0.90, 0.20, 0.20),   # red
    (0.98, 0.84, 0.18),   # yellow
    (0.22, 0.72, 0.30),   # green
    (0.97, 0.97, 0.97),   # white
    (0.22, 0.45, 0.95),   # blue
], np.float32)
"""RGB in [0, 1] of each colour, in HLE's order (R Y G W B)."""
FACE_DOWN = np.array((0.55, 0.55, 0.58), np.float32)
BACKGROUND = np.array((0.12, 0.30, 0.20), np.float32)
TURN_BAND = np.array((0.18, 0.40, 0.28), np.float32)
TURN_MARKER = np.array((1.00, 0.78, 0.15), np.float32)
GAME_OVER_MARKER = np.array((0.50, 0.50, 0.50), np.float32)
INK = np.array((0.08, 0.08, 0.08), np.float32)
LIGHT = np.array((0.92, 0.92, 0.90), np.float32)
INFO_COLOR = np.array((0.30, 0.60, 1.00), np.float32)
LIFE_COLOR = np.array((0.95, 0.25, 0.25), np.float32)
DIM = 0.35
"""Weight of a colour mixed into the background for an empty firework cell or an undiscarded copy."""

MARGIN = 8
CARD_H, CARD_W, CARD_GAP = 40, 28, 6
STRIP_GAP, STRIP_H = 2, 8
"""The hint strip under each card: a colour bar (rows 0-2) and rank dots (rows 5-7)."""
ROW_GAP = 10
MARKER_W, MARKER_GAP = 12, 6
PANEL_GAP, SECTION_GAP = 16, 10
PIP_RADIUS = 3.2
PIP_CENTERS = [(CARD_H / 2 + dy * 11, CARD_W / 2 + dx * 7) for dy, dx in
               ((-1, -1), (-1, 1), (0, 0), (1, -1), (1, 1))]
"""Pip positions on a card, as on a die: top left, top right, centre, bottom left, bottom right."""
PIPS_SHOWN = np.array([
    (0, 0, 0, 0, 0), (0, 0, 1, 0, 0), (1, 0, 0, 0, 1), (1, 0, 1, 0, 1), (1, 1, 0, 1, 1), (1, 1, 1, 1, 1),
], bool)
"""Which of ``PIP_CENTERS`` show for ranks 0 (nothing known) to 5, as a die's faces."""
FIREWORK_W, FIREWORK_H, FIREWORK_GAP = 18, 8, 2
TOKEN, TOKEN_PITCH, TOKENS_PER_ROW = 11, 14, 8
COPY, COPY_PITCH_X, COPY_PITCH_Y = 5, 6, 8
DECK_H = 8


class Box(NamedTuple):
    """A pixel rectangle: rows ``top:top + height``, columns ``left:left + width``."""

    top: int
    left: int
    height: int
    width: int


class Grid(NamedTuple):
    """``rows x cols`` equal cells of ``cell_h x cell_w`` pixels, ``pitch_y`` and ``pitch_x`` apart."""

    top: int
    left: int
    rows: int
    cols: int
    cell_h: int
    cell_w: int
    pitch_y: int
    pitch_x: int

    @property
    def height(self) -> int:
        """Pixels from the first row's top to the last row's bottom."""
        return (self.rows - 1) * self.pitch_y + self.cell_h

    @property
    def width(self) -> int:
        """Pixels from the first column's left to the last column's right."""
        return (self.cols - 1) * self.pitch_x + self.cell_w

    def cell(self, row: int, col: int) -> Box:
        """The box of one cell."""
        return Box(self.top + row * self.pitch_y, self.left + col * self.pitch_x, self.cell_h, self.cell_w)

    def pixel_map(self, height: int, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Over a ``height x width`` canvas: ``int32`` index ``row * cols + col`` of the cell holding each
        pixel (-1 outside every cell), and the pixel centre's ``float32`` y and x inside its cell."""
        rows, cols = np.mgrid[0:height, 0:width]
        dy, dx = rows - self.top, cols - self.left
        row, col = dy // self.pitch_y, dx // self.pitch_x
        local_y, local_x = dy - row * self.pitch_y, dx - col * self.pitch_x
        inside = ((dy >= 0) & (row < self.rows) & (local_y < self.cell_h)
                  & (dx >= 0) & (col < self.cols) & (local_x < self.cell_w))
        index = np.where(inside, row * self.cols + col, -1).astype(np.int32)
        return index, (local_y + 0.5).astype(np.float32), (local_x + 0.5).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class TableLayout:
    """Where everything lies on the table view of one env's structure (pixels, origin top left)."""

    height: int
    width: int
    cards: Grid
    """One row per player, one column per hand slot."""
    hint_strips: Grid
    turn_bands: Grid
    """The background band behind each player's row, lit for the player to move."""
    markers: Grid
    fireworks: Grid
    """One column per colour; row 0 is the highest rank."""
    info_tokens: Grid
    life_tokens: Grid
    discards: Grid
    """One row per colour; per rank ``copies_per_rank`` squares then a blank column."""
    copies_per_rank: int
    deck: Box

    def card(self, player: int, slot: int) -> Box:
        """The box of ``player``'s card in hand slot ``slot``."""
        return self.cards.cell(player, slot)

    def hint_strip(self, player: int, slot: int) -> Box:
        """The hint strip under that card."""
        return self.hint_strips.cell(player, slot)

    def firework(self, color: int, level: int) -> Box:
        """The cell that lights up once ``level + 1`` cards of ``color`` are played (``level`` 0-based)."""
        return self.fireworks.cell(self.fireworks.rows - 1 - level, color)

    def info_token(self, index: int) -> Box:
        """The ``index``-th information token."""
        return self.info_tokens.cell(index // TOKENS_PER_ROW, index % TOKENS_PER_ROW)

    def life_token(self, index: int) -> Box:
        """The ``index``-th life token."""
        return self.life_tokens.cell(index // TOKENS_PER_ROW, index % TOKENS_PER_ROW)

    def discard(self, color: int, rank: int, copy: int) -> Box:
        """The square of the ``copy``-th copy of the card ``(color, rank)`` in the discard pile."""
        return self.discards.cell(color, rank * (self.copies_per_rank + 1) + copy)


def table_layout(env: Game) -> TableLayout:
    """The static layout of ``env``'s table view; its size depends only on the env's structure."""
    players, hand, colors, ranks = env.num_players, env.hand_size, env.num_colors, env.num_ranks
    row_pitch = CARD_H + STRIP_GAP + STRIP_H + ROW_GAP
    cards_left = MARGIN + MARKER_W + MARKER_GAP
    cards = Grid(MARGIN, cards_left, players, hand, CARD_H, CARD_W, row_pitch, CARD_W + CARD_GAP)
    hint_strips = cards._replace(top=MARGIN + CARD_H + STRIP_GAP, cell_h=STRIP_H)
    pad = ROW_GAP // 2 - 1
    band_width = cards_left + cards.width - MARGIN + 2 * pad
    turn_bands = Grid(MARGIN - pad, MARGIN - pad, players, 1, row_pitch - ROW_GAP + 2 * pad,
                      band_width, row_pitch, band_width)
    markers = Grid(MARGIN + CARD_H // 2 - MARKER_W // 2, MARGIN, players, 1, MARKER_W, MARKER_W, row_pitch,
                   MARKER_W)

    board_left = cards_left + cards.width + PANEL_GAP
    fireworks = Grid(MARGIN, board_left, ranks, colors, FIREWORK_H, FIREWORK_W,
                     FIREWORK_H + FIREWORK_GAP, FIREWORK_W + 6)

    def token_grid(top: int, count: int) -> Grid:
        return Grid(top, board_left, -(-count // TOKENS_PER_ROW), min(count, TOKENS_PER_ROW), TOKEN, TOKEN,
                    TOKEN_PITCH, TOKEN_PITCH)

    info_tokens = token_grid(fireworks.top + fireworks.height + SECTION_GAP, env.max_info_tokens)
    life_tokens = token_grid(info_tokens.top + info_tokens.height + TOKEN_PITCH - TOKEN, env.max_life_tokens)
    copies_per_rank = int(env.copies.max())
    discards = Grid(life_tokens.top + life_tokens.height + SECTION_GAP, board_left, colors,
                    ranks * (copies_per_rank + 1) - 1, COPY, COPY, COPY_PITCH_Y, COPY_PITCH_X)
    board_width = max(fireworks.width, info_tokens.width, life_tokens.width, discards.width)
    deck = Box(discards.top + discards.height + SECTION_GAP, board_left, DECK_H, board_width)

    height = max(cards.top + cards.height + STRIP_GAP + STRIP_H, deck.top + deck.height) + MARGIN
    width = board_left + board_width + MARGIN
    return TableLayout(height, width, cards, hint_strips, turn_bands, markers, fireworks, info_tokens,
                       life_tokens, discards, copies_per_rank, deck)


def _paint(image: Array, mask: Array | np.ndarray, color: Array | np.ndarray) -> Array:
    """``color`` (``[3]`` or per pixel ``[H, W, 3]``) where ``mask``."""
    return jnp.where(jnp.asarray(mask)[..., None], jnp.asarray(color, jnp.float32), image)


def _dim(color: Array | np.ndarray) -> Array:
    return DIM * jnp.asarray(color, jnp.float32) + (1 - DIM) * jnp.asarray(BACKGROUND)


def render_table(env: Game, state: Any, observer: int | Array | None = None) -> Array:
    """``uint8[H, W, 3]`` of one env's game (an unbatched state, as ``env.reset(key)`` returns).

    With ``observer`` None every card is face up; with a player index, that player's own cards lie face
    down and show only what its hints revealed. ``H`` and ``W`` are ``table_layout(env)``'s.
    """
    layout = table_layout(env)
    height, width = layout.height, layout.width
    players, hand, colors, ranks = env.num_players, env.hand_size, env.num_colors, env.num_ranks
    palette = jnp.asarray(CARD_COLORS[:colors])
    image = jnp.broadcast_to(jnp.asarray(BACKGROUND), (height, width, 3))

    # whose turn: a lit band behind the row and a triangle pointing at it (grey once the game is over)
    band, _, _ = layout.turn_bands.pixel_map(height, width)
    image = _paint(image, (band >= 0) & (band == state.current_player), TURN_BAND)
    marker, marker_y, marker_x = layout.markers.pixel_map(height, width)
    half = MARKER_W / 2
    triangle = (marker == state.current_player) & (np.abs(marker_y - half) <= (MARKER_W - marker_x) / 2)
    image = _paint(image, triangle, jnp.where(state.done, jnp.asarray(GAME_OVER_MARKER), TURN_MARKER))

    # per-card facts, flat over (player, slot)
    cards = state.hands.reshape(-1)
    valid = cards >= 0
    color = jnp.clip(cards // ranks, 0, colors - 1)
    rank = jnp.maximum(cards, 0) % ranks
    color_hint = state.color_hint.reshape(-1)
    rank_hint = state.rank_hint.reshape(-1)
    hinted_color = palette[jnp.maximum(color_hint, 0)]
    # A spectator's view has no face-down cards: decided here in Python, because an all-False mask
    # makes the rim below a constant that XLA folds per vmapped frame (a gather over every card pixel
    # and frame: seconds of compile time for a 500-step episode).
    rimmed = None  # the observer's face-down cards whose colour a hint revealed
    if observer is None:
        face, pips = palette[color], rank + 1
    else:
        face_down = jnp.repeat(jnp.arange(players) == observer, hand)
        face = jnp.where(face_down[:, None], jnp.asarray(FACE_DOWN), palette[color])
        pips = jnp.where(face_down, rank_hint + 1, rank + 1)  # rank_hint -1 gives no pips
        rimmed = face_down & (color_hint >= 0)

    card, card_y, card_x = layout.cards.pixel_map(height, width)
    slot = np.maximum(card, 0)
    on_card = jnp.asarray(card >= 0) & valid[slot]
    image = _paint(image, on_card, face[slot])
    count = pips[slot]
    in_pip = jnp.zeros((height, width), bool)
    for position, (pip_y, pip_x) in enumerate(PIP_CENTERS):
        disc = (card_y - pip_y) ** 2 + (card_x - pip_x) ** 2 <= PIP_RADIUS ** 2
        in_pip = in_pip | (disc & jnp.asarray(PIPS_SHOWN[:, position])[jnp.clip(count, 0, 5)])
    image = _paint(image, on_card & in_pip, INK)
    edge = np.minimum(np.minimum(card_y, CARD_H - card_y), np.minimum(card_x, CARD_W - card_x))
    image = _paint(image, on_card & (edge < 1), INK)
    if rimmed is not None:
        image = _paint(image, on_card & (edge < 3) & rimmed[slot], hinted_color[slot])

    # what each holder was told: a colour bar and one dot per rank
    strip, strip_y, strip_x = layout.hint_strips.pixel_map(height, width)
    slot = np.maximum(strip, 0)
    on_strip = jnp.asarray(strip >= 0) & valid[slot]
    image = _paint(image, on_strip & (strip_y < 3) & (color_hint >= 0)[slot], hinted_color[slot])
    dot = np.floor(strip_x / 5)
    rank_dots = (strip_y > 5) & (strip_x - dot * 5 < 3) & (dot < rank_hint[slot] + 1)
    image = _paint(image, on_strip & rank_dots, LIGHT)

    # fireworks: one column per colour, lit from the bottom up to the number of cards played
    cell, _, _ = layout.fireworks.pixel_map(height, width)
    firework_color = np.maximum(cell, 0) % colors
    level = ranks - 1 - np.maximum(cell, 0) // colors
    lit = level < state.fireworks[firework_color]
    fill = jnp.where(lit[..., None], palette[firework_color], _dim(palette)[firework_color])
    image = _paint(image, cell >= 0, fill)

    # tokens: a filled disc per token left, a ring per token spent
    for grid, left, total, token_color in ((layout.info_tokens, state.info_tokens, env.max_info_tokens,
                                            INFO_COLOR),
                                           (layout.life_tokens, state.life_tokens, env.max_life_tokens,
                                            LIFE_COLOR)):
        token, token_y, token_x = grid.pixel_map(height, width)
        radius = np.sqrt((token_y - TOKEN / 2) ** 2 + (token_x - TOKEN / 2) ** 2)
        exists = (token >= 0) & (token < total)
        disc = exists & (radius <= TOKEN / 2)
        ring = exists & (radius <= TOKEN / 2) & (radius >= TOKEN / 2 - 1.5)
        image = _paint(image, jnp.where(token < left, disc, ring), token_color)

    # discards: per card, one square per copy in the game, lit per copy discarded
    square, _, _ = layout.discards.pixel_map(height, width)
    columns = layout.discards.cols
    discard_color = np.maximum(square, 0) // columns
    discard_rank, copy = np.divmod(np.maximum(square, 0) % columns, layout.copies_per_rank + 1)
    card_id = discard_color * ranks + discard_rank
    exists = (square >= 0) & (copy < layout.copies_per_rank) & (copy < env.copies[card_id])
    thrown = copy < state.discards[card_id]
    fill = jnp.where(thrown[..., None], palette[discard_color], _dim(LIGHT))
    image = _paint(image, exists, fill)

    # deck: a frame filled in proportion to the cards still to draw
    rows, cols = np.mgrid[0:height, 0:width]
    deck = layout.deck
    deck_y, deck_x = rows - deck.top, cols - deck.left
    in_deck = (deck_y >= 0) & (deck_y < deck.height) & (deck_x >= 0) & (deck_x < deck.width)
    frame = in_deck & ((deck_y == 0) | (deck_y == deck.height - 1)
                       | (deck_x == 0) | (deck_x == deck.width - 1))
    capacity = max(env.deck_size - players * hand, 1)
    remaining = (env.deck_size - state.drawn) / capacity
    image = _paint(image, frame | (in_deck & (deck_x + 0.5 < remaining * deck.width)), LIGHT)
    return (jnp.clip(image, 0.0, 1.0) * 255).astype(jnp.uint8)
