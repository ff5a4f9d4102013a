"""Run JaxMARL's own baseline scripts on jaxmarl_suite envs, with only their ``make`` call changed.

Each script is loaded from a JaxMARL checkout given by path (the scripts are not in JaxMARL's pip package).
One name in it is replaced: the one it builds its env with (``make``, ``jaxmarl.make`` or
``HeuristicEnemySMAX``) now returns ``to_jaxmarl(jaxmarl_suite.make(name, **kwargs))`` for the same name
and keyword arguments. Nothing else in the script changes. Each run reads the script's own YAML config,
with a short budget on top: one seed, a few envs, a few updates, small replay buffers and test batches
(``short_budget``). The entry point is the script's ``make_train`` (its env built by its own
``env_from_config`` where it has one), or its ``main`` where only ``main`` builds the env (SHAQ), called
with the config directly instead of through hydra's command line. Every run is a subprocess, so a crash
or a hang cannot affect the next; the table says ``ok`` or the error.

    python scripts/run_jaxmarl_baselines.py /tmp/JaxMARL                    # every script, ours
    python scripts/run_jaxmarl_baselines.py /tmp/JaxMARL --reference        # the same on JaxMARL's envs
    python scripts/run_jaxmarl_baselines.py /tmp/JaxMARL --compare          # both, side by side
    python scripts/run_jaxmarl_baselines.py /tmp/JaxMARL --only "IQL (RNN)" --markdown table.md

The scripts' imports must be installed: jaxmarl, hydra-core, omegaconf, flashbax, wandb (offline: runs
use ``WANDB_MODE=disabled``), distrax and safetensors. docs/compat.md holds the measured table.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Run:
    """One baseline script with one of its configs."""

    name: str
    """Row label, e.g. ``IQL (RNN)``."""
    script: str
    """Path under the checkout's ``baselines/``."""
    config: str
    """The script's YAML config, under ``baselines/``."""
    kind: str
    """``ppo`` (``make_train(config)``), ``q`` (``env_from_config`` + ``make_train(config, env)``);
    ``qflat``, ``pqn`` and ``transf`` as ``q`` with their own budget keys; ``shaq`` (``main(config)``)."""
    env: str
    """``MPE``, ``FACMAC``, ``SMAX``, ``Overcooked`` or ``Hanabi``, for the table."""


QL = "QLearning/config/alg"
MAPPO = "MAPPO/config/mappo_homogenous"
RUNS = (
    Run("IPPO (FF)", "IPPO/ippo_ff_mpe.py", "IPPO/config/ippo_ff_mpe.yaml", "ppo", "MPE"),
    Run("IPPO (RNN)", "IPPO/ippo_rnn_mpe.py", "IPPO/config/ippo_rnn_mpe.yaml", "ppo", "MPE"),
    Run("IPPO (RNN)", "IPPO/ippo_rnn_smax.py", "IPPO/config/ippo_rnn_smax.yaml", "ppo", "SMAX"),
    Run("IPPO (FF)", "IPPO/ippo_ff_mpe_facmac.py", "IPPO/config/ippo_ff_mpe_facmac.yaml", "ppo", "FACMAC"),
    Run("IPPO (FF)", "IPPO/ippo_ff_overcooked.py", "IPPO/config/ippo_ff_overcooked.yaml", "ppo",
        "Overcooked"),
    Run("IPPO (CNN)", "IPPO/ippo_cnn_overcooked.py", "IPPO/config/ippo_cnn_overcooked.yaml", "ppo",
        "Overcooked"),
    Run("IPPO (FF)", "IPPO/ippo_ff_hanabi.py", "IPPO/config/ippo_ff_hanabi.yaml", "ppo", "Hanabi"),
    Run("MAPPO (RNN)", "MAPPO/mappo_rnn_mpe.py", f"{MAPPO}_rnn_mpe.yaml", "ppo", "MPE"),
    Run("MAPPO (RNN)", "MAPPO/mappo_rnn_smax.py", f"{MAPPO}_rnn_smax.yaml", "ppo", "SMAX"),
    Run("IQL (RNN)", "QLearning/iql_rnn.py", f"{QL}/ql_rnn_mpe.yaml", "q", "MPE"),
    Run("IQL (RNN)", "QLearning/iql_rnn.py", f"{QL}/ql_rnn_smax.yaml", "q", "SMAX"),
    Run("VDN (FF)", "QLearning/vdn_ff.py", f"{QL}/vdn_ff_mpe.yaml", "qflat", "MPE"),
    Run("VDN (RNN)", "QLearning/vdn_rnn.py", f"{QL}/ql_rnn_mpe.yaml", "q", "MPE"),
    Run("VDN (RNN)", "QLearning/vdn_rnn.py", f"{QL}/ql_rnn_smax.yaml", "q", "SMAX"),
    Run("QMIX (RNN)", "QLearning/qmix_rnn.py", f"{QL}/ql_rnn_mpe.yaml", "q", "MPE"),
    Run("QMIX (RNN)", "QLearning/qmix_rnn.py", f"{QL}/ql_rnn_smax.yaml", "q", "SMAX"),
    Run("PQN-VDN (FF)", "QLearning/pqn_vdn_ff.py", f"{QL}/pqn_vdn_ff_mpe.yaml", "pqn", "MPE"),
    Run("PQN-VDN (RNN)", "QLearning/pqn_vdn_rnn.py", f"{QL}/pqn_vdn_rnn_mpe.yaml", "pqn", "MPE"),
    Run("PQN-VDN (RNN)", "QLearning/pqn_vdn_rnn.py", f"{QL}/pqn_vdn_rnn_smax.yaml", "pqn", "SMAX"),
    Run("TransfQMix", "QLearning/transf_qmix.py", f"{QL}/transf_qmix_mpe.yaml", "transf", "MPE"),
    Run("TransfQMix", "QLearning/transf_qmix.py", f"{QL}/transf_qmix_smax.yaml", "transf", "SMAX"),
    Run("SHAQ", "QLearning/shaq.py", f"{QL}/shaq_mpe.yaml", "shaq", "MPE"),
    Run("SHAQ", "QLearning/shaq.py", f"{QL}/shaq_smax.yaml", "shaq", "SMAX"),
)

SHAQ_ENVS = {
    # shaq.py reads ENV_NAME (and for SMAX MAP_NAME and ENV_KWARGS) from the top level of its config, and
    # its two configs have none: JaxMARL's README gives no SHAQ command either. These are the env fields of
    # the sibling ql_rnn_* configs (the same Q-learning family's MPE and SMAX tasks).
    "shaq_mpe.yaml": f"{QL}/ql_rnn_mpe.yaml",
    "shaq_smax.yaml": f"{QL}/ql_rnn_smax.yaml",
}
ENV_FIELDS = ("ENV_NAME", "MAP_NAME", "ENV_KWARGS")


def run_id(run: Run) -> str:
    """A stable id for ``--only``: ``script:config-stem``."""
    return f"{Path(run.script).stem}:{Path(run.config).stem}"


def read_yaml(path: Path) -> dict[str, Any]:
    """A config file as hydra reads it: OmegaConf's YAML (``5e-4`` is a float there, a string to PyYAML),
    interpolations such as ``${oc.env:WANDB_ENTITY}`` left unresolved (nothing here reads them)."""
    from omegaconf import OmegaConf

    container = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    assert isinstance(container, dict), f"{path} is not a mapping"
    return {str(key): value for key, value in container.items()}


def load_config(root: Path, run: Run) -> dict[str, Any]:
    """The run's config as the script sees it: the YAML (for Q-learning merged over the common
    ``QLearning/config/config.yaml`` and also kept under ``alg``, as hydra's ``+alg=...`` composes it)."""
    baselines = root / "baselines"
    config = read_yaml(baselines / run.config)
    if run.kind != "ppo":
        common = read_yaml(baselines / "QLearning/config/config.yaml")
        config = {**common, **config, "alg": dict(config)}
    if run.kind == "shaq":
        sibling = read_yaml(baselines / SHAQ_ENVS[Path(run.config).name])
        config.update({key: sibling[key] for key in ENV_FIELDS if key in sibling})
    return config


def short_budget(config: dict[str, Any], kind: str) -> dict[str, Any]:
    """The config with a smoke-test budget: one seed, 4 envs (PQN: one per minibatch), 4 updates (PPO 2),
    learning from the first rollout on, replay buffers of 8 rollouts, 4 test episodes, a test mid-run.
    Only keys the config already has are changed (besides the totals every script reads)."""
    config = copy.deepcopy(config)
    config.update(NUM_SEEDS=1, WANDB_MODE="disabled", SAVE_PATH=None, HYP_TUNE=False)
    num_envs = int(config["NUM_MINIBATCHES"]) if kind == "pqn" else 4
    num_steps = int(config.get("NUM_STEPS", 25))  # SHAQ's default is the env's episode limit (25 on MPE)
    updates = 2 if kind == "ppo" else 4
    budget: dict[str, Any] = {"NUM_ENVS": num_envs, "TOTAL_TIMESTEPS": updates * num_envs * num_steps}
    optional = {
        "LEARNING_STARTS": num_envs * num_steps,
        # Trajectory buffers count rollouts per env; VDN-FF's flat buffer counts transitions.
        "BUFFER_SIZE": 8 * num_envs * (num_steps if kind == "qflat" else 1),
        "BUFFER_BATCH_SIZE": 4,
        "TEST_NUM_ENVS": 4,
        "NUM_TEST_EPISODES": 4,
        "EPSILON_ANNEAL_TIME": num_envs * num_steps,
    }
    budget.update({key: value for key, value in optional.items() if key in config})
    if "TEST_INTERVAL" in config:
        # Q-learning and PQN give it as a fraction of the updates; TransfQMix and SHAQ in env steps.
        fraction = float(config["TEST_INTERVAL"]) <= 1.0
        budget["TEST_INTERVAL"] = 0.5 if fraction else 2 * num_envs * num_steps
    config.update(budget)
    if "alg" in config:
        config["alg"].update({key: value for key, value in budget.items() if key in config["alg"]})
    return config


def suite_make(env_id: str, **kwargs: Any) -> Any:
    """What the scripts' ``make`` becomes: the suite env of that id, seen through ``to_jaxmarl``."""
    import jaxmarl_suite
    from jaxmarl_suite.compat import to_jaxmarl

    return to_jaxmarl(jaxmarl_suite.make(env_id, **kwargs))


def _heuristic_enemy_smax(**kwargs: Any) -> Any:
    """The SMAX scripts' ``HeuristicEnemySMAX(scenario=..., **ENV_KWARGS)``, redirected."""
    return suite_make("HeuristicEnemySMAX", **kwargs)


def redirect_make(module: types.ModuleType) -> list[str]:
    """Point the names ``module`` builds envs with at ``suite_make``; returns the names replaced."""
    import jaxmarl

    replaced = []
    if getattr(module, "make", None) is jaxmarl.make:
        module.make = suite_make  # type: ignore[attr-defined]
        replaced.append("make")
    if getattr(module, "jaxmarl", None) is jaxmarl:
        # ``jaxmarl.make(...)``: the module sees a copy of the package namespace whose make is ours.
        proxy = types.ModuleType("jaxmarl")
        proxy.__dict__.update(jaxmarl.__dict__)
        proxy.make = suite_make  # type: ignore[attr-defined]
        module.jaxmarl = proxy  # type: ignore[attr-defined]
        replaced.append("jaxmarl.make")
    if hasattr(module, "HeuristicEnemySMAX"):
        module.HeuristicEnemySMAX = _heuristic_enemy_smax  # type: ignore[attr-defined]
        replaced.append("HeuristicEnemySMAX")
    if not replaced:
        raise RuntimeError(f"{module.__file__} builds no env with make, jaxmarl.make or HeuristicEnemySMAX")
    return replaced


def load_script(root: Path, run: Run) -> types.ModuleType:
    """Import the script as a module (its ``if __name__ == "__main__"`` block does not run)."""
    from jaxmarl_suite.compat.jaxmarl_scripts import import_jaxmarl_script

    path = root / "baselines" / run.script
    # registered, with its folder on sys.path: TransfQMix imports ``utils.fast_attention`` from beside it
    return import_jaxmarl_script(path, module_name=f"jaxmarl_baseline_{path.stem}", stub=False,
                                 register=True)


def restore_jax_aliases() -> list[str]:
    """Put back the ``jax.tree_*`` aliases JAX 0.6 removed (``jax.tree_leaves`` is ``jax.tree.leaves``),
    which TransfQMix still calls. Returns the names restored."""
    import jax

    restored = []
    for name in ("leaves", "map", "flatten", "unflatten", "structure"):
        if not hasattr(jax, f"tree_{name}"):
            setattr(jax, f"tree_{name}", getattr(jax.tree, name))
            restored.append(f"jax.tree_{name}")
    return restored


def execute(root: Path, run: Run, reference: bool, aliases: bool) -> str:
    """Run one script in this process; returns a short note on what ran."""
    import jax

    shims = restore_jax_aliases() if aliases else []
    module = load_script(root, run)
    replaced = [] if reference else redirect_make(module)
    config = short_budget(load_config(root, run), run.kind)
    if run.env == "Overcooked":
        from jaxmarl.environments.overcooked import overcooked_layouts

        # what the Overcooked scripts' mains do before make_train: the layout name becomes JaxMARL's dict
        layout = config["ENV_KWARGS"]["layout"]
        config["ENV_KWARGS"] = {**config["ENV_KWARGS"], "layout": overcooked_layouts[layout]}
    key = jax.random.PRNGKey(int(config.get("SEED", 0)))
    if run.kind != "shaq":
        import wandb

        # The scripts' mains open a (disabled) wandb run before training; their callbacks log to it.
        wandb.init(mode="disabled", config=config)
    if run.kind == "shaq":
        from omegaconf import OmegaConf

        module.main(OmegaConf.create(config))  # hydra calls the function directly when given a config
        return f"main(config); replaced {replaced}; restored {shims}"
    if run.kind == "ppo":
        train = module.make_train(config)
    else:
        merged = {**config, **config["alg"]}  # what the scripts' single_run passes to make_train
        env, _ = module.env_from_config(copy.deepcopy(merged))
        train = module.make_train(merged, env)
    out = jax.block_until_ready(jax.jit(train)(key))
    leaves = [leaf for leaf in jax.tree.leaves(out) if hasattr(leaf, "dtype")]
    if not leaves:
        raise RuntimeError("make_train returned no arrays")
    return f"make_train; replaced {replaced}; restored {shims}"


def summary(error: BaseException) -> str:
    """One line for the table: the exception's type and message, or for an error raised inside a callback
    (reported as a JaxRuntimeError around a traceback) the last line of that traceback."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if "Traceback" in str(error) and lines:
        return lines[-1][:300]
    return f"{type(error).__name__}: {' '.join(lines)}"[:300]


def child(root: Path, index: int, reference: bool, aliases: bool) -> None:
    """Subprocess entry: run ``RUNS[index]`` and print one JSON line with the outcome."""
    run = RUNS[index]
    start = time.perf_counter()
    try:
        note = execute(root, run, reference, aliases)
        result = {"status": "ok", "message": note}
    except Exception as error:  # the table reports any failure of JaxMARL's code or ours
        traceback.print_exc()
        result = {"status": "error", "message": summary(error)}
    result["seconds"] = round(time.perf_counter() - start, 1)
    print("RESULT " + json.dumps(result), flush=True)


def run_child(root: Path, index: int, reference: bool, aliases: bool, timeout: float) -> dict[str, Any]:
    """Run ``RUNS[index]`` in a fresh interpreter, in a scratch folder (scripts write files)."""
    command = [sys.executable, str(Path(__file__).resolve()), str(root), "--child", str(index)]
    command += ["--reference"] * reference + ["--restore-jax-aliases"] * aliases
    env = {**os.environ, "WANDB_MODE": "disabled", "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    with tempfile.TemporaryDirectory() as scratch:
        try:
            done = subprocess.run(
                command, cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"status": "error", "message": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if lines:
        return json.loads(lines[-1][len("RESULT ") :])
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"status": "error", "message": f"exit {done.returncode}: {tail[0][:300]}"}


def parent(
    root: Path, runs: list[int], sides: list[bool], aliases: bool, timeout: float
) -> list[dict[str, Any]]:
    """Run each selected script on each side (``False``: our envs, ``True``: JaxMARL's)."""
    rows = []
    for index in runs:
        run = RUNS[index]
        print(f"-- {run.name} on {run.env}: {run.script} with {Path(run.config).name}", flush=True)
        row: dict[str, Any] = {"run": run}
        for reference in sides:
            result = run_child(root, index, reference, aliases, timeout)
            side = "jaxmarl" if reference else "ours"
            seconds = result.get("seconds", "-")
            print(f"   {side}: {result['status']}: {result['message']} ({seconds} s)", flush=True)
            row[side] = result
        rows.append(row)
    return rows


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    outcome = "ok" if result["status"] == "ok" else f"error: {result['message']}"
    return f"{outcome} ({result.get('seconds', '-')} s)".replace("|", "\\|")


def markdown(rows: list[dict[str, Any]], sides: list[bool]) -> str:
    """The results as a markdown table, one column per side."""
    names = {False: "our env (`to_jaxmarl`)", True: "JaxMARL's env"}
    header = "| algorithm | env | script | config | " + " | ".join(names[side] for side in sides) + " |"
    lines = [header, "|---|---|---|---|" + "---|" * len(sides)]
    for row in rows:
        run: Run = row["run"]
        cells = " | ".join(_cell(row.get("jaxmarl" if side else "ours")) for side in sides)
        lines.append(f"| {run.name} | {run.env} | `{run.script}` | `{Path(run.config).name}` | {cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Parse the arguments and run the selected scripts (or, with ``--child``, one of them)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("jaxmarl_root", type=Path, help="a JaxMARL checkout (with baselines/)")
    parser.add_argument("--only", nargs="+", default=None, help="run ids (script:config) or row names")
    parser.add_argument("--reference", action="store_true", help="run on JaxMARL's own envs instead")
    parser.add_argument("--compare", action="store_true", help="run on ours and on JaxMARL's envs")
    parser.add_argument(
        "--restore-jax-aliases",
        action="store_true",
        help="put back jax.tree_leaves & co. (removed in JAX 0.6), which TransfQMix calls",
    )
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per script")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    parser.add_argument("--list", action="store_true", help="list the run ids and exit")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = args.jaxmarl_root.resolve()
    if args.list:
        for run in RUNS:
            print(f"{run_id(run):40s} {run.name} on {run.env}")
        return
    if not (root / "baselines").is_dir():
        parser.error(f"{root} has no baselines/ folder; pass the root of a JaxMARL checkout")
    if args.child is not None:
        child(root, args.child, args.reference, args.restore_jax_aliases)
        return
    selected = list(range(len(RUNS)))
    if args.only:
        selected = [i for i, run in enumerate(RUNS) if run_id(run) in args.only or run.name in args.only]
        if not selected:
            parser.error(f"no run matches {args.only}; see --list")
    sides = [False, True] if args.compare else [args.reference]
    rows = parent(root, selected, sides, args.restore_jax_aliases, args.timeout)
    table = markdown(rows, sides)
    print()
    print(table)
    if args.markdown is not None:
        args.markdown.write_text(table)


if __name__ == "__main__":
    main()
