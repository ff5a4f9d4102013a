"""Measure the reference scores that ``jaxmarl-suite report`` normalises by, and write them to
``jaxmarl_suite/evaluation/reference_scores.yaml``.

    python scripts/reference_scores.py                       # every registered env's random score
    python scripts/reference_scores.py --envs SMAX_3m        # only these (the others are kept)
    python scripts/reference_scores.py --train-ippo MPE_simple_reference_v3 MPE_simple_line_v1

- **random**: ``measure_random_score``, a uniformly random legal policy, ``--episodes`` episodes (each of
  as many parallel envs plays its first one), mean per-agent return as training logs it, and its
  standard error. Re-measured for every env named (default: every registered env). Multi-agent MuJoCo is
  measured on its reference engine instead (``random_on_reference_engine``): MJX on a CPU runs a
  1,000-step episode about 25 times slower than MuJoCo's C engine, and the family is parity-tested against
  that engine; ``tests/evaluation/test_reference.py`` checks our env's live random score against the
  stored one on two tasks.
- **strong**, kept from the file unless this run sets it:
  - SMAX: the largest per-agent return, ``reward_scale`` of the env's params (20): SMAC scales its
    reward so that a win that loses no unit sums to it, and each living agent gets the team's reward.
  - ``--train-ippo ENV...``: trains our IPPO with the recipe below (``--seeds`` seeds vmapped in one
    program) and records the median over seeds of each seed's final score (``final_score``: the mean
    ``return_mean`` over the last 10% of logged updates). Use it on cooperative envs only; a competitive
    env's per-agent mean adds up opposing teams and has no single strong score.
  - The others were written into the file by hand, each with its source (Hanabi's perfect score, the
    Overcooked layouts' published PPO self-play scores, the scripted and oracle scores): kept as they are.

Nothing here touches the network. The file's header says how the numbers were made.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from jaxmarl_suite.core.registry import env_spec, make, registered_envs
from jaxmarl_suite.evaluation.reference import REFERENCE_FILE, load_reference_scores, measure_random_score

IPPO_RECIPE = {
    "num-envs": 16, "num-steps": 128, "update-epochs": 4, "num-minibatches": 4, "hidden-sizes": "[64,64]",
    "activation": "tanh", "param-sharing": "group", "lr": 0.001, "gamma": 0.99, "gae-lambda": 0.95,
    "clip-eps": 0.2, "ent-coef": 0.01, "vf-coef": 0.5, "max-grad-norm": 0.5,
}
"""IPPO settings of ``--train-ippo``: JaxMARL's IPPO-FF MPE setup with lr 1e-3 (annealed over the run)."""

HEADER = """\
# Reference scores per env: mean per-agent episode return (training's `return_mean`).
# Written by scripts/reference_scores.py; see jaxmarl_suite/evaluation/reference.py and docs/evaluation.md.
#   random: a uniformly random legal policy, env defaults, {episodes} episodes per env (one per parallel
#           env), seed {seed}; random_sem is its standard error. Measured {date}.
#   strong: a documented strong score and its source (strong_source), or null where there is none
#           (competitive envs, and envs nobody has trained yet).
"""


def smax_strong(env_id: str) -> tuple[float, str] | None:
    """SMAX's largest per-agent return (``reward_scale``), or None for other envs."""
    if not env_id.startswith("SMAX"):
        return None
    scale = float(make(env_id).default_params.reward_scale)
    return scale, (f"the largest per-agent return, reward_scale = {scale:g}: a win that loses no unit "
                   f"(SMAC's reward scaling; environments/smax/README.md). An upper bound, not a trained "
                   f"score")


_ROBOT_RETURNS: dict[tuple[str, str | None, int, int], np.ndarray] = {}


def random_on_reference_engine(env_id: str, episodes: int, seed: int) -> np.ndarray:
    """Per-agent returns of ``episodes`` uniformly random episodes of a MaMuJoCo env, played on
    Gymnasium-Robotics' ``mamujoco_v1`` (the Gymnasium v5 env under it, with its time limit, on MuJoCo's C
    engine). Every agent gets the team's reward, so an agent's return is the episode's, and the partitions
    of one robot (HalfCheetah 2x3 and 6x1) share one measurement."""
    from gymnasium_robotics import mamujoco_v1

    env = make(env_id)
    # a many-segment robot's partition also sets its body: the model differs per agent_conf
    robot = (env.scenario, env.agent_conf if env.scenario.startswith("ManySegment") else None, episodes, seed)
    if robot in _ROBOT_RETURNS:
        return _ROBOT_RETURNS[robot].copy()
    single = mamujoco_v1.parallel_env(env.scenario, env.agent_conf).single_agent_env  # v5 in its TimeLimit
    rng = np.random.default_rng(seed)
    low, high = single.action_space.low, single.action_space.high
    returns = np.zeros(episodes)
    for episode in range(episodes):
        single.reset(seed=seed * episodes + episode)
        while True:
            action = rng.uniform(low, high).astype(single.action_space.dtype)
            _, reward, terminated, truncated, _ = single.step(action)
            returns[episode] += reward
            if terminated or truncated:
                break
    _ROBOT_RETURNS[robot] = returns
    return returns.copy()


def train_ippo(env_id: str, seeds: int, total_timesteps: int) -> tuple[float, str]:
    """Train IPPO with ``IPPO_RECIPE`` and return the median final score over seeds and its source line."""
    from jaxmarl_suite.baselines import ippo
    from jaxmarl_suite.training.runner.logger import FINAL_FRACTION, final_score, read_metrics

    with tempfile.TemporaryDirectory() as run_dir:
        flags = [f"--{k}={v}" for k, v in IPPO_RECIPE.items()]
        flags += ["--env", env_id, "--seeds", str(seeds), "--total-timesteps", str(total_timesteps),
                  "--run-dir", run_dir, "--overwrite", "--wandb", "disabled", "--no-progress",
                  "--log-every", "1"]
        status = ippo.main(flags)
        if status != 0:
            raise RuntimeError(f"IPPO on {env_id} exited with status {status}")
        rows = read_metrics(Path(run_dir))
    rows.sort(key=lambda r: r["update"])
    finals = [final_score([r["return_mean"] for r in rows if int(r["seed"]) == seed], FINAL_FRACTION)
              for seed in range(seeds)]
    strong = round(float(np.median(finals)), 4)
    source = (f"ours: IPPO with IPPO_RECIPE of scripts/reference_scores.py (JaxMARL's IPPO-FF MPE setup, "
              f"lr 1e-3, entropy 0.01), {seeds} seeds x {total_timesteps:.3g} env steps; the median of the "
              f"seeds' final scores ({', '.join(f'{f:.2f}' for f in finals)}); "
              f"{_dt.date.today().isoformat()}")
    return strong, source


def read_comments(path: Path) -> tuple[str | None, dict[str, str]]:
    """The file's leading comment block, and each entry's comment lines (those right above its key), so
    that a rewrite keeps what was written by hand; ``(None, {})`` when there is no file."""
    if not path.is_file():
        return None, {}
    header: str | None = None
    before: dict[str, str] = {}
    pending: list[str] = []
    for line in path.read_text().splitlines(keepends=True):
        if line.startswith("#"):
            pending.append(line)
        elif line[:1] not in ("", " ", "\n") and ":" in line:  # a top-level key
            if header is None:
                header, pending = "".join(pending), []
            key = yaml.safe_load(line)  # "ENV_ID:" alone reads as {ENV_ID: None}
            if isinstance(key, dict):
                before[str(next(iter(key)))] = "".join(pending)
            pending = []
    return header, before


def write_file(path: Path, entries: dict[str, dict[str, Any]], *, episodes: int, seed: int) -> None:
    """Write ``entries`` in registry order, then read the file back to check it. Comments already in the
    file (its header, and the lines above an entry) are kept; a new file gets ``HEADER``."""
    header, before = read_comments(path)
    if not header:
        header = HEADER.format(episodes=episodes, seed=seed, date=_dt.date.today().isoformat())
    dump = lambda env_id, entry: yaml.safe_dump(  # noqa: E731
        {env_id: entry}, sort_keys=False, width=110, allow_unicode=True)
    body = "".join(before.get(env_id, "") + dump(env_id, entry) for env_id, entry in entries.items())
    path.write_text(header + body)
    load_reference_scores(path)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=None,
                        help="envs to re-measure (default: all registered)")
    parser.add_argument("--episodes", type=int, default=2048, help="random-policy episodes per env")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random rollouts")
    parser.add_argument("--train-ippo", nargs="+", default=[], metavar="ENV",
                        help="also train IPPO on these envs and record their strong scores")
    parser.add_argument("--seeds", type=int, default=4, help="IPPO seeds per env (--train-ippo)")
    parser.add_argument("--total-timesteps", type=float, default=2e6, help="IPPO env steps per seed")
    parser.add_argument("--out", type=Path, default=REFERENCE_FILE, help="file to write")
    args = parser.parse_args(argv)

    ids = registered_envs()
    unknown = [e for e in [*(args.envs or []), *args.train_ippo] if e not in ids]
    if unknown:
        parser.error(f"not registered env ids: {unknown}")
    old: dict[str, dict[str, Any]] = {}
    if args.out.is_file():
        old = {k: {key: getattr(v, key) for key in ("random", "random_sem", "random_episodes", "strong",
                                                   "strong_source")}
               for k, v in load_reference_scores(args.out).items()}
    measure = args.envs or ids
    entries: dict[str, dict[str, Any]] = {}
    for env_id in ids:
        entry = dict(old.get(env_id, {"strong": None, "strong_source": None}))
        if env_id in measure:
            if env_spec(env_id).family == "mamujoco":
                returns = random_on_reference_engine(env_id, args.episodes, args.seed)
            else:
                returns = measure_random_score(env_id, args.episodes, args.seed)
            sem = float(returns.std(ddof=1) / math.sqrt(returns.size))
            entry.update(random=round(float(returns.mean()), 4), random_sem=round(sem, 4),
                         random_episodes=int(returns.size))
            print(f"{env_id:32s} random {entry['random']:10.4f} ± {sem:.4f} ({returns.size} episodes)",
                  flush=True)
        smax = smax_strong(env_id)
        if smax is not None:
            entry["strong"], entry["strong_source"] = smax
        if env_id in args.train_ippo:
            strong = train_ippo(env_id, args.seeds, int(args.total_timesteps))
            entry["strong"], entry["strong_source"] = strong
            print(f"{env_id:32s} strong {entry['strong']:10.4f} ({entry['strong_source']})", flush=True)
        if "random" not in entry:
            continue  # neither in the file nor measured now
        entries[env_id] = {key: entry[key] for key in ("random", "random_sem", "random_episodes", "strong",
                                                       "strong_source")}
    write_file(args.out, entries, episodes=args.episodes, seed=args.seed)
    print(f"wrote {args.out} (its comments kept: update the dates they state for what you re-measured)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
