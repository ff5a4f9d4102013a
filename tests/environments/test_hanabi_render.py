"""Hanabi's table view: it jits and vmaps over an episode, and what it draws follows the state (card
colours, face-down cards and hints for an observer, fireworks, tokens, discards, the deck)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.environments.hanabi import Hanabi, HanabiState
from jaxmarl_suite.environments.hanabi.rendering import (
    BACKGROUND,
    CARD_COLORS,
    FACE_DOWN,
    INFO_COLOR,
    LIFE_COLOR,
    TURN_BAND,
    Box,
    render_table,
    table_layout,
)

RED, YELLOW = 0, 1


def rgb(color: np.ndarray) -> np.ndarray:
    """A palette colour as the renderer writes it into a frame."""
    return (np.clip(color, 0.0, 1.0) * 255).astype(np.uint8)


def pixel(frame: jax.Array | np.ndarray, box: Box, dy: int | None = None,
          dx: int | None = None) -> np.ndarray:
    """The frame's pixel at ``(dy, dx)`` inside ``box`` (its centre by default)."""
    row = box.top + (box.height // 2 if dy is None else dy)
    col = box.left + (box.width // 2 if dx is None else dx)
    return np.asarray(frame)[row, col]


def region(frame: jax.Array | np.ndarray, box: Box) -> np.ndarray:
    return np.asarray(frame)[box.top:box.top + box.height, box.left:box.left + box.width]


@functools.cache
def jitted(env: Hanabi) -> dict[str, Callable]:
    """``env``'s per-env functions, compiled once for the module (eager dispatch would dominate)."""
    return {"reset": jax.jit(env.reset), "step": jax.jit(env.step), "deal": jax.jit(env.deal),
            "sample": jax.jit(env.sample_actions)}


def sorted_deal(env: Hanabi) -> HanabiState:
    """The game dealt from the unshuffled deck with two yellow 1s moved up: player 0 holds red 1, 1, 1, 2
    and yellow 1, player 1 red 3, 3, 4, 4 and yellow 1; the next cards drawn are red 2 and red 5."""
    deck = np.repeat(np.arange(env.num_cards, dtype=np.int32), env.copies)
    deck[[4, 10]], deck[[9, 11]] = deck[[10, 4]], deck[[11, 9]]
    state, _ = jitted(env)["deal"](jnp.asarray(deck)[:, None], env.default_params)
    return jax.tree.map(lambda x: x[..., 0], state)


def play(env: Hanabi, state: HanabiState, action: int) -> HanabiState:
    """The current player makes move ``action``; everyone else passes."""
    actions = jnp.full((env.num_players,), env.noop, jnp.int32).at[state.current_player].set(action)
    state, _ = jitted(env)["step"](jax.random.PRNGKey(0), state, {"agents": actions})
    return state


@pytest.fixture(scope="module")
def env() -> Hanabi:
    return Hanabi()


@pytest.fixture(scope="module")
def render(env: Hanabi):
    return jax.jit(render_table, static_argnums=(0, 2))


def test_an_episode_renders_under_jit_and_vmap(env: Hanabi, render) -> None:
    key = jax.random.PRNGKey(7)
    functions = jitted(env)
    state, timestep = functions["reset"](key)
    states = [state]
    for _ in range(8):
        key, action_key, step_key = jax.random.split(key, 3)
        actions = functions["sample"](action_key, timestep.action_mask)
        state, timestep = functions["step"](step_key, state, actions)
        states.append(state)
    episode = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
    layout = table_layout(env)
    views = {}
    for observer in (None, 1):
        frames = np.asarray(jax.jit(jax.vmap(lambda s, o=observer: render_table(env, s, o)))(episode))
        assert frames.shape == (len(states), layout.height, layout.width, 3) and frames.dtype == np.uint8
        np.testing.assert_array_equal(frames[5], np.asarray(render(env, states[5], observer)))
        changed = (frames[1:] != frames[:-1]).any(axis=(1, 2, 3))
        playing = ~np.asarray(episode.done)[:-1]
        assert playing[:4].all() and changed[playing].all(), "every move changes at least the turn marker"
        views[observer] = frames
    # The spectator's view skips the face-down drawing in Python; it equals the full computation for a
    # (traced) observer who holds no cards.
    nobody = jax.jit(jax.vmap(lambda s, o: render_table(env, s, o), in_axes=(0, None)))(episode, -1)
    np.testing.assert_array_equal(np.asarray(nobody), views[None])
    # a traced observer works too (vmapped over players)
    views = jax.jit(jax.vmap(lambda o: render_table(env, states[0], o)))(jnp.arange(env.num_players))
    np.testing.assert_array_equal(views[1], frames[0])


def test_the_size_depends_only_on_the_structure() -> None:
    sizes = {players: (table_layout(Hanabi(num_agents=players)).height,
                       table_layout(Hanabi(num_agents=players)).width) for players in (2, 3, 4, 5)}
    assert sizes[2][1] == sizes[3][1] and sizes[2][0] < sizes[3][0]
    assert all(200 <= width <= 500 for _, width in sizes.values())
    small = Hanabi(num_agents=3, num_colors=2, num_ranks=3, hand_size=2, max_info_tokens=3, max_life_tokens=1)
    deck = np.repeat(np.arange(small.num_cards, dtype=np.int32), small.copies)
    state = jax.tree.map(lambda x: x[..., 0], jax.jit(small.deal)(deck[:, None], small.default_params)[0])
    layout = table_layout(small)
    assert jax.jit(render_table, static_argnums=0)(small, state).shape == (layout.height, layout.width, 3)


def test_cards_show_their_colour_and_the_observer_sees_only_hints(env: Hanabi, render) -> None:
    state = sorted_deal(env)
    layout = table_layout(env)
    red, yellow, grey = rgb(CARD_COLORS[RED]), rgb(CARD_COLORS[YELLOW]), rgb(FACE_DOWN)
    frame = render(env, state, None)
    np.testing.assert_array_equal(pixel(frame, layout.card(1, 0), 4, 4), red)
    np.testing.assert_array_equal(pixel(frame, layout.card(1, 4), 4, 4), yellow)
    np.testing.assert_array_equal(pixel(frame, layout.card(0, 0), 4, 4), red)
    # rank pips as on a die: a 1 has its centre pip only, a 4 (player 1's slot 3) the corners
    assert (pixel(frame, layout.card(1, 4)) < 40).all()
    assert (pixel(frame, layout.card(1, 4), 9, 7) == yellow).all()
    assert (pixel(frame, layout.card(1, 3), 9, 7) < 40).all()

    seen_by_0 = render(env, state, 0)
    for slot in range(env.hand_size):
        card = region(seen_by_0, layout.card(0, slot))[3:-3, 3:-3]
        assert (card == rgb(FACE_DOWN)).all(), "an unhinted own card is blank grey"
        np.testing.assert_array_equal(pixel(seen_by_0, layout.card(1, slot), 4, 4),
                                      pixel(frame, layout.card(1, slot), 4, 4))
    assert not (region(seen_by_0, layout.card(1, 0)) == grey).all(axis=-1).any()

    # player 0 plays red 1 (and draws red 2), then player 1 hints player 0's red cards
    state = play(env, state, env.hand_size + 0)
    state = play(env, state, 2 * env.hand_size + RED)
    np.testing.assert_array_equal(state.color_hint[0], [RED, RED, RED, -1, RED])
    seen_by_0 = render(env, state, 0)
    for slot in (0, 1, 2, 4):
        np.testing.assert_array_equal(pixel(seen_by_0, layout.card(0, slot), 1, 1), red)  # the rim
        np.testing.assert_array_equal(pixel(seen_by_0, layout.card(0, slot), 10, 4), grey)
        np.testing.assert_array_equal(pixel(seen_by_0, layout.hint_strip(0, slot), 1), red)
    assert not (pixel(seen_by_0, layout.card(0, 3), 1, 1) == red).all()
    np.testing.assert_array_equal(pixel(seen_by_0, layout.hint_strip(0, 3), 1), rgb(TURN_BAND))  # no bar
    # the hints show under the cards for everyone else, face up
    np.testing.assert_array_equal(pixel(render(env, state, 1), layout.hint_strip(0, 0), 1), red)

    # a hinted rank is drawn as dark pips on the face-down card: a 2 shows two opposite corners
    hinted = state.replace(rank_hint=state.rank_hint.at[0, 2].set(1))
    card = layout.card(0, 2)
    before, after = render(env, state, 0), render(env, hinted, 0)
    assert (region(before, card)[3:-3, 3:-3] == grey).all()
    assert (pixel(after, card, card.height // 2 - 11, card.width // 2 - 7) < 40).all()
    assert (pixel(after, card, card.height // 2 + 11, card.width // 2 + 7) < 40).all()
    assert (pixel(after, card) == grey).all()


def test_a_scoring_play_lights_the_firework_and_empties_the_deck_bar(env: Hanabi, render) -> None:
    state = sorted_deal(env)
    layout = table_layout(env)
    before = render(env, state, None)
    after_state = play(env, state, env.hand_size + 0)
    assert int(after_state.fireworks[RED]) == 1 and int(after_state.drawn) == int(state.drawn) + 1
    after = render(env, after_state, None)
    fireworks = Box(layout.fireworks.top, layout.fireworks.left, layout.fireworks.height,
                    layout.fireworks.width)
    assert (region(before, fireworks) != region(after, fireworks)).any()
    np.testing.assert_array_equal(pixel(after, layout.firework(RED, 0)), rgb(CARD_COLORS[RED]))
    assert not (pixel(before, layout.firework(RED, 0)) == rgb(CARD_COLORS[RED])).all()
    assert not (pixel(after, layout.firework(RED, 1)) == rgb(CARD_COLORS[RED])).all()
    assert (region(before, layout.deck) != region(after, layout.deck)).any()
    # the turn marker moved from player 0's row to player 1's
    marker_0, marker_1 = layout.markers.cell(0, 0), layout.markers.cell(1, 0)
    assert (region(before, marker_0) != region(after, marker_0)).any()
    assert (region(before, marker_1) != region(after, marker_1)).any()

    # a misplay (player 1's red 4) discards it and costs a life
    misplayed = play(env, after_state, env.hand_size + 2)
    assert int(misplayed.life_tokens) == env.max_life_tokens - 1
    frame = render(env, misplayed, None)
    np.testing.assert_array_equal(pixel(frame, layout.discard(RED, 3, 0)), rgb(CARD_COLORS[RED]))
    assert not (pixel(after, layout.discard(RED, 3, 0)) == rgb(CARD_COLORS[RED])).all()
    last_life = layout.life_token(env.max_life_tokens - 1)
    np.testing.assert_array_equal(pixel(after, last_life), rgb(LIFE_COLOR))
    np.testing.assert_array_equal(pixel(frame, last_life), rgb(BACKGROUND))


@pytest.mark.parametrize("tokens", ["info", "life"])
def test_token_counts_are_visible(env: Hanabi, render, tokens: str) -> None:
    state, _ = jitted(env)["reset"](jax.random.PRNGKey(0))
    layout = table_layout(env)
    if tokens == "info":
        total, token, color = env.max_info_tokens, layout.info_token, INFO_COLOR
        fewer = state.replace(info_tokens=jnp.int32(total - 3))
    else:
        total, token, color = env.max_life_tokens, layout.life_token, LIFE_COLOR
        fewer = state.replace(life_tokens=jnp.int32(total - 2))
    full, spent = render(env, state, None), render(env, fewer, None)
    left = total - (3 if tokens == "info" else 2)
    for index in range(total):
        np.testing.assert_array_equal(pixel(full, token(index)), rgb(color))
        expected = rgb(color) if index < left else rgb(BACKGROUND)
        np.testing.assert_array_equal(pixel(spent, token(index)), expected)
        # a spent token still shows as a ring
        np.testing.assert_array_equal(pixel(spent, token(index), token(index).height // 2, 0), rgb(color))
    changed = np.argwhere((np.asarray(full) != np.asarray(spent)).any(-1))
    first, last = token(0), token(total - 1)
    assert changed[:, 0].min() >= first.top and changed[:, 0].max() < last.top + last.height
    assert changed[:, 1].min() >= first.left and changed[:, 1].max() < last.left + last.width
