"""IQL, VDN, QMIX and PQN: in-process smoke tests of ``make_train`` on 2 vmapped seeds with determinism,
action masks and heterogeneous groups in acting, in the replay buffer and in the mixers, the replay
buffer's memory check, and bit-identical resume with the buffer in the checkpoint.

Each program compiles in roughly 10-25 s on a 2-core CPU, so every test compiles as few as it can.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from env_cases import first_of_each_family
from toy_envs import TwoTeams

import jaxmarl_suite
from jaxmarl_suite.baselines import pqn, qmix
from jaxmarl_suite.core.spaces import Discrete
from jaxmarl_suite.errors import ConfigError, IncompatibleEnvError
from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.kit.q import replay_bytes
from jaxmarl_suite.training.runner.config import baseline_module, parse_experiment
from jaxmarl_suite.training.runner.experiment import run_experiment

SMALL_REPLAY = {"num_envs": 4, "num_steps": 25, "total_timesteps": 4 * 25 * 4, "buffer_size": 16,
                "buffer_batch_size": 4, "learning_starts": 200, "target_update_interval": 2,
                "hidden_sizes": (32,)}
"""Learning starts after the first update; the target net is updated after the second and fourth."""
SMALL_PQN = {"num_envs": 4, "num_steps": 25, "total_timesteps": 4 * 25 * 3, "num_minibatches": 4,
             "hidden_sizes": (32,)}
COMMON_METRICS = {"return_mean", "episode_length", "episodes", "epsilon", "td_loss", "q_taken",
                  "greedy_return_mean", "greedy_episode_length", "greedy_episodes"}


def small_config(name: str, **changes: object) -> Any:
    module = baseline_module(name)
    return module.Config(**{**(SMALL_PQN if name == "pqn" else SMALL_REPLAY), **changes})


@pytest.mark.parametrize("name", ["iql", "vdn", "qmix", "pqn"])
def test_two_seeds_run_with_finite_td_loss_and_repeat_bit_for_bit(name: str) -> None:
    """Two vmapped seeds train on simple_spread: every metric is there, the TD loss is finite once learning
    has started, the seeds differ, and the same seeds give the same result."""
    module = baseline_module(name)
    config = small_config(name)
    train = jax.jit(jax.vmap(make_train(module, config), in_axes=(0, None)))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    first, again = train(keys, module.HParams()), train(keys, module.HParams())
    assert set(first.metrics) == COMMON_METRICS
    learning = slice(0, None) if name == "pqn" else slice(1, None)  # replay learners wait one update
    assert np.isfinite(first.metrics["td_loss"][:, learning]).all()
    if name != "pqn":
        assert np.isnan(first.metrics["td_loss"][:, 0]).all()  # before learning_starts nothing is learnt
    # 25-step episodes end with every rollout: 1 of the 4 envs acts greedily (greedy_fraction 1/8, at least 1)
    np.testing.assert_array_equal(first.metrics["episodes"], config.num_envs - 1)
    np.testing.assert_array_equal(first.metrics["greedy_episodes"], 1)
    assert not np.array_equal(first.metrics["q_taken"][0], first.metrics["q_taken"][1])
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(first.runner.update, [config.num_updates] * 2)
    if name != "pqn":  # the target net was last copied at update 4, the final one
        for online, target in zip(jax.tree.leaves(first.runner.params),
                                  jax.tree.leaves(first.runner.target_params), strict=True):
            np.testing.assert_array_equal(np.asarray(online), np.asarray(target))


def test_qmix_masks_and_mixes_heterogeneous_groups() -> None:
    """TwoTeams: red (2 agents, 3 actions) and blue (1 agent, 4 actions, action 3 illegal on odd steps).
    Every action QMIX stored while exploring (epsilon 1 at first) is legal, each group has its own
    recurrent net, the mixer takes all 3 agents without padding, and the greedy policy never takes an
    illegal action."""
    jaxmarl_suite.register("Toy_two_teams_q", TwoTeams, overwrite=True)
    config = qmix.Config(**{**SMALL_REPLAY, "env_id": "Toy_two_teams_q", "num_steps": 14,
                            "total_timesteps": 4 * 14 * 3, "learning_starts": 56}, recurrent=True, gru_size=8)
    trainer = qmix.make_trainer(config, qmix.make_env(config))
    runner = jax.jit(trainer.init)(jax.random.PRNGKey(0), qmix.HParams())
    update = jax.jit(trainer.update)
    for _ in range(3):
        runner, metrics = update(runner, qmix.HParams())
    assert np.isfinite(metrics["td_loss"])
    stored = runner.buffer.experience  # [1, capacity, T, ...]: 12 of 16 slots written
    filled = slice(0, 12)
    for group, actions in (("red", 3), ("blue", 4)):
        action = np.asarray(stored["groups"][group]["action"][0, filled])
        mask = np.asarray(stored["groups"][group]["mask"][0, filled])
        assert mask.shape[-1] == actions
        assert np.take_along_axis(mask, action[..., None], -1).all(), group
    blue_mask = np.asarray(stored["groups"]["blue"]["mask"][0, filled])
    assert not blue_mask[..., 0, 3].all() and blue_mask[..., 0, 3].any()  # the rule was exercised
    kernels = {g: runner.params["agents"][g]["params"]["Dense_0"]["kernel"].shape for g in ("red", "blue")}
    assert kernels == {"red": (3 + 2, 8), "blue": (5, 8)}  # red's 2 agents get an id, blue's one does not
    w1 = runner.params["mixer"]["params"]["w1"]["kernel"]
    assert w1.shape[-1] == 3 * config.mixer_embedding

    env = qmix.make_env(config, 8)
    policy = qmix.make_policy(config, env)
    agents = qmix.policy_params(runner)

    def odd_step_blue(key: jax.Array) -> jax.Array:
        state, timestep = env.reset(key)
        zeros = {"red": np.zeros((8, 2), np.int32), "blue": np.zeros((8, 1), np.int32)}
        _, timestep = env.step(key, state, zeros)  # an odd step
        _, actions = policy.act(agents, policy.init_hidden(8), timestep, np.zeros(8, bool), key, True)
        return actions["blue"]

    for seed in range(5):
        assert not np.any(np.asarray(jax.jit(odd_step_blue)(jax.random.PRNGKey(seed))) == 3)


def test_pqn_vdn_on_heterogeneous_groups() -> None:
    """PQN with VDN mixing sums the values of both TwoTeams groups into one team value and learns."""
    jaxmarl_suite.register("Toy_two_teams_q", TwoTeams, overwrite=True)
    config = pqn.Config(**{**SMALL_PQN, "env_id": "Toy_two_teams_q", "num_steps": 14,
                           "total_timesteps": 4 * 14 * 2, "num_minibatches": 2}, vdn=True)
    output = jax.jit(make_train(pqn, config))(jax.random.PRNGKey(0), pqn.HParams())
    assert np.isfinite(output.metrics["td_loss"]).all()
    assert set(output.runner.params) == {"red", "blue"}


def test_q_learning_refuses_continuous_actions_and_oversized_buffers() -> None:
    config = small_config("iql", env_kwargs={"continuous_actions": True})
    iql = baseline_module("iql")
    with pytest.raises(IncompatibleEnvError, match="Q-learning needs Discrete actions"):
        iql.make_trainer(config, iql.make_env(config))
    huge = small_config("qmix", env_id="SMAX_3m", buffer_size=10**9)
    with pytest.raises(ConfigError, match=r"^buffer_size: the replay buffer needs .* GiB.*--buffer-size"):
        qmix.make_trainer(huge, qmix.make_env(huge))
    with pytest.raises(ConfigError, match="buffer_size: must hold at least"):
        small_config("vdn", buffer_size=2).validate()


def test_resume_with_the_replay_buffer_is_bit_identical(tmp_path: Path) -> None:
    """A VDN run resumed from its first checkpoint ends exactly where the uninterrupted run ends: the
    buffer and the target net are in the checkpoint."""
    args = ["--env", "MPE_simple_spread_v3", "--num-envs", "4", "--num-steps", "25",
            "--total-timesteps", "400",
            "--buffer-size", "16", "--buffer-batch-size", "4", "--learning-starts", "100",
            "--target-update-interval", "3", "--hidden-sizes", "[16]", "--checkpoint-every", "2",
            "--wandb", "disabled", "--no-progress"]
    vdn = baseline_module("vdn")
    full = run_experiment(vdn, parse_experiment("vdn", vdn.Config, vdn.HParams,
                                                [*args, "--run-dir", str(tmp_path / "full")]))
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "full", copy)
    shutil.rmtree(copy / "checkpoints" / "4")
    (copy / "summary.json").unlink()
    resume = ["--resume", str(copy), "--wandb", "disabled", "--no-progress"]
    resumed = run_experiment(vdn, parse_experiment("vdn", vdn.Config, vdn.HParams, resume))
    leaves = jax.tree.leaves(full.state)
    assert any(np.asarray(leaf).size > 10_000 for leaf in leaves)  # the buffer is among them
    for a, b in zip(leaves, jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("env_id", first_of_each_family())
def test_qmix_and_pqn_build_on_every_family(env_id: str) -> None:
    """Every built-in family's first env: QMIX's and PQN's update traces (shapes only, nothing compiles)
    where every group acts discretely, and is refused with ``IncompatibleEnvError`` otherwise."""
    for name in ("qmix", "pqn"):
        module = baseline_module(name)
        config = small_config(name, env_id=env_id)
        env = module.make_env(config)
        discrete = all(isinstance(env.action_space(g), Discrete) for g in env.groups)
        if not discrete:
            with pytest.raises(IncompatibleEnvError):
                module.make_trainer(config, env)
            continue
        trainer = module.make_trainer(config, env)
        state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0), module.HParams())
        _, metrics = jax.eval_shape(trainer.update, state, module.HParams())
        assert metrics["td_loss"].shape == ()


def test_many_seeds_whose_buffers_cannot_fit_fail_before_compiling(tmp_path: Path) -> None:
    """One run's buffer fits, 64 seeds' do not: the runner refuses before compiling or writing anything."""
    from jaxmarl_suite.training.runner.experiment import build_trainer, check_state_fits

    vdn = baseline_module("vdn")
    args = ["--num-envs", "4", "--num-steps", "25", "--buffer-size", "64", "--wandb", "disabled",
            "--run-dir", str(tmp_path / "run")]
    one = parse_experiment("vdn", vdn.Config, vdn.HParams, [*args, "--seeds", "1"])
    many = parse_experiment("vdn", vdn.Config, vdn.HParams, [*args, "--seeds", "64"])
    trainer = build_trainer(vdn, one.config)
    one_run = replay_bytes(jax.eval_shape(trainer.init, jax.random.PRNGKey(0), vdn.HParams()), 1)
    check_state_fits(one, trainer, free_bytes=10 * one_run)
    with pytest.raises(ConfigError, match=r"^buffer_size: the state of 64 run\(s\), replay buffers included"):
        check_state_fits(many, trainer, free_bytes=10 * one_run)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("name", "param_sharing"), [("iql", "agent"), ("vdn", "all"), ("pqn", "agent")])
def test_parameter_sharing_flags(name: str, param_sharing: str) -> None:
    """The PPO baselines' sharing flags: one net per agent (stacked on a leading agent axis) or one for every
    agent on FlattenGroups' padded observations. Shapes only: nothing compiles."""
    module = baseline_module(name)
    config = small_config(name, env_id="MPE_simple_adversary_v3", param_sharing=param_sharing)
    env = module.make_env(config)
    trainer = module.make_trainer(config, env)
    state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0), module.HParams())
    jax.eval_shape(trainer.update, state, module.HParams())
    params = module.policy_params(state)
    assert set(params) == set(env.groups)
    for group in env.groups:
        kernel = params[group]["params"]["Dense_0"]["kernel"]
        per_agent = (env.group_size(group),) if param_sharing == "agent" else ()
        assert kernel.shape[: len(per_agent)] == per_agent
        assert kernel.shape[-2] >= env.observation_space(group).shape[0]


@pytest.mark.parametrize("name", ["iql", pytest.param("vdn", marks=pytest.mark.slow),
                                  pytest.param("qmix", marks=pytest.mark.slow)])
def test_the_target_networks_move_by_polyak_averaging(name: str) -> None:
    """Each replay file's own target update, by hand: with ``tau`` 0.5 and an update every update, after the
    first learning update every target parameter (the mixer's too) is the mean of its old value and the new
    online one, so it is neither the old target nor a copy of the online net."""
    module = baseline_module(name)
    config = small_config(name, learning_starts=100, target_update_interval=1)
    env = module.make_env(config)
    trainer = module.make_trainer(config, env)
    hparams = module.HParams(tau=0.5)
    runner = trainer.init(jax.random.PRNGKey(0), hparams)
    after, metrics = jax.jit(trainer.update)(runner, hparams)
    assert np.isfinite(metrics["td_loss"])  # 100 env steps reach learning_starts: this update learnt
    old, online, new = (jax.tree.leaves(tree) for tree in (runner.target_params, after.params,
                                                              after.target_params))
    assert len(new) == len(old) > 0
    for old_leaf, online_leaf, new_leaf in zip(old, online, new, strict=True):
        np.testing.assert_allclose(new_leaf, 0.5 * np.asarray(old_leaf) + 0.5 * np.asarray(online_leaf),
                                   rtol=1e-6, atol=1e-7)
    moved = [not np.allclose(o, n) for o, n in zip(old, online, strict=True)]
    assert any(moved), "the online net did not learn, so the averaging was not tested"
