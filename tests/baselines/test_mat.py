"""MAT: the decoder's causal masks, autoregressive acting against teacher forcing, the encoder's symmetry
over a group's agents, the clipped objective on a hand-computed batch, the settings it refuses, the update
traced on groups, Box actions and shared parameters, and one compiled update on two vmapped seeds.

The network tests run ``mat.MAT`` on a toy pair of groups built here, without an env: red, 3 agents
observing 3 numbers with ``Discrete(4)`` actions, and blue, 2 agents observing 5 with ``Box`` actions of
2, so the sequence is red_0, red_1, red_2, blue_0, blue_1 (positions 0 to 4), groups of different
observation sizes and of both action kinds. Its parameters are redrawn at scale 0.5 (not MAT's small
initial scales) so that every input visibly moves every output it may reach. One test compiles a
trainer (about 20 s on 2 cores); the others trace shapes or run the toy network.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.baselines import mat
from jaxmarl_suite.core.spaces import Box, Discrete, Space
from jaxmarl_suite.errors import ConfigError

SPACES: dict[str, Space] = {"red": Discrete(4), "blue": Box(-1.0, 1.0, (2,))}
SIZES = {"red": 3, "blue": 2}
OBS_SIZES = {"red": 3, "blue": 5}
ROWS = 6
"""Joint samples (envs) per toy batch."""


def toy_network() -> tuple[mat.MAT, Any]:
    net = mat.MAT(("red", "blue"), (3, 2), (4, 2), (True, False), embed_dim=16, num_blocks=2, num_heads=2,
                  hidden_sizes=(16,), activation="gelu")
    obs = {g: jnp.zeros((1, SIZES[g], OBS_SIZES[g])) for g in SIZES}
    # The parameters' shapes only (tracing init, not compiling it), each leaf then drawn by numpy.
    shapes = jax.eval_shape(net.init, jax.random.PRNGKey(0), obs, mat.example_actions(net, SPACES))
    rng = np.random.default_rng(0)
    return net, jax.tree.map(lambda x: jnp.asarray(0.5 * rng.standard_normal(x.shape), jnp.float32), shapes)


def toy_obs(seed: int = 2) -> dict[str, jax.Array]:
    rng = np.random.default_rng(seed)
    return {g: jnp.asarray(rng.standard_normal((ROWS, SIZES[g], OBS_SIZES[g])), jnp.float32) for g in SIZES}


def toy_actions(seed: int = 3) -> dict[str, jax.Array]:
    rng = np.random.default_rng(seed)
    return {"red": jnp.asarray(rng.integers(0, 4, (ROWS, 3)), jnp.int32),
            "blue": jnp.asarray(rng.standard_normal((ROWS, 2, 2)), jnp.float32)}


def heads_by_position(apply: Any, params: Any, obs: dict, actions: dict) -> list[np.ndarray]:
    """The teacher-forced policy heads (``apply``: the network's, jitted), one ``[ROWS, A]`` array per
    sequence position."""
    heads, _, _ = apply(params, obs, actions)
    return [np.asarray(heads[g][:, k]) for g in ("red", "blue") for k in range(SIZES[g])]


def with_changed_actions(actions: dict, positions: set[int]) -> dict:
    """``actions`` with the agents at ``positions`` taking another action (red: the next one, mod 4; blue:
    the vector plus 1)."""
    red, blue = np.asarray(actions["red"]).copy(), np.asarray(actions["blue"]).copy()
    for position in positions:
        if position < 3:
            red[:, position] = (red[:, position] + 1) % 4
        else:
            blue[:, position - 3] += 1.0
    return {"red": jnp.asarray(red), "blue": jnp.asarray(blue)}


def textbook_attention(params: Any, queries: np.ndarray, tokens: np.ndarray, heads: int,
                       causal: bool) -> np.ndarray:
    """Multi-head attention in numpy, in float64, in the textbook order: project queries, keys and values,
    per head softmax(q k^T / sqrt(d)) v, concatenate, project."""
    def project(name: str, x: np.ndarray) -> np.ndarray:
        kernel, bias = (np.asarray(params[name][leaf], np.float64) for leaf in ("kernel", "bias"))
        return x @ kernel + bias

    d = queries.shape[-1]
    e = d // heads
    q, k, v = project("query", queries), project("key", tokens), project("value", tokens)
    out = np.zeros_like(q)
    for m in range(queries.shape[0]):
        for h in range(heads):
            cols = slice(h * e, (h + 1) * e)
            scores = q[m][:, cols] @ k[m][:, cols].T / np.sqrt(e)
            if causal:
                scores = np.where(np.tril(np.ones_like(scores)) > 0, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[m][:, cols] = (weights / weights.sum(axis=1, keepdims=True)) @ v[m][:, cols]
    return project("proj", out)


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_equals_the_textbook_order(heads: int, causal: bool) -> None:
    """``Attention`` applies its projections in another order (queries through ``Wq Wk^T``, the weighted
    tokens through ``Wv Wp``; the key bias dropped, as the softmax cancels it): its output equals textbook
    multi-head attention computed in numpy with the same parameters, every bias non-zero."""
    d, rows, n = 8, 3, 4
    layer = mat.Attention(d, heads, causal)
    rng = np.random.default_rng(heads + 2 * causal)
    queries, tokens = (jnp.asarray(rng.standard_normal((rows, n, d)), jnp.float32) for _ in range(2))
    shapes = jax.eval_shape(layer.init, jax.random.PRNGKey(0), queries, tokens)
    params = jax.tree.map(lambda x: jnp.asarray(0.5 * rng.standard_normal(x.shape), jnp.float32), shapes)
    ours = np.asarray(jax.jit(layer.apply)(params, queries, tokens))
    expected = textbook_attention(params["params"], np.asarray(queries, np.float64),
                                  np.asarray(tokens, np.float64), heads, causal)
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-5)
    # The key bias moves nothing (the softmax cancels it); the query bias does (it meets the key kernel).
    for name, moves in (("key", False), ("query", True)):
        bumped = jax.tree.map(lambda x: x, params)
        bumped["params"][name]["bias"] = params["params"][name]["bias"] + 1.0
        shifted = np.asarray(jax.jit(layer.apply)(bumped, queries, tokens))
        assert (np.abs(shifted - ours).max() > 1e-3) == moves


def test_the_decoder_is_causal() -> None:
    """Agent ``i``'s head depends on the actions of agents ``0 .. i - 1`` only: changing the actions of
    agents ``i, i + 1, ...`` (its own included) leaves the heads of agents ``0 .. i`` bit for bit, and
    changing agent 0's action moves the head of every agent after it (and not its own)."""
    net, params = toy_network()
    apply = jax.jit(net.apply)
    obs, actions = toy_obs(), toy_actions()
    base = heads_by_position(apply, params, obs, actions)
    for i in range(5):
        changed = heads_by_position(apply, params, obs, with_changed_actions(actions, set(range(i, 5))))
        for j in range(i + 1):
            np.testing.assert_array_equal(changed[j], base[j], err_msg=f"agent {j} saw agent >= {i}'s action")
    changed = heads_by_position(apply, params, obs, with_changed_actions(actions, {0}))
    np.testing.assert_array_equal(changed[0], base[0])
    for j in range(1, 5):
        assert np.abs(changed[j] - base[j]).max() > 1e-4, f"agent {j} ignores agent 0's action"


def test_the_causal_check_catches_an_unmasked_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: with the masks' scores left as they are (a decoder that sees every position),
    blue_0's action (the last token of the shifted sequence: the last agent's action is never an input)
    reaches the first agent's head, which the check above would catch."""
    monkeypatch.setattr(mat, "MASKED_SCORE", 0.0)
    net, params = toy_network()
    # A function of its own: ``jax.jit(net.apply)`` would find the masked program the test above traced.
    apply = jax.jit(lambda p, o, a: net.apply(p, o, a))
    obs, actions = toy_obs(), toy_actions()
    base = heads_by_position(apply, params, obs, actions)
    changed = heads_by_position(apply, params, obs, with_changed_actions(actions, {3}))
    assert np.abs(changed[0] - base[0]).max() > 1e-4


def test_acting_agent_by_agent_equals_teacher_forcing() -> None:
    """The log-probabilities of actions drawn autoregressively (each agent's drawn after the decoder saw
    the earlier agents' draws) equal the teacher-forced log-probabilities of the same actions in one pass;
    so do the values, and the draws respect red's action mask (action 3 illegal for red_1)."""
    net, params = toy_network()
    obs = toy_obs()
    mask = jnp.ones((ROWS, 3, 4), bool).at[:, 1, 3].set(False)
    act = jax.jit(lambda p, o, m, k: mat.act(net, SPACES, p, o, {"red": m}, k))
    evaluate = jax.jit(lambda p, o, a, m: mat.evaluate(net, SPACES, p, o, a, {"red": m}))
    for seed in range(3):
        actions, log_probs, values = act(params, obs, mask, jax.random.PRNGKey(seed))
        assert np.asarray(actions["blue"]).shape == (ROWS, 2, 2)
        assert not np.any(np.asarray(actions["red"])[:, 1] == 3)
        forced_log_probs, _, forced_values = evaluate(params, obs, actions, mask)
        for g in SIZES:
            np.testing.assert_allclose(np.asarray(log_probs[g]), np.asarray(forced_log_probs[g]), rtol=1e-5,
                                       atol=1e-5)
            np.testing.assert_allclose(np.asarray(values[g]), np.asarray(forced_values[g]), rtol=1e-5,
                                       atol=1e-6)


def test_the_encoder_is_permutation_equivariant_within_a_group() -> None:
    """MAT has no positional (agent-index) encoding, and a group's agents share their observation
    embedding, so permuting red's agents permutes red's values the same way and leaves blue's as they are:
    the encoder reads a group as a set. The decoder is not so (an agent acts after the agents before it
    in the sequence): the same permutation does not simply permute red's policy heads."""
    net, params = toy_network()
    obs, actions = toy_obs(), toy_actions()
    order = np.array([2, 0, 1])
    permuted_obs = {"red": obs["red"][:, order], "blue": obs["blue"]}
    encode, apply = jax.jit(lambda p, o: net.apply(p, o, method=mat.MAT.encode)), jax.jit(net.apply)
    _, values = encode(params, obs)
    _, permuted_values = encode(params, permuted_obs)
    # Float32 tolerances: permuting the agents reorders the attention's sums over them.
    np.testing.assert_allclose(np.asarray(permuted_values["red"]), np.asarray(values["red"])[:, order],
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(permuted_values["blue"]), np.asarray(values["blue"]), rtol=1e-4,
                               atol=1e-5)
    heads, _, _ = apply(params, obs, actions)
    permuted_heads, _, _ = apply(params, permuted_obs, {"red": actions["red"][:, order],
                                                            "blue": actions["blue"]})
    assert np.abs(np.asarray(permuted_heads["red"]) - np.asarray(heads["red"])[:, order]).max() > 1e-3


def test_the_clipped_objective_by_hand() -> None:
    """``ppo_loss`` on one group of two agents over two steps (agent 1 dead at step 1), against the
    objective computed here with numpy: advantages normalised over the three live agent-steps, each
    agent's own ratio clipped at 1 +- 0.2, MAPPO's clipped value loss, the entropy bonus."""
    old_log_prob = np.log(np.array([[0.5, 0.4], [0.3, 0.6]]))
    new_log_prob = np.log(np.array([[0.7, 0.3], [0.33, 0.9]]))
    advantage = np.array([[1.0, -0.5], [2.0, 30.0]])
    alive = np.array([[True, True], [True, False]])
    old_value = np.array([[0.5, 0.2], [1.0, 4.0]])
    new_value = np.array([[0.9, 0.1], [0.95, -3.0]])
    target = np.array([[1.5, -0.4], [0.7, 9.0]])
    entropy = np.array([[1.2, 0.8], [1.0, 7.0]])
    clip_eps, vf_coef, ent_coef = 0.2, 0.5, 0.01

    live = alive.astype(np.float64)

    def mean(x: np.ndarray) -> float:
        return float((x * live).sum() / live.sum())

    normalized = (advantage - mean(advantage)) / (np.sqrt(mean((advantage - mean(advantage)) ** 2)) + 1e-8)
    ratio = np.exp(new_log_prob - old_log_prob)
    surrogate = np.minimum(ratio * normalized, np.clip(ratio, 1 - clip_eps, 1 + clip_eps) * normalized)
    actor_loss = -mean(surrogate)
    clipped_value = old_value + np.clip(new_value - old_value, -clip_eps, clip_eps)
    value_loss = 0.5 * mean(np.maximum((new_value - target) ** 2, (clipped_value - target) ** 2))
    expected = actor_loss + vf_coef * value_loss - ent_coef * mean(entropy)
    # The ratios are 1.4, 0.75, 1.1 (and 1.5, dead): two of the three live ones outside [0.8, 1.2].
    np.testing.assert_allclose(ratio[alive], [1.4, 0.75, 1.1], rtol=1e-12)

    def f32(x: np.ndarray) -> jax.Array:
        return jnp.asarray(x, jnp.float32)

    batch = {"agents": {"log_prob": f32(old_log_prob), "value": f32(old_value), "advantage": f32(advantage),
                        "target": f32(target), "alive": jnp.asarray(alive)}}
    outputs = {"agents": (f32(new_log_prob), f32(entropy), f32(new_value))}
    loss, parts = mat.ppo_loss(outputs, batch, mat.HParams(clip_eps=clip_eps, vf_coef=vf_coef,
                                                           ent_coef=ent_coef))
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert float(parts["actor_loss"]) == pytest.approx(actor_loss, rel=1e-5)
    assert float(parts["value_loss"]) == pytest.approx(value_loss, rel=1e-5)
    assert float(parts["entropy"]) == pytest.approx(1.0, rel=1e-6)
    assert float(parts["clip_frac"]) == pytest.approx(2 / 3, rel=1e-6)


@pytest.mark.parametrize(("overrides", "field"), [
    ({"recurrent": True}, "recurrent"),
    ({"param_sharing": "agent"}, "param_sharing"),
    ({"embed_dim": 64, "num_heads": 3}, "num_heads"),
    ({"num_blocks": 0}, "num_blocks"),
])
def test_settings_mat_cannot_take_are_refused(overrides: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=f"^{field}: "):
        mat.Config(**overrides).validate()


@pytest.mark.parametrize(("env_id", "env_kwargs", "param_sharing"), [
    ("MPE_simple_tag_v3", {}, "group"),  # two groups, different observation sizes and group sizes
    ("MPE_simple_tag_v3", {}, "all"),  # flattened into one padded group
    ("MPE_simple_spread_v3", {"continuous_actions": True}, "group"),  # Box actions
], ids=["tag-group", "tag-all", "spread-box"])
def test_the_update_traces_with_groups_box_actions_and_sharing(env_id: str, env_kwargs: dict,
                                                                 param_sharing: str) -> None:
    """Shapes only (nothing compiles); the trained policy acts, sampling and by its mode."""
    config = mat.Config(env_id=env_id, env_kwargs=env_kwargs, num_envs=2, num_steps=8, total_timesteps=32,
                        num_minibatches=2, hidden_sizes=(8,), embed_dim=8, param_sharing=param_sharing)
    trainer = mat.make_trainer(config, mat.make_env(config))
    runner = jax.eval_shape(trainer.init, jax.random.PRNGKey(0), mat.HParams())
    runner, metrics = jax.eval_shape(trainer.update, runner, mat.HParams())
    assert all(metrics[name].shape == () for name in (*mat.LOSS_PARTS, "total_loss"))
    env = mat.make_env(config, 3, auto_reset=False)
    policy = mat.make_policy(config, env)
    _, timestep = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    for deterministic in (False, True):
        _, actions = jax.eval_shape(lambda p, t, d=deterministic: policy.act(
            p, policy.init_hidden(3), t, jnp.ones(3, bool), jax.random.PRNGKey(1), d),
            mat.policy_params(runner), timestep)
        assert {g: a.shape[:2] for g, a in actions.items()} == {g: (3, env.group_size(g)) for g in env.groups}


def test_compiled_updates_on_two_seeds() -> None:
    """Two updates on simple_spread for 2 vmapped seeds (groups are traced above; one group compiles
    fastest): the losses are finite, the embeddings, heads and blocks all move, and the optimizer steps
    ``update_epochs * num_minibatches`` times per update."""
    config = mat.Config(num_envs=2, num_steps=8, total_timesteps=2 * 8 * 2, update_epochs=2,
                        num_minibatches=2, hidden_sizes=(8,), embed_dim=8)
    assert config.env_id == "MPE_simple_spread_v3"
    trainer = mat.make_trainer(config, mat.make_env(config))
    hparams = mat.HParams()
    init = jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))
    runner = init(jax.random.split(jax.random.PRNGKey(0), 2), hparams)
    update = jax.jit(jax.vmap(trainer.update, in_axes=(0, None)))
    first = runner
    for _ in range(2):
        runner, metrics = update(runner, hparams)
        assert all(np.all(np.isfinite(np.asarray(metrics[name]))) for name in (*mat.LOSS_PARTS, "total_loss"))
    before, after = first.params["params"], runner.params["params"]
    assert set(before) == {"obs_norm_agents", "obs_embedding_agents", "encoder_norm", "encoder_blocks_0",
                           "value_head_agents", "action_embedding_agents", "start_token", "decoder_norm",
                           "decoder_blocks_0", "action_head_agents", "log_std_agents"}
    for name in set(before) - {"log_std_agents"}:  # discrete actions: the Gaussian's log_std is unused
        moved = jax.tree.map(lambda a, b: np.abs(np.asarray(a) - np.asarray(b)).max(), before[name],
                             after[name])
        assert max(jax.tree.leaves(moved)) > 0, name
    counts = [leaf for leaf in jax.tree.leaves(runner.opt_state) if jnp.issubdtype(leaf.dtype, jnp.integer)]
    assert counts and all(np.asarray(c).tolist() == [8, 8] for c in counts)
