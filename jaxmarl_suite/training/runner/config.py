"""Baseline configuration: frozen ``Config``/``HParams`` dataclasses, YAML presets and the command line.

A baseline declares two frozen dataclasses whose fields each carry a one-line docstring:

- ``Config`` is static (shapes, counts, the env id, network sizes); changing it recompiles.
- ``HParams`` is traceable (learning rate, entropy coefficient, ...); it is vmapped over for sweeps.

Every field becomes a ``--dashed-flag`` whose ``--help`` text is the field's docstring. An ``HParams``
flag takes several values, and the grid is their cartesian product. Presets are YAML files in
``baselines/configs/`` with ``config:`` and ``hparams:`` sections (and optionally ``pinned:``, the
fields the preset does not allow the command line to change). Values are validated before anything
compiles, and errors name the field and the allowed range.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import json
import re
import textwrap
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from jaxmarl_suite.errors import ConfigError, closest, did_you_mean
from jaxmarl_suite.training.runner.run_folder import default_run_dir, read_run_config

EXTEND_MODES = ("hold", "restart")
"""``--extend``'s choices, those of ``training.kit.schedule.EXTEND_MODES`` (a test holds them equal): this
module stays free of JAX, so ``jaxmarl-suite --help`` starts fast."""

ARTIFACTS = ("all", "plot", "none")
"""``--artifacts``' choices: what a ``train`` command writes after the run."""

PRESET_DIR = Path(__file__).resolve().parents[3] / "baselines" / "configs"
"""Presets in a source checkout; an installed wheel carries them in ``jaxmarl_suite/baselines/configs``."""


def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each dataclass field, read from the class source."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0]
        if not isinstance(body, ast.ClassDef):
            continue
        statements = body.body
        for statement, following in itertools.pairwise(statements):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.target.id] = " ".join(following.value.value.split())
    return docs


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _coerce(cls: type, name: str, value: Any) -> Any:
    """Convert a YAML or command-line value to the field's declared type, or raise ``ConfigError``."""
    kind = _field_types(cls)[name]
    origin = typing.get_origin(kind)
    try:
        if kind is bool:
            if isinstance(value, str):
                lowered = value.lower()
                if lowered not in {"true", "false", "1", "0", "yes", "no"}:
                    raise ValueError(value)
                return lowered in {"true", "1", "yes"}
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if kind is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(float(value)) if isinstance(value, str) else int(value)
        if kind is float:
            if isinstance(value, bool):  # float(True) is 1.0: a YAML `yes` is no learning rate
                raise ValueError(value)
            return float(value)
        if kind is str:
            return str(value)
        if origin is dict or kind is dict:
            parsed = json.loads(value) if isinstance(value, str) else value
            if not isinstance(parsed, dict):
                raise ValueError(value)
            return dict(parsed)
        if origin in (tuple, typing.Tuple):  # noqa: UP006
            if typing.get_args(kind) == (int, Ellipsis):
                return _int_tuple(name, value)
            parsed = json.loads(value) if isinstance(value, str) else value
            return _coerce_tuple(kind, parsed)
        if origin in (types.UnionType, typing.Union) and type(None) in typing.get_args(kind):
            if value is None or (isinstance(value, str) and value.lower() in {"none", "null", ""}):
                return None
            inner = next(a for a in typing.get_args(kind) if a is not type(None))
            return inner(value)
    except ConfigError:
        raise
    except (TypeError, ValueError, json.JSONDecodeError) as error:
        raise ConfigError(f"{name}: expected {getattr(kind, '__name__', kind)}, got {value!r}") from error
    return value


def _coerce_tuple(kind: Any, value: Any) -> tuple[Any, ...]:
    """``value`` (a list from YAML or JSON) as the tuple type ``kind``: ``tuple[int, ...]`` or fixed-length
    ``tuple[int, int, str]``, nested (``tuple[tuple[int, int, str], ...]``); raises ``ValueError``."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValueError(value)
    args = typing.get_args(kind)
    if len(args) == 2 and args[1] is Ellipsis:
        args = (args[0],) * len(value)
    elif len(args) != len(value):
        raise ValueError(value)
    out = []
    for item_kind, item in zip(args, value, strict=True):
        if typing.get_origin(item_kind) is tuple:
            out.append(_coerce_tuple(item_kind, item))
        elif item_kind is int:
            if isinstance(item, bool) or (isinstance(item, float) and not item.is_integer()):
                raise ValueError(item)
            out.append(int(item))
        else:
            out.append(item_kind(item))
    return tuple(out)


def _int_tuple(name: str, value: Any) -> tuple[int, ...]:
    """A tuple of ints (``hidden_sizes``) from a YAML list or command-line text: ``64,64``, ``64 64`` (one
    word each, as ``nargs="+"`` hands them over), ``[64, 64]`` or a mix; an empty list (``[]``, no layers:
    the config's ``validate`` says whether that is allowed). Anything else names the forms."""
    words = value if isinstance(value, list | tuple) else [value]
    if not words or all(isinstance(w, str) for w in words) and "".join(words).replace(" ", "") == "[]":
        return ()
    if all(isinstance(word, str) for word in words):
        items: list[Any] = [item for item in re.split(r"[\s,\[\]()]+", " ".join(words)) if item]
    else:
        items = list(words)
    try:
        sizes = tuple(_strict_int(item) for item in items)
    except (TypeError, ValueError):
        sizes = ()
    if not sizes:
        shown = " ".join(value) if isinstance(value, list) else value
        raise ConfigError(f"{name}: expected one or more integers, as 64,64 or 64 64, got {shown!r}")
    return sizes


def _strict_int(item: Any) -> int:
    """``item`` as an int; a float with a fraction, a bool or a non-number raises (no silent 64.5 -> 64)."""
    if isinstance(item, bool):
        raise TypeError(item)
    if isinstance(item, str):
        return int(item)
    if isinstance(item, float) and not item.is_integer():
        raise ValueError(item)
    return int(item)


def check_values(cls: type, values: Mapping[str, Any], *, where: str = "", grid: bool = False
                 ) -> dict[str, Any]:
    """The one check of config values, wherever they come from (a preset, a run folder's ``config.yaml``,
    a sweep file, the command line): every name must be a field of the dataclass ``cls`` (unknown ones
    are named with close matches), and every value is converted to its field's type (``_coerce``). With
    ``grid`` (an ``HParams`` section of a sweep) a field takes a value or a non-empty list of values, each
    converted. Returns the converted values; raises ``ConfigError`` prefixed with ``where`` (``file: key``).
    """
    unknown = _unknown_fields(cls, values)
    if unknown:
        raise ConfigError(f"{where + ': ' if where else ''}{unknown}")
    checked: dict[str, Any] = {}
    for name, value in values.items():
        try:
            if grid and isinstance(value, list):
                if not value:
                    raise ConfigError(f"{name}: an empty list sweeps nothing; give one or more values")
                checked[name] = [_coerce(cls, name, point) for point in value]
            else:
                checked[name] = _coerce(cls, name, value)
        except ConfigError as error:
            raise ConfigError(f"{where + '.' if where else ''}{error}") from None
    return checked


def _unknown_fields(cls: type, values: Mapping[str, Any]) -> str:
    """The message naming the names in ``values`` that are no field of ``cls``, with close matches; ""
    when every name is a field."""
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = [name for name in values if name not in names]
    if not unknown:
        return ""
    text = ", ".join(f"{u!r}" + (f" ({h})" if (h := did_you_mean(closest(u, names, n=1))) else "")
                     for u in unknown)
    return f"unknown {cls.__name__} field(s) {text}; known: {names}"


def build(cls: type, values: Mapping[str, Any], *, where: str = "") -> Any:
    """Instantiate the dataclass ``cls`` from ``values`` checked by ``check_values``. ``where`` (as
    `` in preset 'name'``) ends the message about unknown names: a bad value of a known field may come
    from the command line, merged over the preset, so its message names only the field."""
    unknown = _unknown_fields(cls, values)
    if unknown:
        raise ConfigError(f"{unknown}{where}")
    return cls(**check_values(cls, values))


def preset_dirs() -> list[Path]:
    """Folders searched for presets: the source checkout's, then the installed package's."""
    installed = Path(__file__).resolve().parents[2] / "baselines" / "configs"
    return [d for d in (PRESET_DIR, installed) if d.is_dir()]


def available_presets() -> list[str]:
    """Names of every preset file (without ``.yaml``)."""
    return sorted({p.stem for d in preset_dirs() for p in d.glob("*.yaml")})


def load_preset(name_or_path: str) -> dict[str, Any]:
    """Read a preset by name (``baselines/configs/NAME.yaml``) or path. Returns its parsed mapping."""
    path = Path(name_or_path)
    if not path.suffix:
        candidates = [d / f"{name_or_path}.yaml" for d in preset_dirs()]
        found = [c for c in candidates if c.is_file()]
        if not found:
            close = closest(name_or_path, available_presets(), n=3, cutoff=0.4)
            raise ConfigError(
                f"preset: no preset named {name_or_path!r}. Closest: {close or 'none'}; "
                f"all presets: {available_presets()}"
            )
        path = found[0]
    if not path.is_file():
        raise ConfigError(f"preset: file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"preset: {path} is not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"preset: {path} must hold a mapping with 'config' and 'hparams' sections")
    allowed = {"algorithm", "description", "config", "hparams", "pinned"}
    extra = sorted(set(data) - allowed)
    if extra:
        raise ConfigError(f"preset: {path} has unknown section(s) {extra}; allowed: {sorted(allowed)}")
    data["name"] = path.stem
    return data


class CommandLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that answers a mistake in one line, ``error: ...`` on stderr with exit status 2,
    instead of the whole usage block: an unknown flag names the closest flags (by spelling, or by a help
    text that holds the flag's words, so ``--learning-rate`` finds ``--lr``), and an unknown choice the
    closest choice. Flags are taken only as spelled out (``allow_abbrev=False``): a prefix such as
    ``--total-timestep`` is a typo to point out, not a flag to guess. Subcommands' parsers share the class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """As ``ArgumentParser.parse_args``, with one line for the words nothing took."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            parser = self._chosen_subparser(parsed)
            parser.error(parser._unknown_message(extra))
        return parsed

    def error(self, message: str) -> typing.NoReturn:
        """Print ``error: message`` and where the flags are listed, in one line, and exit with status 2."""
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            known = [str(choice) for choice in choices]
            hint = did_you_mean(closest(str(value), known))
            name = "/".join(action.option_strings) or action.metavar or action.dest
            self.error(f"{name}: unknown choice {value!r}" + (f"; {hint}" if hint else ".")
                       + f" Choices: {', '.join(known)}")
        super()._check_value(action, value)

    def _unknown_message(self, extra: list[str]) -> str:
        flags = [word.split("=", 1)[0] for word in extra if word.startswith("-") and not _is_number(word)]
        if not flags:
            return f"unexpected argument(s) {' '.join(extra)}"
        hints = {flag: self._suggest_flags(flag) for flag in flags}
        return "; ".join(f"unknown flag {flag}" + (f"; {did_you_mean(h, quote=False)}" if h else "")
                         for flag, h in hints.items())

    def _chosen_subparser(self, parsed: Any) -> CommandLineParser:
        """The subcommand's parser whose flags the unknown ones were meant for (this one if none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and action.dest != argparse.SUPPRESS:
                chosen = action.choices.get(str(getattr(parsed, action.dest, "")))
                if isinstance(chosen, CommandLineParser):
                    return chosen._chosen_subparser(parsed)
        return self

    def _suggest_flags(self, flag: str, n: int = 3) -> list[str]:
        """Flags whose help holds ``flag``'s words (``--learning-rate``: "Adam learning rate", so ``--lr``),
        those naming them earliest first (a help's subject comes first), then flags spelled like it."""
        options = {option: action for action in self._actions for option in action.option_strings
                   if option.startswith("--")}
        words = flag.lstrip("-").replace("-", " ").replace("_", " ").lower()
        pattern = re.compile(rf"\b{re.escape(words)}\b")
        found: dict[str, int] = {}
        for action in dict.fromkeys(options.values()):
            match = pattern.search(" ".join((action.help or "").lower().split()))
            if match:
                found[next(o for o in action.option_strings if o.startswith("--"))] = match.start()
        described = sorted(found, key=found.__getitem__)
        return list(dict.fromkeys([*described, *closest(flag, options, n=n)]))[:n]


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


@dataclasses.dataclass(frozen=True)
class Experiment:
    """What a command line asks for: the static config, the hparams grid, seeds and the run folder."""

    algorithm: str
    """Baseline name (``ippo``, ``mappo``)."""
    config: Any
    """The baseline's frozen ``Config``."""
    grid: tuple[Any, ...]
    """Every ``HParams`` point of the grid, in ``grid_index`` order."""
    num_seeds: int
    """Seeds per grid point, vmapped in the same program."""
    seed: int
    """Base seed; seed ``s`` of every grid point uses ``fold_in(PRNGKey(seed), s)``."""
    run_dir: Path
    """Output folder."""
    resume: Path | None
    """Run folder (or checkpoint) to continue from."""
    wandb: str | None
    """``disabled``, ``offline`` or ``online``; None (the default) starts no wandb at all."""
    preset: str | None
    """The preset the values started from, if any."""
    progress: bool = True
    """Draw the live progress bar."""
    overwrite: bool = False
    """Clear an earlier run out of ``run_dir`` before training (a fresh run never mixes with one)."""
    artifacts: str = "all"
    """What the command writes after training: ``all`` (the returns plot and the policy GIF), ``plot`` or
    ``none``."""
    snapshots: tuple[float, ...] = ()
    """Fractions of training (0 = before the first update, 1 = the end) whose checkpoints are kept for
    good, and listed as a population of partners in ``population.json`` (``runner.population``)."""

    @property
    def snapshot_updates(self) -> tuple[int, ...]:
        """The updates ``snapshots`` stand for, ascending and without repeats."""
        return snapshot_updates(self.snapshots, self.config.num_updates)


POPULATION_SNAPSHOTS = "0,0.5,1"
"""FCP's partners per seed (Strouse et al. 2021): its untrained start, its middle and its end."""


def population_flags(flags: Sequence[str]) -> list[str]:
    """``train``'s flags for ``jaxmarl-suite population``: ``flags`` with ``--snapshots`` at
    ``POPULATION_SNAPSHOTS`` unless they name their own."""
    flags = list(flags)
    if not any(flag == "--snapshots" or flag.startswith("--snapshots=") for flag in flags):
        flags += ["--snapshots", POPULATION_SNAPSHOTS]
    return flags


def snapshot_updates(fractions: Sequence[float], num_updates: int) -> tuple[int, ...]:
    """The update counts at ``fractions`` of ``num_updates`` (rounded to the nearest update)."""
    return tuple(sorted({int(round(float(f) * num_updates)) for f in fractions}))


def parse_snapshots(text: str | Sequence[Any] | None) -> tuple[float, ...]:
    """``0,0.5,1`` (or a list of numbers) as fractions of training in ``[0, 1]``; bad values raise
    ``ConfigError``."""
    if text is None or text == "":
        return ()
    items = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    fractions = []
    for item in items:
        try:
            value = float(item)
        except (TypeError, ValueError):
            raise ConfigError(f"snapshots: {item!r} is not a number; give fractions of training such as "
                              "0,0.5,1") from None
        if isinstance(item, bool) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"snapshots: {item!r} is outside [0, 1]; a snapshot is a fraction of training "
                              "(0 = before the first update, 1 = the end)")
        fractions.append(value)
    return tuple(sorted(set(fractions)))


def add_dataclass_flags(parser: argparse.ArgumentParser, cls: type, *, grid: bool) -> None:
    """One ``--dashed-name`` flag per field of ``cls``; with ``grid`` each flag takes one or more values."""
    docs = field_docs(cls)
    # The whole docstring, joined into one paragraph: its first line alone stops mid-sentence.
    group = parser.add_argument_group(cls.__name__, " ".join(inspect.cleandoc(cls.__doc__ or "").split()))
    for field in dataclasses.fields(cls):
        if not field.metadata.get("flag", True):  # written by the runner (e.g. extensions), not a setting
            continue
        flag = "--" + field.name.replace("_", "-")
        default = field.default if field.default is not dataclasses.MISSING else None
        help_text = f"{docs.get(field.name, '')} (default: {default!r})"
        kind = _field_types(cls)[field.name]
        if kind is bool and not grid:
            group.add_argument(flag, dest=field.name, action=argparse.BooleanOptionalAction, default=None,
                               help=help_text)
        elif typing.get_origin(kind) is tuple and not grid:
            group.add_argument(flag, dest=field.name, nargs="+", default=None, metavar=field.name.upper(),
                               help=f"{help_text}; as 64,64 or 64 64")
        else:
            group.add_argument(flag, dest=field.name, nargs="+" if grid else None, default=None,
                               metavar=field.name.upper(), help=help_text)


def parse_experiment(
    algorithm: str, config_cls: type, hparams_cls: type, argv: Sequence[str] | None = None
) -> Experiment:
    """Parse a baseline's command line into an ``Experiment``; bad values raise ``ConfigError``."""
    parser = CommandLineParser(
        prog=f"jaxmarl-suite train {algorithm}",
        description=f"Train {algorithm.upper()}. HParams flags take several values to sweep a grid.",
    )
    parser.add_argument("--preset", default=None,
                        help=f"preset name in baselines/configs/ or a YAML path "
                             f"(default: {algorithm}_<env id> "
                             "when it exists)")
    parser.add_argument("--env", dest="env_id_flag", default=None, help="env id (same as --env-id)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per grid point, vmapped in one program (default: 1)")
    parser.add_argument("--seed", type=int, default=None, help="base seed (default: 0)")
    parser.add_argument("--run-dir", default=None,
                        help="output folder (default: runs/<algorithm>_<env>_<time>); it must be new or "
                             "empty unless --resume or --overwrite is given")
    parser.add_argument("--resume", default=None,
                        help="run folder or checkpoint folder to continue from; only --total-timesteps "
                             "(raised) may change")
    parser.add_argument("--extend", choices=EXTEND_MODES, default=None,
                        help="with --resume and a raised --total-timesteps, on a run whose schedules depend "
                             "on its length (--anneal-lr, --epsilon-decay): hold keeps their old end and "
                             "holds their last value, restart continues each from its current value to its "
                             "end at the new total (docs/training.md)")
    parser.add_argument("--artifacts", choices=ARTIFACTS, default=None,
                        help="what to write after training: all (returns plot and policy GIF, the "
                             "default), plot, or none")
    parser.add_argument("--no-gif", action="store_true", help="no policy GIF: --artifacts plot")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete the earlier run in --run-dir (its checkpoints, metrics and plots) and "
                             "train a fresh one there")
    parser.add_argument("--wandb", choices=["disabled", "offline", "online"], default=None,
                        help="log to wandb: offline writes under the run folder, online syncs (default: no "
                             "wandb at all, nothing touches the network)")
    parser.add_argument("--no-progress", action="store_true", help="no live progress bar")
    parser.add_argument("--snapshots", default=None, metavar="FRACTIONS",
                        help="keep the checkpoints at these fractions of training for good, e.g. 0,0.5,1 "
                             "(0 = before the first update), and list every seed's as a population of "
                             "partners in population.json (jaxmarl-suite population; FCP's --partners)")
    hosts = parser.add_argument_group(
        "multi-process", "one run over several processes/hosts with jax.distributed; the global grid of "
        "grid points x seeds is split across them (see docs/scaling.md)")
    hosts.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                       help="process 0's address, the same for every process; 'auto' detects SLURM, "
                            "TPU pods and Open MPI")
    hosts.add_argument("--num-processes", type=int, default=None, help="processes taking part")
    hosts.add_argument("--process-id", type=int, default=None, help="this process's index, from 0")
    add_dataclass_flags(parser, config_cls, grid=False)
    add_dataclass_flags(parser, hparams_cls, grid=True)
    args = parser.parse_args(argv)
    if args.coordinator is not None:
        _join_distributed(args)
    elif args.num_processes is not None or args.process_id is not None:
        raise ConfigError("coordinator: --num-processes and --process-id need --coordinator HOST:PORT")

    config_names = [f.name for f in dataclasses.fields(config_cls) if f.metadata.get("flag", True)]
    hparam_names = [f.name for f in dataclasses.fields(hparams_cls) if f.metadata.get("flag", True)]
    cli_config = {n: getattr(args, n) for n in config_names if getattr(args, n) is not None}
    if args.env_id_flag is not None:
        cli_config["env_id"] = args.env_id_flag
    cli_hparams = {n: getattr(args, n) for n in hparam_names if getattr(args, n) is not None}
    run_dir = None if args.run_dir is None else Path(args.run_dir)
    if args.no_gif and args.artifacts not in (None, "plot"):
        raise ConfigError(f"artifacts: --no-gif means --artifacts plot, but --artifacts {args.artifacts} was "
                          "given too; pass one of them")
    artifacts = "plot" if args.no_gif else (args.artifacts or "all")
    if args.resume is not None:
        experiment = resume_experiment(
            algorithm, config_cls, hparams_cls, Path(args.resume), config=cli_config, hparams=cli_hparams,
            seeds=args.seeds, seed=args.seed, preset=args.preset, run_dir=run_dir, overwrite=args.overwrite,
            wandb=args.wandb, progress=not args.no_progress, extend=args.extend)
        if args.snapshots is not None:
            raise ConfigError("snapshots: a resumed run keeps the snapshots it was started with "
                              f"({list(experiment.snapshots)}); train a new run to change them")
        return dataclasses.replace(experiment, artifacts=artifacts)
    if args.extend is not None:
        raise ConfigError("extend: --extend says how a resumed run's schedules continue when --resume raises "
                          "--total-timesteps; a fresh run has nothing to extend")
    experiment = build_experiment(
        algorithm, config_cls, hparams_cls, config=cli_config, hparams=cli_hparams, preset=args.preset,
        seeds=args.seeds, seed=args.seed, run_dir=run_dir, wandb=args.wandb, progress=not args.no_progress,
        overwrite=args.overwrite)
    return dataclasses.replace(experiment, artifacts=artifacts, snapshots=parse_snapshots(args.snapshots))


def build_experiment(
    algorithm: str, config_cls: type, hparams_cls: type, *, config: dict[str, Any] | None = None,
    hparams: Mapping[str, Sequence[Any]] | None = None, preset: str | None = None, seeds: int | None = None,
    seed: int | None = None, run_dir: Path | None = None, wandb: str | None = None, progress: bool = True,
    overwrite: bool = False, default_preset: bool = True,
) -> Experiment:
    """A fresh ``Experiment`` from values: the one path the command line, sweeps, benchmarks and tests take.

    ``config`` overrides the preset's ``config:`` section (values as YAML or command-line text);
    ``hparams`` maps each swept field to its values, and the grid is their cartesian product over the
    preset's ``hparams:``. The preset defaults to ``<algorithm>_<env id>`` when one exists (unless
    ``default_preset`` is False: the dataclass defaults, for values that must not move with a retuned
    preset). The values are validated before it returns, the env's arguments when its env is built;
    errors raise ``ConfigError`` naming the field.
    """
    config_values = dict(config or {})
    swept = {name: list(values) for name, values in (hparams or {}).items()}
    num_seeds = 1 if seeds is None else seeds
    base_seed = 0 if seed is None else seed
    env_id = config_values.get("env_id", config_cls().env_id)
    preset_name = preset
    if preset_name is None and default_preset and f"{algorithm}_{env_id}" in available_presets():
        preset_name = f"{algorithm}_{env_id}"
    loaded = load_preset(preset_name) if preset_name else {}
    if loaded and loaded.get("algorithm", algorithm) != algorithm:
        raise ConfigError(f"preset: {loaded['name']!r} is for {loaded['algorithm']!r}, not {algorithm!r}")
    for name in loaded.get("pinned", []) or []:
        preset_value = (loaded.get("config") or {}).get(name)
        wanted = _coerce(config_cls, name, config_values[name]) if name in config_values else preset_value
        if wanted != preset_value:
            preset_env = config_values.get("env_id", (loaded.get("config") or {}).get("env_id", env_id))
            others = presets_setting(algorithm, config_cls, str(preset_env), name, wanted)
            instead = (f"Use --preset {' or '.join(others)}, which sets {name}={wanted!r}" if others else
                       f"No {algorithm} preset for {preset_env} sets {name}={wanted!r}: pass --preset with "
                       "your own YAML")
            raise ConfigError(
                f"{name}: preset {loaded['name']!r} pins {name}={preset_value!r} (it is tuned for that), "
                f"but the command line asks for {wanted!r}. {instead}."
            )
    where = f" in preset {loaded['name']!r}" if loaded else ""
    built = build(config_cls, {**(loaded.get("config") or {}), **config_values}, where=where)
    base_hparams = build(hparams_cls, loaded.get("hparams") or {}, where=where)
    grid = make_grid(hparams_cls, base_hparams, swept)
    if not isinstance(num_seeds, int) or num_seeds < 1:
        raise ConfigError(f"seeds: must be an integer >= 1, got {num_seeds}")
    built.validate()
    for point in grid:
        point.validate()
    folder = run_dir if run_dir is not None else default_run_dir(algorithm, built.env_id)
    return Experiment(algorithm, built, grid, num_seeds, base_seed, Path(folder), None, wandb,
                      loaded.get("name"), progress, overwrite)


def presets_setting(algorithm: str, config_cls: type, env_id: str, name: str, value: Any) -> list[str]:
    """The presets of ``algorithm`` for ``env_id`` (an alias counts as its env) whose config gives field
    ``name`` the value ``value`` (a field a preset leaves out takes ``config_cls``'s default): where to go
    when a preset pins that field to another value."""
    defaults = config_cls()
    found = []
    for preset in available_presets():
        try:
            data = load_preset(preset)
        except ConfigError:
            continue  # a broken preset is reported when it is asked for, not while searching
        config = data.get("config") or {}
        if data.get("algorithm", preset.split("_", 1)[0]) != algorithm:
            continue
        if _canonical_env_id(str(config.get("env_id", defaults.env_id))) != _canonical_env_id(env_id):
            continue
        try:
            if _coerce(config_cls, name, config.get(name, getattr(defaults, name))) == value:
                found.append(preset)
        except ConfigError:
            continue
    return found


def _canonical_env_id(env_id: str) -> str:
    from jaxmarl_suite.core.registry import env_spec

    try:
        return env_spec(env_id).env_id
    except (TypeError, ValueError):
        return env_id


def _join_distributed(args: argparse.Namespace) -> None:
    """Initialise ``jax.distributed`` first: it must run before JAX computes anything (validating the
    config touches the registry and JAX)."""
    from jaxmarl_suite.training.runner.sharding import Distributed, initialize_distributed

    if args.run_dir is None and args.resume is None:
        raise ConfigError("run_dir: a multi-process run needs --run-dir (the same shared folder for every "
                          "process), since each process would otherwise pick its own timestamped folder")
    initialize_distributed(Distributed(args.coordinator, args.num_processes, args.process_id))


def make_grid(hparams_cls: type, base: Any, sweeps: Mapping[str, Sequence[Any]]) -> tuple[Any, ...]:
    """The cartesian product of the swept values over ``base``, first flag varying slowest."""
    names = list(sweeps)
    values = [[_coerce(hparams_cls, n, v) for v in sweeps[n]] for n in names]
    return tuple(
        dataclasses.replace(base, **dict(zip(names, combo, strict=True)))
        for combo in itertools.product(*values)
    )


def resume_experiment(
    algorithm: str, config_cls: type, hparams_cls: type, resume: Path, *,
    config: dict[str, Any] | None = None, hparams: dict[str, Any] | None = None, seeds: int | None = None,
    seed: int | None = None, preset: str | None = None, run_dir: Path | None = None, overwrite: bool = False,
    wandb: str | None = None, progress: bool = True, extend: str | None = None,
) -> Experiment:
    """The saved experiment of ``resume`` (a run folder or checkpoint), with every value that cannot change
    checked against it: only a raised ``total_timesteps`` may differ. Raising it on a run whose schedules
    depend on its length needs ``extend`` (``hold`` or ``restart``, ``kit.schedule``), recorded in the
    config's ``extensions``."""
    from jaxmarl_suite.training.runner.checkpoint import find_run_dir, list_checkpoints, read_meta

    cli_config, cli_hparams = dict(config or {}), dict(hparams or {})
    run_dir_saved = find_run_dir(Path(resume))
    saved = experiment_from_run_dir(run_dir_saved)
    if saved.algorithm != algorithm:
        raise ConfigError(f"resume: {run_dir_saved} is a {saved.algorithm!r} run, not {algorithm!r}")
    if overwrite:
        raise ConfigError("overwrite: --overwrite starts a fresh run and --resume continues one; pick one")
    run_config = saved.config
    changed = [n for n, v in cli_config.items() if _coerce(config_cls, n, v) != getattr(run_config, n)]
    fixed = {"seeds": (seeds, saved.num_seeds), "seed": (seed, saved.seed), "preset": (preset, saved.preset)}
    changed += [f"--{name}" for name, (given, kept) in fixed.items() if given is not None and given != kept]
    if run_dir is not None and Path(run_dir).resolve() != run_dir_saved.resolve():
        changed.append("--run-dir")
    bad = sorted(set(changed) - {"total_timesteps"}) + sorted(cli_hparams)
    if bad:
        raise ConfigError(
            f"resume: {bad} differ from the saved run in {run_dir_saved}; a resumed run keeps its config, "
            "seeds and folder (only --total-timesteps may be raised). Train a new run for anything else")
    run_dir = run_dir_saved
    checkpoints = list_checkpoints(run_dir)
    if not checkpoints:
        raise ConfigError(f"resume: {run_dir} has no complete checkpoint to continue from; train it again "
                          "with --overwrite")
    meta = read_meta(checkpoints[-1])
    done_updates = int(meta["update"])
    done_steps = done_updates * run_config.batch_size
    raised = False
    if "total_timesteps" in cli_config:
        before = run_config.total_timesteps
        run_config = dataclasses.replace(run_config, total_timesteps=_coerce(config_cls, "total_timesteps",
                                                                     cli_config["total_timesteps"]))
        if before > run_config.total_timesteps > done_steps:
            raise ConfigError(f"total_timesteps: a resumed run's --total-timesteps may only be raised; the "
                              f"run in {run_dir} is planned for {before:,} env steps")
        if run_config.num_updates <= done_updates:
            raise ConfigError(
                f"total_timesteps: the run in {run_dir} is already at {done_steps:,} steps "
                f"({done_updates} updates of {run_config.batch_size:,}); --total-timesteps must exceed that")
        raised = run_config.total_timesteps != before
        if raised:
            run_config = _extended(run_config, saved.grid, done_updates, before, extend, run_dir)
    if extend is not None and not raised:
        raise ConfigError(f"extend: --extend {extend} applies when --total-timesteps raises the run's "
                          f"{run_config.total_timesteps:,} env steps; give a larger --total-timesteps")
    run_config.validate()
    saved_total = int(meta.get("total_timesteps", saved.config.total_timesteps))
    saved_updates = dataclasses.replace(saved.config, total_timesteps=saved_total).num_updates
    _check_logged_rows(run_dir, saved, done_updates, ended=done_updates == saved_updates)
    return dataclasses.replace(saved, config=run_config, resume=run_dir, wandb=wandb, progress=progress)


def _extended(config: Any, grid: Sequence[Any], update: int, before: int, extend: str | None,
              run_dir: Path) -> Any:
    """``config`` (with its raised ``total_timesteps``) with the extension recorded: from ``update``, the
    run's schedules that depend on its length continue as ``extend`` says. Refused without ``extend`` when
    there are such schedules, since recomputing them over the new total would make them jump."""
    tied = config.schedules_tied_to_length(grid) if hasattr(config, "schedules_tied_to_length") else []
    if tied and extend is None:
        raise ConfigError(
            f"extend: the run in {run_dir} was planned for {before:,} env steps and its {', '.join(tied)} "
            f"schedule(s) depend on that length. Say how they continue to {config.total_timesteps:,}: "
            "--extend hold (keep their end and hold their last value) or --extend restart (continue from "
            "their current value to their end at the new total); see docs/training.md")
    if not hasattr(config, "extensions"):
        if extend is not None:
            raise ConfigError(f"extend: this baseline's Config has no 'extensions' field; it cannot record "
                              f"--extend {extend}")
        return config
    mode = extend or "none"  # nothing depends on the length: it is exactly a longer run
    return dataclasses.replace(config, extensions=(*config.extensions, (update, before, mode)))


def _check_logged_rows(run_dir: Path, saved: Experiment, checkpoint_update: int, *, ended: bool) -> None:
    """``metrics.csv`` must hold the rows the checkpoint covers: resuming appends after them, so a missing
    file or missing rows would leave a hole in the run's record that nothing refills."""
    import csv

    path = run_dir / "metrics.csv"
    if not path.is_file():
        raise ConfigError(f"resume: {path} is missing, but the checkpoint is at update {checkpoint_update}; "
                          "its metrics cannot be rebuilt. Restore the file, or train again with --overwrite")
    log_every = max(1, int(getattr(saved.config, "log_every", 1)))
    # rows are logged every log_every updates and at the run's last update
    expected = checkpoint_update if ended else checkpoint_update - checkpoint_update % log_every
    if expected <= 0:
        return
    with path.open(newline="") as handle:
        logged = sum(1 for row in csv.DictReader(handle) if row.get("update") == str(expected))
    runs = len(saved.grid) * saved.num_seeds
    if logged < runs:
        raise ConfigError(
            f"resume: {path} has {logged} of the {runs} rows of update {expected}, which the checkpoint at "
            f"update {checkpoint_update} covers; the file was cut or edited. Restore it, or train again "
            "with --overwrite")


def experiment_from_run_dir(run_dir: Path) -> Experiment:
    """The experiment a run folder's ``config.yaml`` describes, for resuming and evaluating it."""
    saved = read_run_config(run_dir)
    module = baseline_module(str(saved["algorithm"]))
    where = f" in {Path(run_dir) / 'config.yaml'}"
    config = build(module.Config, saved["config"], where=where)
    grid = tuple(build(module.HParams, point, where=where) for point in saved["grid"])
    return Experiment(str(saved["algorithm"]), config, grid, int(saved["num_seeds"]), int(saved["seed"]),
                      Path(run_dir), None, "disabled", saved.get("preset"), False,
                      snapshots=parse_snapshots(saved.get("snapshots") or ()))


def run_record(experiment: Experiment) -> dict[str, Any]:
    """What a run folder's ``config.yaml`` records of ``experiment`` (``run_folder.write_run_config``):
    algorithm, preset, seeds, config and grid as plain values, all that resuming or evaluating it needs."""
    return {
        "algorithm": experiment.algorithm,
        "preset": experiment.preset,
        "seed": experiment.seed,
        "num_seeds": experiment.num_seeds,
        "config": to_plain(experiment.config),
        "grid": [to_plain(point) for point in experiment.grid],
        **({"snapshots": list(experiment.snapshots)} if experiment.snapshots else {}),
    }


def to_plain(obj: Any) -> dict[str, Any]:
    """A dataclass as a dict of plain Python values (tuples become lists), for YAML and JSON."""
    out = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        out[field.name] = list(value) if isinstance(value, tuple) else value
    return out


def experiment_identity(experiment: Experiment) -> dict[str, Any]:
    """What makes two experiments the same run: algorithm, config, grid and seeds, as plain JSON values.
    A run folder's ``config.yaml`` and a checkpoint's ``meta.json`` are matched against it."""
    return json.loads(json.dumps({
        "algorithm": experiment.algorithm,
        "config": to_plain(experiment.config),
        "grid": [to_plain(point) for point in experiment.grid],
        "num_seeds": experiment.num_seeds,
        "seed": experiment.seed,
    }))


def known_baselines() -> list[str]:
    """The baseline modules installed in ``jaxmarl_suite.baselines``."""
    import importlib
    import pkgutil

    baselines = importlib.import_module("jaxmarl_suite.baselines")  # mapped from baselines/ at install
    return sorted(m.name for m in pkgutil.iter_modules(baselines.__path__)
                  if not m.ispkg and not m.name.startswith("_"))


def baseline_module(algorithm: str) -> ModuleType:
    """Import ``jaxmarl_suite.baselines.<algorithm>`` by name, naming the known ones when it doesn't exist.

    Looked up at run time: the runner drives any baseline and imports none.
    """
    import importlib

    known = known_baselines()
    if algorithm not in known:
        raise ConfigError(f"algorithm: unknown baseline {algorithm!r}; known: {known}")
    return importlib.import_module(f"jaxmarl_suite.baselines.{algorithm}")
