"""The contract between a baseline module and the runner, and the one composition of a training run.

A baseline is a module (``baselines/ippo.py``) that provides what ``Baseline`` lists. The runner, the
sweep, ``eval``/``render``, ``scripts/bench_train.py`` and the tests use nothing else of it, so a new
algorithm plugs into all of them by following this protocol; ``tests/baselines/test_contract.py``
checks every module in ``baselines/`` against it.

``make_train`` is how every caller turns a ``Trainer`` into one pure ``train(key, hparams)`` program, and
``scan_updates`` is its loop, which the runner also calls (in chunks between checkpoints) so that both
paths run the same updates in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax
from jax.experimental import io_callback

from jaxmarl_suite.core.env import MultiAgentEnv

Array = jax.Array


class Policy(NamedTuple):
    """Acting with trained parameters (used by rollouts, ``eval`` and ``render``)."""

    init_hidden: Callable[[int], dict[str, Array]]
    """``num_envs -> {group: [num_envs, n, H]}``."""
    act: Callable[..., tuple[dict[str, Array], dict[str, Array]]]
    """``(params, hidden, timestep, starts, key, deterministic) -> (hidden, env actions)``."""


class Trainer(NamedTuple):
    """``init(key, hparams) -> runner`` and ``update(runner, hparams) -> (runner, metrics)``, both pure.

    The runner state and ``HParams`` types are the baseline's own; the runner state has an integer
    ``update`` field counting the updates done.
    """

    init: Callable[[Array, Any], Any]
    update: Callable[[Any, Any], tuple[Any, dict[str, Array]]]
    env: MultiAgentEnv
    """The env the trainer steps (the one handed to ``make_trainer``)."""


@runtime_checkable
class Baseline(Protocol):
    """What a baseline module provides. ``Config`` and ``HParams`` are frozen dataclasses whose fields each
    carry a one-line docstring (they become ``--dashed-flags``); ``Config`` has ``env_id``,
    ``env_kwargs``, ``num_envs``, ``total_timesteps``, ``log_every``, ``checkpoint_every`` and the
    properties ``batch_size`` and ``num_updates``, and both have ``validate()`` raising ``ConfigError``."""

    Config: type
    """Static settings: changing one recompiles."""
    HParams: type
    """Traceable hyperparameters: vmapped over for sweeps, so a grid compiles once."""

    def make_env(self, config: Any, num_envs: int | None = None, auto_reset: bool = True) -> MultiAgentEnv:
        """The env stack this baseline trains on (``num_envs`` defaults to ``config.num_envs``);
        evaluation uses it too, and rendering with ``auto_reset=False`` to keep an episode's last state."""
        ...

    def make_trainer(self, config: Any, env: MultiAgentEnv) -> Trainer:
        """The pure ``init`` and ``update`` of one run on ``env`` (built once by the caller)."""
        ...

    def make_policy(self, config: Any, env: MultiAgentEnv) -> Policy:
        """Acting with the parameters ``policy_params`` extracts, on any ``make_env(config, n)``."""
        ...

    def policy_params(self, runner: Any) -> Any:
        """The parameters ``make_policy``'s ``act`` takes, out of one run's runner state."""
        ...

    def main(self, argv: Sequence[str] | None = None) -> int:
        """The module's command line (``python baselines/NAME.py ...``)."""
        ...


class TrainOutput(NamedTuple):
    """The final runner state and per-update metrics (``[num_updates]`` each)."""

    runner: Any
    metrics: dict[str, Array]


UpdateHook = Callable[[Any, Any], None]
"""``(update counter, metrics) -> None``, called on the host after every update (logging)."""


def scan_updates(
    update: Callable[[Any, Any], tuple[Any, dict[str, Array]]], runner: Any, hparams: Any, length: int,
    on_update: UpdateHook | None = None, *, io: bool = False,
) -> tuple[Any, dict[str, Array]]:
    """``length`` updates in one ``lax.scan``; ``on_update`` receives each update's counter and metrics
    through ``jax.debug.callback``, so logging happens from inside the compiled loop. ``io`` uses
    ``io_callback`` instead (as JaxMARL's scripts do), which the benchmarks time updates with and stop a
    run early through by raising."""

    def body(runner: Any, _: None) -> tuple[Any, dict[str, Array]]:
        runner, metrics = update(runner, hparams)
        if on_update is not None and io:
            io_callback(on_update, None, runner.update, metrics)
        elif on_update is not None:
            jax.debug.callback(on_update, runner.update, metrics)
        return runner, metrics

    return jax.lax.scan(body, runner, None, length)


def make_train(baseline: Baseline, config: Any, env: MultiAgentEnv | None = None,
               on_update: UpdateHook | None = None, *, io: bool = False
               ) -> Callable[[Array, Any], TrainOutput]:
    """``train(key, hparams) -> TrainOutput`` for ``baseline`` (a module such as ``baselines.ippo``):
    init, then ``config.num_updates`` scanned updates on ``env`` (built by ``baseline.make_env`` when not
    given). Pure and jittable; vmap it over keys (seeds) and over ``HParams`` (grids) in one program.
    ``on_update``/``io`` as in ``scan_updates``. Bad settings raise ``ConfigError`` naming the field."""
    config.validate()  # before the env is built, so an error names the field rather than the env
    trainer = baseline.make_trainer(config, baseline.make_env(config) if env is None else env)

    def train(key: Array, hparams: Any) -> TrainOutput:
        runner = trainer.init(key, hparams)
        runner, metrics = scan_updates(trainer.update, runner, hparams, config.num_updates, on_update,
                                       io=io)
        return TrainOutput(runner, metrics)

    return train
