"""Registry: aliases, close-match errors, user registration and argument validation."""

from __future__ import annotations

import jax
import pytest
from toy_envs import TwoTeams

import jaxmarl_suite
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers import Checked


def test_jaxmarl_and_mpe2_ids_build_the_same_env() -> None:
    for alias in ("MPE_simple_spread_v3", "simple_spread_v3", "simple_spread"):
        env = jaxmarl_suite.make(alias)
        assert env.agents == ("agent_0", "agent_1", "agent_2")
    assert "MPE_simple_spread_v3" in jaxmarl_suite.registered_envs()
    assert jaxmarl_suite.env_spec("simple_spread_v3").env_id == "MPE_simple_spread_v3"


def test_unknown_id_names_the_closest_ids() -> None:
    with pytest.raises(ValueError, match="MPE_simple_spread_v3"):
        jaxmarl_suite.make("MPE_simple_sprea_v3")
    with pytest.raises(ValueError, match="Unknown env id 'totally_unrelated'"):
        jaxmarl_suite.make("totally_unrelated")


def test_bad_constructor_arguments_fail_clearly() -> None:
    with pytest.raises(TypeError, match="unknown argument.*num_agentz"):
        jaxmarl_suite.make("MPE_simple_spread_v3", num_agentz=4)
    with pytest.raises(ValueError, match="local_ratio"):
        jaxmarl_suite.make("MPE_simple_spread_v3", local_ratio=2.0)
    with pytest.raises(ValueError, match="num_envs"):
        jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=0)


def test_make_options_wrap_in_vec_and_checked() -> None:
    env = jaxmarl_suite.make("MPE_simple_spread_v3", num_envs=4, checked=True)
    assert isinstance(env, Checked) and isinstance(env.env, VecEnv) and env.num_envs == 4
    assert env.env.batch_native


def test_user_env_registers_and_vectorises_through_vmap() -> None:
    jaxmarl_suite.register("Toy_two_teams_test", TwoTeams, aliases=("toy_two_teams_test",), overwrite=True)
    with pytest.raises(ValueError, match="already registered"):
        jaxmarl_suite.register("Toy_two_teams_test", TwoTeams)
    env = jaxmarl_suite.make("toy_two_teams_test", num_envs=3)
    assert not env.batch_native
    _, timestep = env.reset(jax.random.PRNGKey(0))
    assert timestep.obs["red"].shape == (3, 2, 3) and timestep.obs["blue"].shape == (3, 1, 5)
