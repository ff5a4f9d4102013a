"""Hanabi against DeepMind's live Hanabi Learning Environment (HLE), move for move, for 2 to 5 players.

HLE plays whole games with random legal moves (its own random deals); ours loads each game's deal from
HLE's history (``state_from_hle``), replays the same moves and is compared at every step: every player's
canonical observation (bit for bit), the legal moves of every player, the reward, the score and the end of
the game. Negative controls: a perturbed deck, a perturbed move and a perturbed encoding must fail.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pyhanabi = pytest.importorskip("hanabi_learning_environment.pyhanabi")

from jaxmarl_suite.environments.hanabi import Hanabi  # noqa: E402
from jaxmarl_suite.environments.hanabi.parity import (  # noqa: E402
    action_to_move,
    hle_config,
    move_to_action,
    state_from_hle,
)

CHANCE = -1


def play_hle_game(env: Hanabi, seed: int, skill: float = 0.0) -> tuple[object, object, list[dict]]:
    """One HLE game of random legal moves (drawn with numpy ``seed``). With probability ``skill`` a move
    peeks at the mover's hand: it plays a playable card if there is one, else hints or discards at random,
    so games run the deck out and knowledge gets rich; plain random play loses its lives early.
    Recorded per step: every player's encoding, the legal move ids and the score; then the move's uid and
    reward."""
    game = pyhanabi.HanabiGame(hle_config(env, seed))
    encoder = pyhanabi.ObservationEncoder(game, pyhanabi.ObservationEncoderType.CANONICAL)
    state = game.new_initial_state()
    rng = np.random.default_rng(seed)
    records: list[dict] = []

    def snapshot() -> dict:
        while state.cur_player() == CHANCE:
            state.deal_random_card()
        legal = [] if state.is_terminal() else [game.get_move_uid(m) for m in state.legal_moves()]
        return {
            "obs": [encoder.encode(state.observation(p)) for p in range(env.num_players)],
            "current": state.cur_player(), "legal": sorted(legal), "score": state.score(),
            "terminal": state.is_terminal(),
        }

    records.append(snapshot())
    while not state.is_terminal():
        moves = state.legal_moves()
        pool = moves
        if rng.random() < skill:
            hand = state.player_hands()[state.cur_player()]
            plays = [m for m in moves if m.type() == pyhanabi.HanabiMoveType.PLAY
                     and state.card_playable_on_fireworks(hand[m.card_index()].color(),
                                                          hand[m.card_index()].rank())]
            safe = [m for m in moves if m.type() != pyhanabi.HanabiMoveType.PLAY]
            pool = plays or safe or moves
        move = pool[rng.integers(len(pool))]
        before = state.score()
        uid = move_to_action(move, game)
        state.apply_move(move)
        record = snapshot()
        record.update(action=uid, reward=state.score() - before)
        records.append(record)
    return game, state, records


def replay(env: Hanabi, hle_state: object, records: list[dict]) -> list[str]:
    """Replay ``records`` on ours from ``hle_state``'s deal; return every mismatch (empty: identical)."""
    state, timestep = state_from_hle(hle_state, env)
    step = jax.jit(lambda s, a: env.step(jax.random.key(0), s, {"agents": a}))
    problems: list[str] = []

    def compare(index: int, record: dict, timestep) -> None:
        obs = np.asarray(timestep.obs["agents"])
        for player in range(env.num_players):
            expected = np.asarray(record["obs"][player], np.float32)
            if not np.array_equal(obs[player], expected):
                where = np.flatnonzero(obs[player] != expected)[:8].tolist()
                problems.append(f"step {index}: player {player}'s observation differs at {where}")
        mask = np.asarray(timestep.action_mask["agents"])
        for player in range(env.num_players):
            legal = sorted(np.flatnonzero(mask[player][: env.num_moves]).tolist())
            expected = record["legal"] if player == record["current"] else []
            if legal != expected:
                problems.append(f"step {index}: player {player}'s legal moves {legal} != HLE's {expected}")
            if bool(mask[player][env.noop]) == (player == record["current"] and not record["terminal"]):
                problems.append(f"step {index}: player {player}'s no-op legality is wrong")
        if float(timestep.info["score"][0]) != record["score"]:
            problems.append(f"step {index}: score {float(timestep.info['score'][0])} != {record['score']}")
        if bool(timestep.terminated["agents"].all()) != record["terminal"]:
            problems.append(f"step {index}: terminated {bool(timestep.terminated['agents'][0])} != "
                            f"{record['terminal']}")

    compare(0, records[0], timestep)
    for index, record in enumerate(records[1:], start=1):
        current = records[index - 1]["current"]
        actions = np.full((env.num_players,), env.noop, np.int32)
        actions[current] = record["action"]
        state, timestep = step(state, jnp.asarray(actions))
        rewards = np.asarray(timestep.reward["agents"])
        if not np.all(rewards == record["reward"]):
            problems.append(f"step {index}: reward {rewards.tolist()} != HLE's {record['reward']}")
        compare(index, record, timestep)
        if problems:
            break
    return problems


GAMES = [pytest.param(players, seed, id=f"{players}p-seed{seed}",
                      marks=[] if seed == 0 and players in (2, 5) else [pytest.mark.slow])
         for players in (2, 3, 4, 5) for seed in (0, 1, 2)]
"""2 and 5 players with one seed by default (the suite's time budget); every count with three seeds under
``slow``."""


@pytest.mark.parametrize(("players", "seed"), GAMES)
def test_full_games_match_hle_at_every_step(players: int, seed: int) -> None:
    env = Hanabi(num_agents=players)
    for skill in (0.0, 0.9):  # plain random play loses its lives; skilled play runs the deck out
        _game, final, records = play_hle_game(env, seed=seed * 7 + players, skill=skill)
        assert replay(env, final, records) == []


@pytest.mark.slow
def test_games_reach_every_ending() -> None:
    """The games the parity tests play end every way a game ends: lives lost, the deck run out (after the
    extra round) and, with skill, often late with a high score."""
    endings, scores = set(), []
    for players in (2, 3, 4, 5):
        env = Hanabi(num_agents=players)
        for seed in range(3):
            for skill in (0.0, 0.9):
                _game, final, records = play_hle_game(env, seed=seed * 7 + players, skill=skill)
                lives_out, deck_out = final.life_tokens() == 0, final.deck_size() == 0
                endings.add("lives" if lives_out else "deck" if deck_out else "other")
                scores.append(final.score())
    assert {"lives", "deck"} <= endings
    assert max(scores) >= 15


@pytest.mark.slow
@pytest.mark.parametrize("config", [
    {"num_colors": 3, "num_ranks": 4, "max_info_tokens": 5, "max_life_tokens": 2},
    {"num_colors": 2, "num_ranks": 5, "hand_size": 3, "num_agents": 3},
])
def test_smaller_configurations_match_hle(config: dict) -> None:
    env = Hanabi(**config)
    for seed in range(3):
        _game, final, records = play_hle_game(env, seed=seed, skill=0.8)
        assert replay(env, final, records) == []


def test_move_conversion_round_trips() -> None:
    env = Hanabi(num_agents=3)
    game = pyhanabi.HanabiGame(hle_config(env))
    for action in range(env.num_moves):
        assert move_to_action(action_to_move(action, game, env), game) == action
    with pytest.raises(ValueError, match="no-op"):
        action_to_move(env.noop, game, env)


# ------------------------------------------------------------------------------------- negative controls
def test_negative_control_a_perturbed_deck_fails() -> None:
    env = Hanabi(num_agents=2)
    _game, final, records = play_hle_game(env, seed=3)
    state, _ = state_from_hle(final, env)
    swapped = state.hands.at[1, 0].set((state.hands[1, 0] + 1) % env.num_cards)
    problems = replay_from(env, state.replace(hands=swapped), records)
    assert problems, "a changed card in player 1's hand must show in player 0's observation"


def test_negative_control_a_perturbed_move_fails() -> None:
    env = Hanabi(num_agents=3)
    _game, final, records = play_hle_game(env, seed=4, skill=0.8)
    changed = [dict(r) for r in records]
    index = next(i for i, r in enumerate(changed[1:], 1) if len(records[i - 1]["legal"]) > 1)
    previous_legal = records[index - 1]["legal"]
    changed[index]["action"] = next(uid for uid in previous_legal if uid != records[index]["action"])
    assert replay(env, final, changed) != []


def test_negative_control_a_perturbed_encoding_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    env = Hanabi(num_agents=2)
    _game, final, records = play_hle_game(env, seed=5, skill=0.8)
    encode = Hanabi.encode
    def flipped(self: Hanabi, state):  # one bit of the card-knowledge section, of the first card
        obs = encode(self, state)
        bit = self.obs_size - self.section_sizes["card_knowledge"]
        return obs.at[:, bit].set(1.0 - obs[:, bit])

    monkeypatch.setattr(Hanabi, "encode", flipped)
    assert replay(env, final, records) != []


def replay_from(env: Hanabi, state, records: list[dict]) -> list[str]:
    """``replay`` from a given single-env state instead of HLE's deal."""
    step = jax.jit(lambda s, a: env.step(jax.random.key(0), s, {"agents": a}))
    problems = []
    for index, record in enumerate(records[1:], start=1):
        actions = np.full((env.num_players,), env.noop, np.int32)
        actions[records[index - 1]["current"]] = record["action"]
        state, timestep = step(state, jnp.asarray(actions))
        for player in range(env.num_players):
            if not np.array_equal(np.asarray(timestep.obs["agents"][player]),
                                  np.asarray(record["obs"][player], np.float32)):
                problems.append(f"step {index}: player {player}'s observation differs")
        if problems:
            break
    return problems
