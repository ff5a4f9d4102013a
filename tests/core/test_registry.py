"""Registry: aliases, close-match errors, user registration and argument validation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import numpy as np
import pytest
from toy_envs import TwoTeams

import jaxmarl_suite
from jaxmarl_suite.core.spaces import Box
from jaxmarl_suite.core.vec import VecEnv
from jaxmarl_suite.wrappers import Checked

if TYPE_CHECKING:
    from collections import OrderedDict as OnlyForTypeCheckers  # absent at run time: not judged


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


def test_a_non_string_id_is_a_type_error_naming_its_type() -> None:
    with pytest.raises(TypeError, match="env_id must be a string .* got int 3"):
        jaxmarl_suite.make(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got the class TwoTeams; register it first"):
        jaxmarl_suite.make(TwoTeams)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="checked must be a bool, got str 'false'"):
        jaxmarl_suite.make("MPE_simple_v3", checked="false")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("env_id", "keyword", "value", "expected"),
    [
        ("MPE_simple_spread_v3", "continuous_actions", "false", "bool"),  # "false" is truthy
        ("MPE_simple_spread_v3", "continuous_actions", 0, "bool"),
        ("MPE_simple_spread_v3", "num_agents", True, "int"),
        ("MPE_simple_spread_v3", "num_agents", 4.0, "int"),
        ("MPE_simple_spread_v3", "local_ratio", "0.5", "float (or int)"),
        ("MPE_simple_spread_v3", "num_landmarks", "2", "int or None"),
        ("SMAX_3m", "substeps", 8.0, "int"),
        ("SMAX_3m", "obs_last_actions", 1, "bool"),
    ],
)
def test_a_keyword_of_the_wrong_type_names_env_keyword_type_and_value(
    env_id: str, keyword: str, value: Any, expected: str
) -> None:
    with pytest.raises(TypeError) as error:
        jaxmarl_suite.make(env_id, **{keyword: value})
    message = str(error.value)
    for part in (env_id, repr(keyword), f"expects {expected}", f"got {type(value).__name__} {value!r}"):
        assert part in message


def test_keywords_of_a_compatible_type_still_build() -> None:
    assert jaxmarl_suite.make("MPE_simple_spread_v3", local_ratio=1).default_params.local_ratio == 1.0
    continuous = jaxmarl_suite.make("MPE_simple_spread_v3", continuous_actions=np.bool_(True))
    assert isinstance(continuous.action_space("agents"), Box)
    assert jaxmarl_suite.make("SMAX", scenario="2s3z", enemy="agents", max_steps=None).num_agents == 10


def test_every_registered_env_builds_with_its_registered_arguments_and_variants() -> None:
    for env_id in jaxmarl_suite.registered_envs():
        spec = jaxmarl_suite.env_spec(env_id)
        for variant in ({}, *spec.variants):
            assert jaxmarl_suite.make(env_id, **variant).agents, (env_id, variant)


class _Widget:
    pass


def _typed_by_defaults(flag=False, scale=1.0, count=2, name="toy"):  # unannotated on purpose
    return TwoTeams()


def _typed_opaquely(widget: _Widget | None = None, hidden: OnlyForTypeCheckers | None = None) -> TwoTeams:
    return TwoTeams()


def test_user_factories_are_judged_by_defaults_and_readable_annotations_only() -> None:
    jaxmarl_suite.register("Toy_typed_by_defaults", _typed_by_defaults, overwrite=True)
    jaxmarl_suite.register("Toy_typed_opaquely", _typed_opaquely, overwrite=True)
    for keyword, value, expected in (("flag", "no", "bool"), ("count", 2.5, "int"), ("name", 3, "str")):
        with pytest.raises(TypeError, match=f"Toy_typed_by_defaults: keyword '{keyword}' expects {expected}"):
            jaxmarl_suite.make("Toy_typed_by_defaults", **{keyword: value})
    jaxmarl_suite.make("Toy_typed_by_defaults", flag=True, scale=2, count=3, name="other")
    # A class of the env's own, and a name only type checkers can resolve, are left to the factory.
    jaxmarl_suite.make("Toy_typed_opaquely", widget=object(), hidden=object())


def test_an_id_scheme_builds_its_env_with_the_parsed_arguments() -> None:
    from jaxmarl_suite.core.registry import register_id_scheme

    built: list[dict[str, int]] = []

    def factory(size: int = 1, count: int = 1) -> TwoTeams:
        built.append({"size": size, "count": count})
        return TwoTeams()

    jaxmarl_suite.register("Toy_schemed", factory, overwrite=True)
    register_id_scheme(r"Toy-(?P<size>\d+)x(?P<count>\d+)", "Toy_schemed",
                       lambda match: {"size": int(match["size"]), "count": int(match["count"])})
    assert isinstance(jaxmarl_suite.make("Toy-3x2"), TwoTeams) and built[-1] == {"size": 3, "count": 2}
    jaxmarl_suite.make("Toy-3x2", count=5)  # the caller's keywords still win
    assert built[-1] == {"size": 3, "count": 5}
    spec = jaxmarl_suite.env_spec("Toy-3x2")
    assert spec.env_id == "Toy-3x2" and spec.kwargs == {"size": 3, "count": 2}
    assert "Toy-3x2" not in jaxmarl_suite.registered_envs()
    with pytest.raises(ValueError, match="Unknown env id"):
        jaxmarl_suite.make("Toy-3x")  # a partial match is no match
    with pytest.raises(ValueError, match="register 'Nope' before"):
        register_id_scheme(r"Nope-\d+", "Nope", lambda match: {})
