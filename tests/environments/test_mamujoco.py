"""Multi-agent MuJoCo: registration, spaces against the live reference, configuration errors, the extra's
error, domain randomisation under vmap, padded groups, and the card's observation layout.

Step-by-step parity is in test_mamujoco_parity.py; these tests compile at most a few small programs.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmarl_suite

pytest.importorskip("mujoco.mjx", reason="the mujoco extra (mujoco, mujoco-mjx) is not installed")
robotics = pytest.importorskip("gymnasium_robotics", reason="gymnasium-robotics is not installed")
mamujoco_v1 = robotics.mamujoco_v1

from jaxmarl_suite.environments.mamujoco import MaMuJoCo, card  # noqa: E402

ISSUE_TASKS = [
    ("HalfCheetah", "2x3"), ("HalfCheetah", "6x1"), ("Ant", "2x4"), ("Ant", "2x4d"), ("Ant", "4x2"),
    ("Hopper", "3x1"), ("Walker2d", "2x3"), ("Humanoid", "9|8"), ("HumanoidStandup", "9|8"),
    ("Reacher", "2x1"), ("Swimmer", "2x1"), ("ManySegmentSwimmer", "10x2"), ("ManySegmentAnt", "2x3"),
]
MABRAX_IDS = {"ant_4x2": "Ant_4x2", "halfcheetah_6x1": "HalfCheetah_6x1", "hopper_3x1": "Hopper_3x1",
              "humanoid_9|8": "Humanoid_9|8", "walker2d_2x3": "Walker2d_2x3"}


def test_every_task_and_partition_of_the_issue_is_registered_with_jaxmarls_mabrax_ids() -> None:
    ids = set(jaxmarl_suite.registered_envs("mamujoco"))
    assert {f"MaMuJoCo_{s}_{p}" for s, p in ISSUE_TASKS} <= ids
    for alias, task in MABRAX_IDS.items():
        assert jaxmarl_suite.env_spec(alias).env_id == f"MaMuJoCo_{task}"


@pytest.mark.parametrize(("scenario", "conf", "obsk"), [(s, p, 1) for s, p in ISSUE_TASKS]
                         + [("HalfCheetah", "6x1", 0), ("Ant", "2x4d", 2), ("ManySegmentSwimmer", "4x3", 2)])
def test_agents_spaces_and_state_size_equal_the_references(scenario: str, conf: str, obsk: int) -> None:
    """Agent names, per-agent observation and action sizes, action bounds and the state size, read off a
    live ``mamujoco_v1`` env; agents of equal sizes share a group, in agent order."""
    reference = mamujoco_v1.parallel_env(scenario, conf, agent_obsk=obsk)
    env = MaMuJoCo(scenario, conf, agent_obsk=obsk)
    assert sorted(env.agents) == sorted(reference.possible_agents)
    for group, names in env.groups.items():
        for name in names:
            assert env.observation_space(group).shape == reference.observation_space(name).shape, name
            action = reference.action_space(name)
            assert env.action_space(group).shape == action.shape, name
            np.testing.assert_allclose(env.action_space(group).low, action.low)
            np.testing.assert_allclose(env.action_space(group).high, action.high)
        assert list(names) == sorted(names, key=lambda n: int(n.split("_")[1]))
    sizes = {g: (env.observation_space(g).shape, env.action_space(g).shape) for g in env.groups}
    assert len(set(sizes.values())) == len(sizes), "two groups with equal spaces should be one"
    reference.reset(seed=0)
    assert env.world_state_space().shape == reference.state().shape


def test_halfcheetah_6x1_splits_into_two_groups_of_nine_and_eight_values() -> None:
    env = jaxmarl_suite.make("halfcheetah_6x1")
    expected = {"obs9": ("agent_0", "agent_1", "agent_3", "agent_4"), "obs8": ("agent_2", "agent_5")}
    assert env.groups == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scenario": "HalfCheeta"}, "no scenario 'HalfCheeta'.*HalfCheetah"),
        ({"scenario": "Ant", "agent_conf": "3x3"}, "Ant has no partition '3x3'"),
        ({"scenario": "ManySegmentAnt", "agent_conf": "2x"}, "NxM"),
        ({"agent_obsk": -1}, "agent_obsk must be an int >= 0"),
        ({"local_categories": [["qpos"]]}, "one list per observation depth"),
        ({"global_categories": ["qpos", "qacc"]}, "unknown category 'qacc'"),
        ({"global_categories": "qpos"}, "list of categories"),
    ],
)
def test_bad_configuration_fails_at_make_naming_the_argument(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        jaxmarl_suite.make("MaMuJoCo_HalfCheetah_2x3", **kwargs)


def test_a_long_mjx_swimmer_on_the_cpu_warns_to_use_the_c_engine() -> None:
    """XLA's CPU backend steps MJX's long swimmer chains in minutes (46 s per env step at 20 links)."""
    with pytest.warns(UserWarning, match="physics='c'"):
        jaxmarl_suite.make("MaMuJoCo_ManySegmentSwimmer_10x2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jaxmarl_suite.make("MaMuJoCo_ManySegmentSwimmer_10x2", agent_conf="6x2")
        jaxmarl_suite.make("MaMuJoCo_ManySegmentSwimmer_10x2", physics="c")


def test_without_the_extra_make_fails_in_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] == "mujoco" else real(name, *a))
    with pytest.raises(ImportError) as error:
        jaxmarl_suite.make("MaMuJoCo_Ant_4x2")
    text = str(error.value)
    assert "\n" not in text and "pip install 'jaxmarl-suite[mujoco]'" in text and "mujoco" in text


def test_physical_constants_vary_across_a_vmapped_batch_of_params() -> None:
    """Domain randomisation: one compiled program steps three cheetahs of different masses, friction and
    gear; equal params give equal trajectories and each change moves the robot differently."""
    env = MaMuJoCo("HalfCheetah", "2x3")
    base = env.default_params
    params = [
        base,
        base.replace(body_mass=base.body_mass * 2.0),
        base.replace(actuator_gear=base.actuator_gear * 0.5, geom_friction=base.geom_friction * 0.2),
        base,
    ]
    batch = jax.tree.map(lambda *leaves: jnp.stack(leaves), *params)
    actions = {"agents": jnp.full((2, 3), 0.7)}

    def rollout(p: object) -> jax.Array:
        state, _ = env.reset(jax.random.key(0), p)
        state = jax.lax.fori_loop(0, 10, lambda _, s: env.step(jax.random.key(1), s, actions, p)[0], state)
        return state.qpos

    qpos = np.asarray(jax.jit(jax.vmap(rollout))(batch))
    np.testing.assert_array_equal(qpos[0], qpos[3])
    for changed in (1, 2):
        assert np.abs(qpos[changed] - qpos[0]).max() > 1e-3


def test_one_padded_group_by_flag_merges_the_cheetahs_two_groups() -> None:
    from jaxmarl_suite.wrappers import FlattenGroups

    env = FlattenGroups(jaxmarl_suite.make("MaMuJoCo_HalfCheetah_6x1"))
    assert len(env.groups) == 1 and len(next(iter(env.groups.values()))) == 6
    state, timestep = jax.jit(env.reset)(jax.random.key(0))
    (obs,) = timestep.obs.values()
    assert obs.shape[0] == 6 and obs.shape[1] >= 9


def test_the_cards_observation_layout_is_the_packages() -> None:
    """README.md lists every registered task's observation per agent; it must say what the code does."""
    text = (Path(card.__file__).parent / "README.md").read_text()
    found = re.search(r"<!-- layout:start -->\n(.*)<!-- layout:end -->", text, re.S)
    assert found, "the card's layout markers are missing"
    assert found.group(1).strip() == card.layout_markdown().strip(), (
        "regenerate with: python -c 'from jaxmarl_suite.environments.mamujoco import card; "
        "print(card.layout_markdown())'"
    )


@pytest.mark.slow  # a Reacher compile (16 s); to_jaxmarl's own tests cover the adapter by default
def test_to_jaxmarl_gives_a_dict_per_agent_with_the_world_state() -> None:
    """JaxMARL's API on a heterogeneous partition: one entry per agent in ``mamujoco_v1``'s names, the v5
    observation as ``obs["world_state"]``, dict actions in and per-agent rewards and dones out."""
    from jaxmarl_suite.compat import to_jaxmarl

    env = jaxmarl_suite.make("MaMuJoCo_Reacher_2x1")
    wrapped = to_jaxmarl(env)
    assert wrapped.agents == ["agent_0", "agent_1"]
    obs, state = jax.jit(wrapped.reset)(jax.random.key(0))
    assert obs["agent_0"].shape == (7,) and obs["agent_1"].shape == (10,)
    assert obs["world_state"].shape == (10,)
    actions = {"agent_0": jnp.array([0.5]), "agent_1": jnp.array([-0.5])}
    obs, state, reward, done, _ = jax.jit(wrapped.step)(jax.random.key(1), state, actions)
    assert reward["agent_0"] == reward["agent_1"] and reward["agent_0"] < 0  # the shared distance penalty
    assert set(done) == {"agent_0", "agent_1", "__all__"}
