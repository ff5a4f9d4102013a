"""Every module in ``baselines/`` follows the kit's ``Baseline`` protocol, which is all the runner, the
sweep, ``eval``/``render``, the benchmarks and the tests use of it."""

from __future__ import annotations

import dataclasses
import inspect
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from offline_data import synthetic_vault

from jaxmarl_suite.training.kit.baseline import Baseline
from jaxmarl_suite.training.runner.config import baseline_module, field_docs, known_baselines

CONFIG_FIELDS = ("env_id", "env_kwargs", "num_envs", "total_timesteps", "log_every", "checkpoint_every")
"""What the runner reads of every ``Config``."""
SIGNATURES = {"make_env": ["config", "num_envs", "auto_reset"], "make_trainer": ["config", "env"],
              "make_policy": ["config", "env"], "policy_params": ["runner"], "main": ["argv"]}


def contract_violations(module: types.ModuleType) -> list[str]:
    """What ``module`` lacks of the contract, as readable lines (empty when it follows it)."""
    problems = []
    if not isinstance(module, Baseline):
        missing = [name for name in ("Config", "HParams", *SIGNATURES) if not hasattr(module, name)]
        return [f"not a Baseline: missing {missing}"]
    for name, expected in SIGNATURES.items():
        parameters = list(inspect.signature(getattr(module, name)).parameters)
        if parameters != expected:
            problems.append(f"{name}{tuple(parameters)}: expected parameters {expected}")
    for cls_name in ("Config", "HParams"):
        cls = getattr(module, cls_name)
        if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            problems.append(f"{cls_name} must be a frozen dataclass")
            continue
        if not callable(getattr(cls, "validate", None)):
            problems.append(f"{cls_name} has no validate()")
        undocumented = sorted({f.name for f in dataclasses.fields(cls)} - set(field_docs(cls)))
        if undocumented:
            problems.append(f"{cls_name} fields without a docstring: {undocumented}")
    config = module.Config()
    problems += [f"Config lacks {name}" for name in (*CONFIG_FIELDS, "batch_size", "num_updates")
                 if not hasattr(config, name)]
    return problems


@pytest.mark.parametrize("name", known_baselines())
def test_every_baseline_follows_the_contract(name: str) -> None:
    assert contract_violations(baseline_module(name)) == []


@pytest.mark.parametrize("name", known_baselines())
def test_trainer_and_policy_work_on_the_env_handed_over(name: str, tmp_path: Path) -> None:
    """``make_trainer`` returns the env it was given, its state counts updates (the runner's loop and
    logging read ``update``), and ``make_policy`` acts on a ``make_env`` of another size. Shapes only:
    nothing compiles. BC, which trains from a dataset, gets a synthetic vault of its default env."""
    module = baseline_module(name)
    inputs = {"dataset": str(synthetic_vault(tmp_path))} if name == "bc" else {}
    config = module.Config(num_envs=2, **inputs)
    env = module.make_env(config)
    trainer = module.make_trainer(config, env)
    assert trainer.env is env
    state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0), module.HParams())
    assert state.update.shape == () and jnp.issubdtype(state.update.dtype, jnp.integer)
    small = module.make_env(config, 3, auto_reset=False)
    policy = module.make_policy(config, small)
    _, timestep = jax.eval_shape(small.reset, jax.random.PRNGKey(0))
    params = jax.eval_shape(lambda s: module.policy_params(s), state)
    _, actions = jax.eval_shape(lambda p, t: policy.act(p, policy.init_hidden(3), t, jnp.ones(3, bool),
                                                        jax.random.PRNGKey(1)), params, timestep)
    assert {g: a.shape[0] for g, a in actions.items()} == {g: 3 for g in small.groups}


def test_the_contract_check_catches_a_broken_baseline() -> None:
    """Negative control: a copy of IPPO whose ``make_trainer`` builds its own env, and one without
    ``make_env``, both fail."""
    ippo = baseline_module("ippo")
    builds_its_own = types.ModuleType("builds_its_own")
    builds_its_own.__dict__.update({k: v for k, v in vars(ippo).items() if not k.startswith("__")})
    builds_its_own.make_trainer = lambda config: None  # type: ignore[attr-defined]
    assert contract_violations(builds_its_own) == ["make_trainer('config',): expected parameters "
                                                   "['config', 'env']"]
    del builds_its_own.make_env
    assert contract_violations(builds_its_own)[0].startswith("not a Baseline: missing ['make_env']")
