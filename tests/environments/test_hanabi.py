"""Hanabi's rules where HLE's live games rarely go, its deck, its errors and its JaxMARL view.

The step-for-step comparison with HLE is tests/environments/test_hanabi_parity.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite
from jaxmarl_suite.compat.jaxmarl import to_jaxmarl
from jaxmarl_suite.environments.hanabi import Hanabi
from jaxmarl_suite.environments.hanabi.hanabi import PLAY

RED, YELLOW = 0, 1


def card(env: Hanabi, color: int, rank: int) -> int:
    return color * env.num_ranks + rank


def start(env: Hanabi, hands: list[list[int]]) -> object:
    """A single game whose hands are ``hands`` (the rest of the deck in a fixed order)."""
    dealt = [c for hand in hands for c in hand]
    left = list(np.repeat(np.arange(env.num_cards), env.copies))
    for c in dealt:
        left.remove(c)
    deck = jnp.asarray(dealt + left, jnp.int32)[:, None]
    state, _ = env.deal(deck, env.default_params)
    return jax.tree.map(lambda x: x[..., 0], state)


def act(env: Hanabi, state, player: int, action: int):
    actions = jnp.full((env.num_players,), env.noop, jnp.int32).at[player].set(action)
    return env.step(jax.random.key(0), state, {"agents": actions})


def test_the_deck_is_a_uniform_shuffle_of_the_right_cards() -> None:
    env = Hanabi()
    decks = np.asarray(env.shuffle(jax.random.split(jax.random.key(0), 4000)))  # [D, B]
    for b in range(0, 4000, 397):
        assert np.bincount(decks[:, b], minlength=env.num_cards).tolist() == env.copies.tolist()
    # each position holds card c with probability copies[c] / D: within 5 standard errors everywhere
    expected = env.copies / env.deck_size
    for position in (0, 17, env.deck_size - 1):
        observed = np.bincount(decks[position], minlength=env.num_cards) / decks.shape[1]
        assert np.all(np.abs(observed - expected) < 5 * np.sqrt(expected * (1 - expected) / decks.shape[1]))
    assert not np.array_equal(decks[:, 0], decks[:, 1])


def test_misplay_with_last_life_gives_minus_the_score() -> None:
    env = Hanabi()
    hand0 = [card(env, YELLOW, 3), card(env, 3, 0), card(env, 3, 1), card(env, 3, 2), card(env, 3, 3)]
    hand1 = [card(env, 4, 0), card(env, 4, 1), card(env, 4, 2), card(env, 4, 3), card(env, 4, 4)]
    state = start(env, [hand0, hand1])
    state = state.replace(fireworks=jnp.asarray([2, 1, 3, 0, 0]), life_tokens=jnp.asarray(1))
    state, timestep = act(env, state, 0, env.hand_size + 0)  # a yellow 4 on yellow's 2: a misplay
    # the score was 2 + 1 + 3 = 6; HLE's score is 0 once the lives are gone, so the step's reward is -6
    assert np.all(np.asarray(timestep.reward["agents"]) == -6.0)
    assert bool(timestep.terminated["agents"].all())


def test_the_game_ends_one_full_round_after_the_deck_runs_out() -> None:
    """HLE's rule: after the move that draws the last card, every player, the drawer included, has
    exactly one more turn."""
    for players in (2, 3, 5):
        env = Hanabi(num_agents=players)
        state, timestep = env.reset(jax.random.key(players))
        state = state.replace(drawn=jnp.asarray(env.deck_size - 1), info_tokens=jnp.asarray(5))
        state, timestep = act(env, state, 0, 0)  # discard slot 0: draws the last card
        assert int(state.drawn) == env.deck_size and not bool(timestep.terminated["agents"][0])
        for turn in range(players):
            assert not bool(timestep.terminated["agents"][0]), (players, turn)
            current = int(state.current_player)
            state, timestep = act(env, state, current, 0)  # discards keep the game going
        assert bool(timestep.terminated["agents"].all()), players
        assert int(state.current_player) == 1 % players  # the drawer (player 0) played its last turn too


def test_illegal_moves_pass_the_turn_and_change_nothing_else() -> None:
    env = Hanabi()
    state, timestep = env.reset(jax.random.key(0))
    assert not bool(timestep.action_mask["agents"][0, 0])  # no discard with all 8 tokens
    after, timestep = act(env, state, 0, 0)
    assert bool(timestep.info["illegal_move"][0])
    assert int(after.current_player) == 1
    for field in ("hands", "info_tokens", "life_tokens", "fireworks", "discards", "drawn", "last_player"):
        assert np.array_equal(np.asarray(getattr(after, field)), np.asarray(getattr(state, field))), field
    # the player not on turn is ignored, whatever it sends
    actions = jnp.asarray([env.hand_size, 3], jnp.int32)  # player 0 plays slot 0, player 1 "discards"
    after, timestep = env.step(jax.random.key(1), state, {"agents": actions})
    assert not bool(timestep.info["illegal_move"][0])
    assert int(after.last_player) == 0 and int(after.last_kind) == PLAY


def test_steps_after_the_end_change_nothing() -> None:
    env = Hanabi()
    state, _ = env.reset(jax.random.key(0))
    state = state.replace(life_tokens=jnp.asarray(0), done=jnp.asarray(True))
    after, timestep = act(env, state, int(state.current_player), env.hand_size)
    assert np.all(np.asarray(timestep.reward["agents"]) == 0.0)
    for leaf_before, leaf_after in zip(jax.tree.leaves(state.replace(time=state.time + 1)),
                                       jax.tree.leaves(after), strict=True):
        assert np.array_equal(np.asarray(leaf_before), np.asarray(leaf_after))
    mask = np.asarray(timestep.action_mask["agents"])
    assert mask[:, env.noop].all() and not mask[:, : env.noop].any()


def test_v0_belief_weights_plausible_cards_by_the_copies_left() -> None:
    env = Hanabi(observation="v0_belief")
    canonical = Hanabi()
    state, _ = env.reset(jax.random.key(3))
    red1 = card(env, RED, 0)
    state = state.replace(discards=state.discards.at[red1].set(2),
                          fireworks=state.fireworks.at[YELLOW].set(2))
    obs = np.asarray(env.encode(jax.tree.map(lambda x: x[..., None], state))[..., 0])
    bits = np.asarray(canonical.encode(jax.tree.map(lambda x: x[..., None], state))[..., 0])
    start = env.obs_size - env.section_sizes["card_knowledge"]
    assert np.array_equal(obs[:, :start], bits[:, :start])  # only the knowledge section differs
    per_card = obs[0, start:].reshape(env.num_players * env.hand_size, -1)[:, : env.num_cards]
    left = env.copies.astype(float).copy()
    left[red1] -= 2
    left[card(env, YELLOW, 0)] -= 1
    left[card(env, YELLOW, 1)] -= 1
    np.testing.assert_allclose(per_card, np.tile(left / left.sum(), (len(per_card), 1)), rtol=1e-6)


@pytest.mark.parametrize("kwargs", [{"num_agents": 1}, {"num_agents": 6}, {"num_colors": 0},
                                    {"hand_size": 30, "num_agents": 5}, {"observation": "seer"},
                                    {"max_info_tokens": 0}, {"num_ranks": True}])
def test_bad_configurations_fail_at_make(kwargs: dict) -> None:
    with pytest.raises((ValueError, TypeError), match="Hanabi|observation|ranks"):
        jaxmarl_suite.make("Hanabi", **kwargs)


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_observation_and_action_sizes_are_hles_and_jaxmarls(players: int) -> None:
    env = jaxmarl_suite.make("hanabi", num_agents=players)
    hle_sizes = {2: 658, 3: 956, 4: 1041, 5: 1280}  # pyhanabi.ObservationEncoder(game).shape()
    assert env.observation_space("agents").shape == (hle_sizes[players],)
    jaxmarl = pytest.importorskip("jaxmarl")
    theirs = jaxmarl.make("hanabi", num_agents=players)
    view = to_jaxmarl(env)
    agent = theirs.agents[0]
    assert view.observation_space(view.agents[0]).shape == theirs.observation_space(agent).shape
    assert view.action_space(view.agents[0]).n == theirs.action_space(agent).n
    assert view.num_moves == theirs.num_moves


def test_to_jaxmarl_gives_what_jaxmarls_hanabi_scripts_read() -> None:
    """JaxMARL's ippo_ff_hanabi.py builds ``(1, NUM_ENVS, obs_space.shape)`` (an int there) and masks its
    logits with ``jax.vmap(env.get_legal_moves)(state)``."""
    view = to_jaxmarl(jaxmarl_suite.make("hanabi"))
    assert view.observation_space(view.agents[0]).shape == 658
    obs, state = jax.vmap(view.reset)(jax.random.split(jax.random.key(0), 3))
    legal = jax.vmap(view.get_legal_moves)(state)
    assert set(legal) == set(view.agents) and legal["agent_0"].dtype == jnp.float32
    assert legal["agent_0"].shape == (3, view.num_moves)
    np.testing.assert_array_equal(np.asarray(legal["agent_1"])[:, -1], 1.0)  # not on turn: only the no-op
    assert np.asarray(legal["agent_0"])[:, -1].sum() == 0.0
    actions = {agent: jnp.argmax(legal[agent], axis=-1) for agent in view.agents}
    keys = jax.random.split(jax.random.key(1), 3)
    obs, state, reward, done, info = jax.vmap(view.step)(keys, state, actions)
    assert obs["agent_0"].shape == (3, 658) and reward["agent_1"].shape == (3,)


@pytest.mark.parametrize(("tokens", "returned"), [(8, False), (7, True)])
def test_completing_a_firework_returns_a_token_only_below_the_cap(tokens: int, returned: bool) -> None:
    """HLE: a 5 played onto its firework returns an information token if one is missing; the last-action
    section's "added information token" bit says whether it did."""
    env = Hanabi()
    hand0 = [card(env, RED, 4), card(env, 1, 0), card(env, 1, 1), card(env, 1, 2), card(env, 1, 3)]
    hand1 = [card(env, 2, r) for r in range(5)]
    state = start(env, [hand0, hand1]).replace(fireworks=jnp.asarray([4, 0, 0, 0, 0]),
                                               info_tokens=jnp.asarray(tokens))
    state, timestep = act(env, state, 0, env.hand_size + 0)  # play the red 5
    assert int(state.fireworks[RED]) == 5 and float(timestep.reward["agents"][0]) == 1.0
    assert int(state.info_tokens) == tokens + returned
    sizes = env.section_sizes
    last = sizes["hands"] + sizes["board"] + sizes["discards"]
    token_bit = last + sizes["last_action"] - 1
    assert float(timestep.obs["agents"][1, token_bit]) == float(returned)
    assert float(timestep.obs["agents"][1, token_bit - 1]) == 1.0  # the play scored


def test_a_hint_reveals_every_matching_card_and_rules_the_colour_out_elsewhere() -> None:
    """Hinting a colour again touches the already-hinted card again (HLE's ``reveal_bitmask``, not only
    the newly revealed cards), and every other card of the hand loses that colour."""
    env = Hanabi()
    hand0 = [card(env, 3, r) for r in range(5)]
    hand1 = [card(env, RED, 0), card(env, YELLOW, 0), card(env, RED, 1), card(env, 2, 0), card(env, 2, 1)]
    state = start(env, [hand0, hand1])
    red_hint = 2 * env.hand_size + RED  # colour hints to the next player: 2H + colour
    state, _ = act(env, state, 0, red_hint)
    state, _ = act(env, state, 1, 0)  # player 1 discards card 0 (the red 1) and draws another red 1
    assert int(state.hands[1, 4]) == card(env, RED, 0)  # the first card left in start()'s fixed deck
    state, timestep = act(env, state, 0, red_hint)  # the red 2 (now slot 1) is hinted again, the new card too
    assert np.asarray(state.color_hint[1]).tolist() == [-1, RED, -1, -1, RED]
    plausible = np.asarray(state.color_plausible[1])  # [slot, colour]
    assert plausible[1].tolist() == plausible[4].tolist() == [True, False, False, False, False]
    assert not plausible[[0, 2, 3], RED].any() and plausible[[0, 2, 3]].sum() == 3 * (env.num_colors - 1)
    sizes = env.section_sizes
    outcome = sizes["hands"] + sizes["board"] + sizes["discards"] + 2 * env.num_players + 4 + env.num_colors \
        + env.num_ranks
    observed = np.asarray(timestep.obs["agents"][0, outcome: outcome + env.hand_size]).tolist()
    assert observed == [0.0, 1.0, 0.0, 0.0, 1.0]  # every red card, hinted before or not
