"""Cross-play for zero-shot coordination: agent 0 of every trained seed with agent 1 of every seed.

Entry ``(i, j)`` of the matrix is the mean per-agent episode return (``eval``'s statistic) when seed ``i``'s
policy plays agent 0 and seed ``j``'s plays agent 1, each acting on the same timestep with its own
``act``. The diagonal is self-play, the rest cross-play: a gap between them means the seeds learned
conventions that do not transfer to an unseen partner.

Every pair sees the same env randomness and action key (common random numbers), so a diagonal entry is
exactly what ``jaxmarl-suite eval`` reports for that seed with the same ``--seed`` and ``--episodes``, and
differences between entries are differences between partners, not between draws. Seeds that share a
baseline and ``Config`` share one ``act``, so all their pairs are vmapped into one compiled program.

With ``partners`` (``xplay --partners DIR``), the ego seeds also play a held-out population (a
``jaxmarl-suite population`` folder trained with other seeds, or a plain run folder's seeds) in both
seats: the zero-shot coordination score, per partner and overall, beside the ego's self-play.

Wherever a run folder is taken, ``zoo:NAME`` names a model-zoo entry instead: one seed, the entry's
policy (``jaxmarl_suite.zoo.load``), as an ego or as the one held-out partner.

Run folders are read through ``training.runner.run_folder`` only, policies loaded with
``training.runner.experiment.load_policy`` (zoo entries with ``zoo.load``) and populations with
``load_population``.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_suite.errors import ConfigError
from jaxmarl_suite.evaluation.policy import first_episodes, mean_ci
from jaxmarl_suite.evaluation.stats import Interval

Array = jax.Array
Slot = tuple[str, int]
"""Where an agent's action goes: ``(group, index in the group's agent axis)``."""

OUTPUT_FILES = ("xplay.png", "xplay.json", "xplay.csv")


class Player(NamedTuple):
    """One trained seed, able to take either seat."""

    label: str
    """How the seed is named in the printed matrix and the files (``run g0 s1``)."""
    module: Any
    """The baseline module (``make_env``, ``make_policy``), or anything that provides those two."""
    config: Any
    """The baseline's ``Config``: seeds with equal modules and configs are vmapped together."""
    params: Any
    """What ``module.make_policy(config, env).act`` takes."""
    source: dict[str, Any]
    """Where it came from (``run_dir``, ``algorithm``, ``grid_index``, ``seed_index``, ``update``)."""


class CrossPlay(NamedTuple):
    """Per-episode returns of every (agent 0, agent 1) pair and their summaries."""

    players: list[Player]
    returns: np.ndarray
    """``[seeds (agent 0), seeds (agent 1), episodes]``: mean per-agent return of each episode."""
    seats: tuple[str, str]
    """The names of agent 0 and agent 1."""

    @property
    def matrix(self) -> np.ndarray:
        """``[seeds, seeds]``: mean over episodes; rows play agent 0, columns agent 1."""
        return self.returns.mean(-1)

    @property
    def self_play(self) -> Interval:
        """Mean of the diagonal with a 95% Student-t interval over its per-pair means."""
        return _interval(np.diag(self.matrix))

    @property
    def cross_play(self) -> Interval:
        """Mean of the off-diagonal entries with a 95% Student-t interval over their per-pair means."""
        matrix = self.matrix
        if len(matrix) < 2:  # one seed (xplay --partners): no pair of different seeds
            return Interval(math.nan, math.nan, math.nan)
        return _interval(matrix[~np.eye(len(matrix), dtype=bool)])


def _interval(values: np.ndarray) -> Interval:
    point, low, high = mean_ci(values)
    return Interval(point, low, high)


def seat_slots(env: Any) -> tuple[Slot, Slot]:
    """The slots of agent 0 and agent 1 (``env.agents`` order) in ``env``'s group arrays; an env without
    exactly two agents raises ``ConfigError``."""
    agents = list(env.agents)
    if len(agents) != 2:
        raise ConfigError(f"xplay: cross-play needs an env with exactly two agents (one per seat); this one "
                          f"has {len(agents)}: {', '.join(agents)}")
    slots = {name: (group, index) for group, names in env.groups.items() for index, name in enumerate(names)}
    return slots[agents[0]], slots[agents[1]]


def combine_seats(actions_0: dict[str, Array], actions_1: dict[str, Array],
                  slots: tuple[Slot, Slot]) -> dict[str, Array]:
    """Env actions (``{group: [B, n, ...]}``) taking agent 0's from ``actions_0`` and agent 1's from
    ``actions_1``: each policy acts for its whole group, and only its seat's slice is kept."""
    combined = dict(actions_0)
    for (group, index), source in zip(slots, (actions_0, actions_1), strict=True):
        combined[group] = combined[group].at[:, index].set(source[group][:, index])
    return combined


def _layout(env: Any) -> tuple[Any, ...]:
    return tuple((group, tuple(names), repr(env.observation_space(group)), repr(env.action_space(group)))
                 for group, names in env.groups.items())


class _PairBatch:
    """``num_pairs`` copies of a batched env of ``episodes`` envs, seen by ``first_episodes`` as one batch
    of ``num_pairs * episodes`` (pair-major). Every copy gets the same keys, so each pair plays exactly
    the episodes ``evaluate_policy`` would play with ``episodes`` envs."""

    def __init__(self, env: Any, num_pairs: int, episodes: int) -> None:
        self.env, self.num_pairs, self.episodes = env, num_pairs, episodes
        self.default_params = env.default_params

    def merge(self, tree: Any) -> Any:
        """``[pairs, episodes, ...]`` leaves to ``[pairs * episodes, ...]``."""
        size = self.num_pairs * self.episodes
        return jax.tree.map(lambda x: x.reshape(size, *x.shape[2:]), tree)

    def split(self, tree: Any) -> Any:
        """``[pairs * episodes, ...]`` leaves to ``[pairs, episodes, ...]``."""
        return jax.tree.map(lambda x: x.reshape(self.num_pairs, self.episodes, *x.shape[1:]), tree)

    def reset(self, key: Array, params: Any = None) -> tuple[Any, Any]:
        state, timestep = jax.vmap(lambda _: self.env.reset(key))(jnp.arange(self.num_pairs))
        return state, self.merge(timestep)

    def step(self, key: Array, state: Any, actions: Any, params: Any = None) -> tuple[Any, Any]:
        state, timestep = jax.vmap(lambda s, a: self.env.step(key, s, a))(state, self.split(actions))
        return state, self.merge(timestep)


def _stack(trees: Sequence[Any]) -> Any:
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


def _play_block(row_players: Sequence[Player], column_players: Sequence[Player], episodes: int, key: Array,
                deterministic: bool) -> tuple[np.ndarray, tuple[str, str]]:
    """``[rows, columns, episodes]`` returns of every pair of a row seed (agent 0) and a column seed
    (agent 1), where the rows share one module and config, and so do the columns: one compiled program.
    Also the two seats' agent names."""
    first, second = row_players[0], column_players[0]
    env = first.module.make_env(first.config, episodes)
    other_env = second.module.make_env(second.config, episodes)
    if _layout(other_env) != _layout(env):
        raise ConfigError(f"xplay: {first.label} and {second.label} see the env through different agent "
                          f"groups or spaces ({list(env.groups)} vs {list(other_env.groups)}; e.g. different "
                          "--param-sharing), so one cannot act on the other's timestep")
    slots = seat_slots(env)
    policy_0 = first.module.make_policy(first.config, env)
    policy_1 = second.module.make_policy(second.config, other_env)
    rows = np.repeat(np.arange(len(row_players)), len(column_players))
    columns = np.tile(np.arange(len(column_players)), len(row_players))
    params_0 = jax.tree.map(lambda x: x[rows], _stack([p.params for p in row_players]))
    params_1 = jax.tree.map(lambda x: x[columns], _stack([p.params for p in column_players]))
    pairs = _PairBatch(env, len(rows), episodes)

    def per_pair(tree: Any) -> Any:
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (len(rows), *x.shape)), tree)

    carry = (per_pair(policy_0.init_hidden(episodes)), per_pair(policy_1.init_hidden(episodes)))

    def act(carry: Any, timestep: Any, starts: Array, act_key: Array) -> tuple[Any, Any]:
        def one_pair(p0: Any, p1: Any, h0: Any, h1: Any, ts: Any, st: Array) -> tuple[Any, Any, Any]:
            # Both seats draw with the same key: their agents' draws come from different slots of it,
            # so they stay independent, and a seed paired with itself acts exactly as in `eval`.
            h0, actions_0 = policy_0.act(p0, h0, ts, st, act_key, deterministic)
            h1, actions_1 = policy_1.act(p1, h1, ts, st, act_key, deterministic)
            return h0, h1, combine_seats(actions_0, actions_1, slots)

        hidden_0, hidden_1 = carry
        hidden_0, hidden_1, actions = jax.vmap(one_pair)(params_0, params_1, hidden_0, hidden_1,
                                                         pairs.split(timestep), pairs.split(starts))
        return (hidden_0, hidden_1), pairs.merge(actions)

    returns, _ = first_episodes(pairs, act, carry, len(rows) * episodes, key)
    agents = list(env.agents)
    return returns.reshape(len(row_players), len(column_players), episodes), (agents[0], agents[1])


def cross_play(players: Sequence[Player], episodes: int, key: Array,
               deterministic: bool = False) -> CrossPlay:
    """Play ``episodes`` episodes (each env's first, as ``eval``) for every ordered pair of ``players``,
    the first of the pair as agent 0; seeds sharing a module and config play in one vmapped program."""
    if episodes < 1:
        raise ConfigError(f"xplay: episodes must be >= 1, got {episodes}")
    if len(players) < 2:
        raise ConfigError(f"xplay: cross-play needs at least two seeds, found {len(players)}")
    kinds = _kinds(players)
    returns = np.zeros((len(players), len(players), episodes))
    seats = ("", "")
    for rows in kinds:
        for columns in kinds:
            block, seats = _play_block([players[i] for i in rows], [players[j] for j in columns], episodes,
                                       key, deterministic)
            returns[np.ix_(rows, columns)] = block
    return CrossPlay(list(players), returns, seats)


def _kinds(players: Sequence[Player]) -> list[list[int]]:
    """Indices of ``players`` grouped by (module, config): each group plays in one compiled program."""
    kinds: list[list[int]] = []
    for index, player in enumerate(players):
        same = next((kind for kind in kinds if players[kind[0]].module is player.module
                     and players[kind[0]].config == player.config), None)
        if same is None:
            kinds.append([index])
        else:
            same.append(index)
    return kinds


class HeldOut(NamedTuple):
    """Every ego seed with every member of a held-out partner population, in both seats."""

    egos: list[Player]
    partners: list[Player]
    returns: np.ndarray
    """``[egos, partners, 2, episodes]``: mean per-agent return of each episode; seat 0 is the ego playing
    agent 0, seat 1 the ego playing agent 1."""

    @property
    def pair_means(self) -> np.ndarray:
        """``[egos, partners]``: each pair's mean over both seats and every episode."""
        return self.returns.mean((-2, -1))

    def per_partner(self) -> list[Interval]:
        """Each partner's mean over egos, seats and episodes, with a 95% Student-t interval over the
        per-(ego, seat) means (over the episodes when one ego plays)."""
        out = []
        for j in range(len(self.partners)):
            block = self.returns[:, j]
            values = block.reshape(-1) if len(self.egos) == 1 else block.mean(-1).reshape(-1)
            out.append(_interval(values))
        return out

    @property
    def overall(self) -> Interval:
        """The mean over every (ego, partner) pair with a 95% Student-t interval over the pair means."""
        return _interval(self.pair_means.reshape(-1))


def held_out_play(egos: Sequence[Player], partners: Sequence[Player], episodes: int, key: Array,
                  deterministic: bool = False) -> HeldOut:
    """Play ``episodes`` episodes of every ego with every partner, the ego as agent 0 and as agent 1, with
    the same keys as ``cross_play`` (a pair's entry is its cross-play entry in that seat order)."""
    if episodes < 1:
        raise ConfigError(f"xplay: episodes must be >= 1, got {episodes}")
    returns = np.zeros((len(egos), len(partners), 2, episodes))
    for rows in _kinds(egos):
        for columns in _kinds(partners):
            ego_rows = [egos[i] for i in rows]
            partner_columns = [partners[j] for j in columns]
            first, _ = _play_block(ego_rows, partner_columns, episodes, key, deterministic)
            second, _ = _play_block(partner_columns, ego_rows, episodes, key, deterministic)
            returns[np.ix_(rows, columns, [0])] = first[:, :, None]
            returns[np.ix_(rows, columns, [1])] = np.swapaxes(second, 0, 1)[:, :, None]
    return HeldOut(list(egos), list(partners), returns)


def load_partner_players(population_dir: str | Path) -> list[Player]:
    """The members of a population folder (``training.runner.experiment.load_population``) as players."""
    from jaxmarl_suite.training.runner.experiment import load_population

    population = load_population(Path(population_dir))
    config = population.experiment.config
    return [Player(f"{population.run_dir.name} {member['name']}", population.module, config,
                   jax.tree.map(lambda x, i=index: x[i], population.params),
                   {"run_dir": str(population.run_dir), "algorithm": population.experiment.algorithm,
                    **{k: member[k] for k in ("grid_index", "seed_index", "update", "checkpoint")}})
            for index, member in enumerate(population.members)]


def format_held_out(result: HeldOut, title: str = "held-out partners") -> str:
    """The per-partner table and the overall held-out score, each with its 95% interval."""
    lines = [f"{title}: {len(result.egos)} ego seed(s) x {len(result.partners)} partner(s), both seats, "
             f"{result.returns.shape[-1]} episodes per seat",
             "partner: mean per-agent episode return with the egos (95% CI)"]
    width = max(len(p.label) for p in result.partners)
    for partner, interval in zip(result.partners, result.per_partner(), strict=True):
        lines.append(f"  {partner.label.ljust(width)}  {interval.point:9.3f}  ({interval.low:.3f} .. "
                     f"{interval.high:.3f})")
    overall = result.overall
    lines.append(f"held-out ({result.pair_means.size} ego-partner pairs): mean {overall.point:.3f} (95% CI "
                 f"{overall.low:.3f} .. {overall.high:.3f}, Student t over the per-pair means)")
    return "\n".join(lines)


def held_out_data(result: HeldOut) -> dict[str, Any]:
    """``xplay.json``'s ``held_out`` section: partners, per-partner and overall intervals, the pair means
    and every episode's return."""
    pairs = result.pair_means.size
    return {
        "statistic": "mean per-agent episode return of an ego seed with a held-out partner, both seats",
        "partners": [{"index": j, "label": p.label, **p.source, **_plain(interval, len(result.egos) * 2)}
                     for j, (p, interval) in enumerate(zip(result.partners, result.per_partner(),
                                                           strict=True))],
        "overall": _plain(result.overall, pairs),
        "pair_means": result.pair_means.tolist(),
        "episode_returns": result.returns.tolist(),
        "episode_returns_axes": ["ego seed", "partner", "ego seat (0: agent 0)", "episode"],
    }


def identical_seeds(players: Sequence[Player]) -> list[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of seeds with the same module and config and the same parameters up to
    float rounding (a run trained twice with one base seed, vmapped over different seed counts, differs
    in the last bits): their cross-play entries are really self-play."""
    leaves = [jax.tree.leaves(p.params) for p in players]
    return [(i, j) for i in range(len(players)) for j in range(i + 1, len(players))
            if players[i].module is players[j].module and players[i].config == players[j].config
            and len(leaves[i]) == len(leaves[j])
            and all(np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=1e-5, atol=1e-6)
                    for a, b in zip(leaves[i], leaves[j], strict=True))]


def _env_identity(config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The canonical env id and every constructor argument (defaults included), so an alias or an
    argument spelled out at its default is the same env."""
    from jaxmarl_suite.core.registry import env_spec

    env_id, kwargs = config.get("env_id"), dict(config.get("env_kwargs") or {})
    try:
        spec = env_spec(str(env_id))
    except ValueError:
        return str(env_id), kwargs
    return spec.env_id, {**spec.kwargs, **kwargs}


def _is_output_folder(path: Path) -> bool:
    """A folder an earlier ``xplay`` or ``report`` wrote beside the runs (so ``xplay runs/*`` works again)."""
    from jaxmarl_suite.training.runner.run_folder import is_run_dir

    return not is_run_dir(path) and ((path / "xplay.json").is_file() or (path / "report.md").is_file())


def default_out_dir(run_dirs: Sequence[str | Path]) -> Path:
    """``xplay/`` in the deepest folder holding every run folder, like ``report``'s; never inside a run
    folder: for a single run folder (or folders inside one) it is ``xplay_<run>/`` beside it. Zoo entries
    (``zoo:NAME``) place nothing: with no run folder the output goes to the working directory,
    ``xplay_<entry>/`` for one entry, else ``xplay/``; never into the installed package."""
    folders = [d for d in run_dirs if zoo_name(d) is None]
    if run_dirs and not folders:
        names = [zoo_name(d) for d in run_dirs]
        return Path(f"xplay_{names[0]}") if len(set(names)) == 1 else Path("xplay")
    run_dirs = folders
    if not run_dirs:
        raise ConfigError("xplay: no run folders given")
    common = Path(os.path.commonpath([Path(d).resolve() for d in run_dirs]))
    from jaxmarl_suite.training.runner.run_folder import is_run_dir

    runs = [folder for folder in (common, *common.parents) if is_run_dir(folder)]
    if runs:
        return runs[-1].parent / f"xplay_{runs[-1].name}"
    if common == Path(common.anchor):
        raise ConfigError(f"xplay: the run folders share no parent folder but {common}; pass --out")
    return common / "xplay"


def zoo_name(source: str | Path) -> str | None:
    """The entry name of a ``zoo:NAME`` argument, else None (a folder)."""
    from jaxmarl_suite.zoo import resolve

    return resolve(str(source)) if isinstance(source, str) else None


def _source_folder(source: str | Path) -> Path:
    """A run folder, or a zoo entry's folder (whose ``config.yaml`` is a run's)."""
    name = zoo_name(source)
    if name is None:
        return Path(source).resolve()
    from jaxmarl_suite.zoo import entry_folder

    return entry_folder(name)


def zoo_player(name: str) -> Player:
    """Model-zoo entry ``name`` as one seed."""
    from jaxmarl_suite.zoo import load

    module, experiment, params, meta = load(name)
    return Player(f"zoo:{name}", module, experiment.config, params,
                  {"zoo": name, "algorithm": experiment.algorithm, "grid_index": 0, "seed_index": 0,
                   "update": None, "command": meta.get("command")})


def load_players(run_dirs: Sequence[str | Path], min_seeds: int = 2) -> list[Player]:
    """Every (run folder, grid point, seed) of ``run_dirs`` as a ``Player`` (a ``zoo:NAME`` string is one
    seed, the entry's policy), after checking (before any checkpoint is loaded) that the runs share one
    env with exactly two agents and hold ``min_seeds`` seeds or more. Each check raises ``ConfigError``
    naming what is wrong."""
    from jaxmarl_suite.core.registry import make
    from jaxmarl_suite.training.runner.experiment import load_policy
    from jaxmarl_suite.training.runner.run_folder import read_run_config

    # a folder or entry given twice is one set
    paths = list(dict.fromkeys(d if zoo_name(d) else Path(d).resolve() for d in run_dirs))
    if not paths:
        raise ConfigError("xplay: no run folders given")
    configs = {path: read_run_config(_source_folder(path)) for path in paths}
    identities = {path: _env_identity(configs[path]["config"]) for path in paths}
    first = paths[0]
    for path in paths[1:]:
        if identities[path] != identities[first]:
            (id_a, kwargs_a), (id_b, kwargs_b) = identities[first], identities[path]
            raise ConfigError(f"xplay: the runs were trained on different envs: {first} on {id_a} "
                              f"{kwargs_a}, {path} on {id_b} {kwargs_b}; cross-play needs one env and its "
                              "arguments")
    env_id, kwargs = identities[first]
    try:
        env = make(env_id, **kwargs)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"xplay: cannot build {env_id} {kwargs}: {error}") from error
    if len(env.agents) != 2:
        raise ConfigError(f"xplay: cross-play needs an env with exactly two agents (one per seat); {env_id} "
                          f"has {len(env.agents)}: {', '.join(env.agents)}")
    # a zoo entry holds its run's first seed only
    points = [(path, grid, seed) for path in paths for grid in range(len(configs[path]["grid"]))
              for seed in range(int(configs[path]["num_seeds"]) if zoo_name(path) is None else 1)]
    if len(points) < min_seeds:
        raise ConfigError(f"xplay: cross-play needs at least two seeds, found {len(points)} in "
                          f"{', '.join(map(str, paths))}; train with --seeds 2 or more, or give more run "
                          "folders or zoo:NAME entries, or play held-out partners with --partners")
    players = []
    for path, grid, seed in points:
        name = zoo_name(path)
        if name is not None:
            players.append(zoo_player(name))
            continue
        assert isinstance(path, Path)
        module, experiment, params, meta = load_policy(path, grid, seed)
        players.append(Player(f"{path.name} g{grid} s{seed}", module, experiment.config, params,
                              {"run_dir": str(path), "algorithm": experiment.algorithm, "grid_index": grid,
                               "seed_index": seed, "update": meta.get("update")}))
    return players


def format_cross_play(result: CrossPlay, title: str = "cross-play") -> str:
    """The printed matrix under ``title``, its legend, and the self-play and cross-play means with their
    intervals."""
    matrix, count = result.matrix, len(result.players)
    lines = [f"{title}: {count} seeds, {result.returns.shape[-1]} episodes per pair",
             f"rows: the seed playing agent 0 ({result.seats[0]}); columns: agent 1 ({result.seats[1]}); "
             "entries: mean per-agent episode return", "seeds:"]
    for index, player in enumerate(result.players):
        update = player.source.get("update")
        lines.append(f"  [{index}] {player.label}" + (f" (update {update})" if update is not None else ""))
    width = max(9, *(len(f"{v:.3f}") + 1 for v in matrix.ravel()))
    lines.append(" " * 6 + "".join(f"[{j}]".rjust(width) for j in range(count)))
    for i, row in enumerate(matrix):
        lines.append(f"[{i}]".rjust(6) + "".join(f"{value:.3f}".rjust(width) for value in row))
    summaries = (("self-play ", result.self_play, count, "diagonal"),
                 ("cross-play", result.cross_play, count * (count - 1), "off-diagonal"))
    for name, interval, pairs, where in summaries:
        lines.append(f"{name} ({where}, {pairs} pairs): mean {interval.point:.3f} (95% CI "
                     f"{interval.low:.3f} .. {interval.high:.3f}, Student t over the per-pair means)")
    return "\n".join(lines)


def _plain(interval: Interval, pairs: int) -> dict[str, Any]:
    def number(value: float) -> float | None:
        return None if math.isnan(value) else float(value)

    return {"mean": number(interval.point), "ci_low": number(interval.low), "ci_high": number(interval.high),
            "pairs": pairs}


def write_cross_play(result: CrossPlay, out_dir: str | Path,
                     info: dict[str, Any] | None = None) -> list[Path]:
    """Write ``xplay.png`` (heatmap), ``xplay.json`` (matrix, per-episode returns, intervals, seeds and
    ``info``) and ``xplay.csv`` (the matrix) into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    matrix, count = result.matrix, len(result.players)
    labels = [player.label for player in result.players]
    data = {
        **(info or {}),
        "statistic": "mean per-agent episode return (each env's first episode)",
        "rows": f"the seed playing agent 0 ({result.seats[0]})",
        "columns": f"the seed playing agent 1 ({result.seats[1]})",
        "seeds": [{"index": i, "label": p.label, **p.source} for i, p in enumerate(result.players)],
        "matrix": matrix.tolist(),
        "self_play": _plain(result.self_play, count),
        "cross_play": _plain(result.cross_play, count * (count - 1)),
        "interval": "95% Student t over the per-pair means",
        "episode_returns": result.returns.tolist(),
    }
    json_path = out / "xplay.json"
    json_path.write_text(json.dumps(data, indent=1))
    csv_path = out / "xplay.csv"
    with csv_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f"agent 0 \\ agent 1 ({result.seats[0]} \\ {result.seats[1]})", *labels])
        for label, row in zip(labels, matrix, strict=True):
            writer.writerow([label, *(f"{value:.6g}" for value in row)])
    png_path = _heatmap(result, out / "xplay.png", str((info or {}).get("env_id", "")))
    return [png_path, json_path, csv_path]


def _heatmap(result: CrossPlay, path: Path, env_id: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    matrix, count = result.matrix, len(result.players)
    size = min(4.0 + 0.6 * count, 16.0)
    figure, axes = plt.subplots(figsize=(size + 1.5, size), dpi=100)
    image = axes.imshow(matrix, cmap="viridis")
    figure.colorbar(image, ax=axes, label="mean per-agent episode return")
    if count <= 20:  # beyond that the numbers are unreadable; the colours still show the structure
        middle = (np.nanmax(matrix) + np.nanmin(matrix)) / 2
        for i in range(count):
            for j in range(count):
                axes.text(j, i, f"{matrix[i, j]:.3g}", ha="center", va="center", fontsize=8,
                          color="black" if matrix[i, j] > middle else "white")
    for i in range(count):  # outline the self-play cells
        axes.add_patch(Rectangle((i - 0.46, i - 0.46), 0.92, 0.92, fill=False, edgecolor="red", lw=1.5))
    labels = [f"[{i}] {p.label}" for i, p in enumerate(result.players)]
    axes.set_xticks(range(count), labels, rotation=45, ha="right", fontsize=7)
    axes.set_yticks(range(count), labels, fontsize=7)
    axes.set_xlabel(f"seed playing agent 1 ({result.seats[1]})")
    axes.set_ylabel(f"seed playing agent 0 ({result.seats[0]})")
    sp, xp = result.self_play, result.cross_play
    axes.set_title(f"cross-play{' on ' + env_id if env_id else ''}\nself-play (outlined) {sp.point:.3g} "
                   f"[{sp.low:.3g}, {sp.high:.3g}], cross-play {xp.point:.3g} [{xp.low:.3g}, {xp.high:.3g}]",
                   fontsize=9)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path


class XPlayOutput(NamedTuple):
    """What ``run_cross_play`` computed and wrote."""

    result: CrossPlay
    out_dir: Path
    files: list[Path]
    skipped: list[Path]
    """Folders given that hold an earlier ``xplay`` or ``report`` rather than a run."""
    notes: list[str]
    """Warnings, such as seeds with identical parameters."""
    text: str
    """The printed summary."""
    held_out: HeldOut | None = None
    """The egos with the held-out partners (``partners``), else None."""


def run_cross_play(run_dirs: Sequence[str | Path], out_dir: str | Path | None = None, *, episodes: int = 32,
                   seed: int = 0, deterministic: bool = False,
                   partners: str | Path | None = None) -> XPlayOutput:
    """Cross-play every seed of ``run_dirs`` (``load_players``), write the heatmap, JSON and CSV into
    ``out_dir`` (default ``default_out_dir``) and return them with the printed summary. ``seed`` keys the
    rollouts as ``eval --seed`` does; ``deterministic`` takes each policy's most likely action. With
    ``partners`` (a population folder trained on the same env with other seeds, or ``zoo:NAME``, one
    partner) every seed also plays each
    member in both seats (``held_out_play``); one ego seed is then enough, and ``held_out.csv`` is
    written too."""
    if episodes < 1:  # before any checkpoint is loaded
        raise ConfigError(f"xplay: episodes must be >= 1, got {episodes}")
    given = [d if zoo_name(d) else Path(d) for d in run_dirs]
    skipped = [path for path in given if isinstance(path, Path) and _is_output_folder(path)]
    paths = [path for path in given if path not in skipped]
    if not paths:
        only = f" (only earlier outputs: {', '.join(map(str, skipped))})" if skipped else ""
        raise ConfigError(f"xplay: no run folders given{only}")
    out = Path(out_dir) if out_dir is not None else default_out_dir(paths)
    players = load_players(paths, min_seeds=1 if partners is not None else 2)
    key = jax.random.PRNGKey(seed)
    partner_players: list[Player] = []
    if partners is not None:
        from jaxmarl_suite.training.runner.run_folder import read_run_config

        theirs = _env_identity(read_run_config(_source_folder(partners))["config"])
        ours = _env_identity({"env_id": players[0].config.env_id, "env_kwargs": players[0].config.env_kwargs})
        if theirs != ours:
            raise ConfigError(f"xplay: the partners in {partners} were trained on {theirs[0]} {theirs[1]}, "
                              f"the egos on {ours[0]} {ours[1]}; held-out play needs one env and its "
                              "arguments")
        name = zoo_name(partners)
        partner_players = [zoo_player(name)] if name is not None else load_partner_players(partners)
    if len(players) >= 2:
        result = cross_play(players, episodes, key, deterministic)
    else:  # one ego seed: its self-play only
        block, seats = _play_block(players, players, episodes, key, deterministic)
        result = CrossPlay(list(players), block, seats)
    held_out = None
    if partner_players:
        held_out = held_out_play(players, partner_players, episodes, key, deterministic)
    config = players[0].config
    env_id = str(config.env_id)
    notes = [f"seeds [{i}] and [{j}] have the same parameters (trained with the same seed?): their "
             "cross-play entries are self-play" for i, j in identical_seeds(players)]
    info = {"env_id": env_id, "env_kwargs": dict(config.env_kwargs), "episodes": episodes, "seed": seed,
            "deterministic": deterministic, "notes": notes}
    if held_out is not None and partners is not None:
        where = str(partners) if zoo_name(partners) else str(Path(partners).resolve())
        info["held_out"] = {"partners_dir": where, **held_out_data(held_out)}
    files = write_cross_play(result, out, info)
    actions = "greedy" if deterministic else "sampled"
    text = format_cross_play(result, f"cross-play on {env_id} ({actions} actions, --seed {seed})")
    if held_out is not None:
        files.append(_write_held_out_csv(held_out, out / "held_out.csv"))
        text = "\n".join([text, format_held_out(held_out, f"held-out partners from {partners}")])
    text = "\n".join([text, *(f"note: {note}" for note in notes)])
    return XPlayOutput(result, out, files, skipped, notes, text, held_out)


def _write_held_out_csv(result: HeldOut, path: Path) -> Path:
    """One row per partner: its label, mean return with the egos and 95% interval, then the overall row."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["partner", "mean_return", "ci_low", "ci_high"])
        for partner, interval in zip(result.partners, result.per_partner(), strict=True):
            writer.writerow([partner.label, *(f"{v:.6g}" for v in interval)])
        writer.writerow(["overall", *(f"{v:.6g}" for v in result.overall)])
    return path
