"""HAPPO: the sequential correction factor and the clipped surrogate on a hand-computed batch, the turns
(each agent's parameters written in its own turn only, in the drawn order), compiled updates on a tiny
simple_spread for 2 vmapped seeds (every agent updated once per update, a fresh order each update), and
the update traced on two groups, a GRU, Box actions and shared parameters.

The hand tests run toy policies through ``happo.sequential_update`` and ``happo.agent_turn`` (the code the
trainer runs); every expected number is derived in a comment. One test compiles a trainer (about 20 s on
2 cores); the others trace shapes or run toy functions.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_suite.baselines import happo

# Three agents, two actions each, uniform policies (logits 0). A turn adds the agent's shift to its logits:
#   agent 0: [ln 3, 0] -> probabilities (3/4, 1/4): ratio 1.5 for action 0, 0.5 for action 1
#   agent 1: [0, ln 3] -> probabilities (1/4, 3/4): ratio 0.5 for action 0, 1.5 for action 1
#   agent 2: [ln 7, 0] -> probabilities (7/8, 1/8): ratio 1.75 for action 0, 0.25 for action 1
SHIFTS = np.log(np.array([[3.0, 1.0], [1.0, 3.0], [7.0, 1.0]]))
# Two env steps (one sequence of one step each: L = 1, S = 2). Step 0: actions (0, 0, 0), all alive.
# Step 1: actions (1, 1, 0), agent 2 dead (its ratio counts as 1).
ACTIONS = np.array([[0, 0, 0], [1, 1, 0]])
ALIVE = np.array([[True, True, True], [True, True, False]])
RATIOS = np.array([[1.5, 0.5, 1.75], [0.5, 1.5, 1.0]])
"""``[step, agent]``: each agent's new over old probability of its action, 1 where it was dead."""
ORDER = (2, 0, 1)
# M each agent sees, per step, in the order 2, 0, 1:
#   agent 2 (first): 1 at both steps
#   agent 0: agent 2's ratios, (1.75, 1)
#   agent 1: agents 2's and 0's, (1.75 * 1.5, 1 * 0.5) = (2.625, 0.5)
# and after the last turn (1.75 * 1.5 * 0.5, 1 * 0.5 * 1.5) = (1.3125, 0.75).
FACTOR_SEEN = {2: [1.0, 1.0], 0: [1.75, 1.0], 1: [2.625, 0.5]}
LAST_FACTOR = [1.3125, 0.75]


def toy_batch() -> dict[str, jax.Array]:
    """The group's training sequences ``[L = 1, S = 2, n = 3, ...]``, each agent's shift as its "obs", and
    an empty start state ``[S, n, 0]`` (sliced on its own agent axis)."""
    return {"action": jnp.asarray(ACTIONS)[None], "alive": jnp.asarray(ALIVE)[None],
            "obs": jnp.broadcast_to(jnp.asarray(SHIFTS, jnp.float32), (1, 2, 3, 2)),
            "hidden": jnp.zeros((2, 3, 0))}


def toy_log_probs(params: dict[str, jax.Array], batch: dict[str, jax.Array]) -> jax.Array:
    """``log pi(a)`` of a state-free softmax policy, ``[L, S, 1]``."""
    return jax.nn.log_softmax(params["logits"])[batch["action"]]


def toy_train(params: dict, opt_state: jax.Array, key: jax.Array, batch: dict[str, jax.Array]
              ) -> tuple[dict, jax.Array, dict[str, jax.Array]]:
    """The agent's "training": its logits plus its shift; it reports the ``M`` it was handed, and counts
    its steps in ``opt_state``."""
    assert batch["obs"].shape == (1, 2, 1, 2) and batch["hidden"].shape == (2, 1, 0)
    return ({"logits": params["logits"] + batch["obs"][0, 0, 0]}, opt_state + 1,
            {"factor": batch["factor"][0, :, 0]})


def run_turns(independent: bool, order: tuple[int, ...] = ORDER) -> tuple[happo.TurnState, dict]:
    logits = jnp.zeros((3, 2)) if independent else jnp.zeros(2)
    steps = jnp.zeros(3, jnp.int32) if independent else jnp.int32(0)
    state = happo.TurnState({"agents": {"logits": logits}}, {"agents": steps}, jnp.ones((1, 2)),
                            jax.random.PRNGKey(0))
    batch = toy_batch()

    def turn(state: happo.TurnState, group: str, agent: jax.Array) -> tuple[happo.TurnState, dict]:
        return happo.agent_turn(state, group, agent, independent, batch, ("hidden",), toy_log_probs,
                                toy_train)

    return jax.jit(lambda s, o: happo.sequential_update(s, o, {"agents": 3}, turn))(state, jnp.array(order))


def test_each_agent_sees_the_product_of_the_ratios_of_the_agents_before_it() -> None:
    state, outputs = run_turns(independent=True)
    seen = np.asarray(outputs["factor"])  # [turn, step], in turn order
    for turn, agent in enumerate(ORDER):
        np.testing.assert_allclose(seen[turn], FACTOR_SEEN[agent], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(state.factor)[0], LAST_FACTOR, rtol=1e-6)
    # Each agent's row moved by its own shift only, and its optimizer stepped once: one turn each.
    np.testing.assert_allclose(np.asarray(state.params["agents"]["logits"]), SHIFTS, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(state.opt_state["agents"]), [1, 1, 1])
    # Agent 0 first: it sees 1, agent 2 then sees agent 0's ratios (1.5, 0.5), agent 1 both, (2.625, 0.5).
    _, outputs = run_turns(independent=True, order=(0, 2, 1))
    np.testing.assert_allclose(np.asarray(outputs["factor"]), [[1.0, 1.0], [1.5, 0.5], [2.625, 0.5]],
                               rtol=1e-6)


def test_a_turn_writes_only_its_agents_parameters() -> None:
    """One turn of agent 1 on stacked parameters: rows 0 and 2 stay bit for bit, row 1 takes its shift;
    ``M`` becomes agent 1's ratios (0.5, 1.5)."""
    logits = jnp.array([[0.3, -0.2], [0.0, 0.0], [1.0, 2.0]])
    state = happo.TurnState({"agents": {"logits": logits}}, {"agents": jnp.zeros(3, jnp.int32)},
                            jnp.ones((1, 2)), jax.random.PRNGKey(0))
    state, _ = happo.agent_turn(state, "agents", jnp.int32(1), True, toy_batch(), ("hidden",),
                                toy_log_probs, toy_train)
    new = np.asarray(state.params["agents"]["logits"])
    np.testing.assert_array_equal(new[[0, 2]], np.asarray(logits)[[0, 2]])
    np.testing.assert_allclose(new[1], SHIFTS[1], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(state.opt_state["agents"]), [0, 1, 0])
    np.testing.assert_allclose(np.asarray(state.factor)[0], RATIOS[:, 1], rtol=1e-6)


def test_shared_parameters_take_every_agents_turn() -> None:
    """With one actor for the group every turn steps it: it ends at the sum of the shifts, and the second
    agent still sees the first one's ratios of the shared policy, agent 2's (1.75, 1)."""
    state, outputs = run_turns(independent=False)
    np.testing.assert_allclose(np.asarray(state.params["agents"]["logits"]), SHIFTS.sum(0), rtol=1e-6)
    assert int(state.opt_state["agents"]) == 3
    np.testing.assert_allclose(np.asarray(outputs["factor"])[:2], [[1.0, 1.0], [1.75, 1.0]], rtol=1e-6)


def test_the_clipped_surrogate_with_the_correction_factor_by_hand() -> None:
    """Agent 1's turn in ``ORDER``: ratios (0.5, 1.5) at the end of its turn, ``M`` (2.625, 0.5), advantages
    (1, -2), clip 0.2.
    Step 0: M A = 2.625, min(0.5 * 2.625, 0.8 * 2.625) = 1.3125 (the unclipped, smaller side).
    Step 1: M A = -1, min(1.5 * -1, 1.2 * -1) = -1.5 (the unclipped side again: r > 1 + eps, A < 0).
    A third, dead step (advantage 100) counts for nothing. Surrogate mean (1.3125 - 1.5) / 2 = -0.09375,
    so actor_loss = 0.09375; entropies (0.6, 0.4, 9) give 0.5, and the loss 0.09375 - 0.01 * 0.5."""
    old = jnp.log(jnp.array([0.5, 0.5, 0.5]))
    new = jnp.log(jnp.array([0.25, 0.75, 0.9]))
    batch = {"log_prob": old, "advantage": jnp.array([1.0, -2.0, 100.0]),
             "factor": jnp.array([2.625, 0.5, 7.0]), "alive": jnp.array([True, True, False])}
    hparams = happo.HParams(clip_eps=0.2, ent_coef=0.01)
    loss, parts = happo.actor_objective_loss((new, jnp.array([0.6, 0.4, 9.0])), batch, hparams)
    assert float(parts["actor_loss"]) == pytest.approx(0.09375, rel=1e-5)
    assert float(parts["entropy"]) == pytest.approx(0.5, rel=1e-6)
    assert float(loss) == pytest.approx(0.09375 - 0.01 * 0.5, rel=1e-5)
    assert float(parts["clip_frac"]) == pytest.approx(1.0)  # both live ratios lie outside [0.8, 1.2]
    kl = ((0.5 - 1) - math.log(0.5) + (1.5 - 1) - math.log(1.5)) / 2
    assert float(parts["approx_kl"]) == pytest.approx(kl, rel=1e-5)
    # M is a constant of the turn: no gradient flows into it, while the ratio's does.
    grad_factor = jax.grad(lambda f: happo.happo_objective(jnp.float32(1.1), jnp.float32(1.0), f, 0.2))(2.0)
    grad_ratio = jax.grad(lambda r: happo.happo_objective(r, jnp.float32(1.0), jnp.float32(2.0), 0.2))(1.1)
    assert float(grad_factor) == 0.0 and float(grad_ratio) == pytest.approx(2.0)


def test_next_factor_skips_dead_agents() -> None:
    factor = happo.next_factor(jnp.array([2.0, 2.0]), jnp.log(jnp.array([0.6, 0.6])),
                               jnp.log(jnp.array([0.3, 0.3])), jnp.array([True, False]))
    np.testing.assert_allclose(np.asarray(factor), [4.0, 2.0], rtol=1e-6)


# ------------------------------------------------------------------------------------------- the trainer
TINY = happo.Config(num_envs=2, num_steps=8, total_timesteps=2 * 8 * 3, update_epochs=2, num_minibatches=2,
                    hidden_sizes=(8,))


def test_an_update_trains_every_agent_once_in_a_fresh_order() -> None:
    """Three updates on simple_spread for 2 vmapped seeds, each agent its own actor (the default): every
    agent's actor and critic move in the first update, each actor's optimizer steps ``update_epochs *
    num_minibatches`` times per update (in its own turn, once), and the order is a permutation drawn anew
    each update and for each seed."""
    assert TINY.param_sharing == "agent"
    trainer = happo.make_trainer(TINY, happo.make_env(TINY))
    init = jax.vmap(trainer.init, in_axes=(0, None))
    update = jax.jit(jax.vmap(trainer.update, in_axes=(0, None)))
    hparams = happo.HParams()
    runner = init(jax.random.split(jax.random.PRNGKey(0), 2), hparams)
    np.testing.assert_array_equal(np.asarray(runner.order), [[0, 1, 2]] * 2)
    runners = [runner]
    for _ in range(3):
        runner, metrics = update(runner, hparams)
        runners.append(runner)
        assert all(np.all(np.isfinite(metrics[name])) for name in (*happo.LOSS_PARTS, "total_loss"))
    first, second = runners[0], runners[1]
    for part in ("actor", "critic"):  # the largest change of each agent's parameters (row i of every leaf)
        moved = np.max([np.abs(np.asarray(after) - np.asarray(before)).reshape(2, 3, -1).max(axis=2)
                        for before, after in zip(jax.tree.leaves(first.params[part]),
                                                 jax.tree.leaves(second.params[part]), strict=True)], axis=0)
        assert np.all(moved > 0), (part, moved)
    counts = [leaf for leaf in jax.tree.leaves(second.opt_state["actor"])
              if jnp.issubdtype(leaf.dtype, jnp.integer)]
    assert counts and all(np.asarray(c).tolist() == [[4, 4, 4]] * 2 for c in counts)
    orders = [tuple(row) for r in runners[1:] for row in np.asarray(r.order).tolist()]
    assert all(sorted(o) == [0, 1, 2] for o in orders)
    assert len(set(orders[0::2])) > 1 and len(set(orders[1::2])) > 1, orders  # per seed, over updates


@pytest.mark.parametrize(("env_id", "env_kwargs", "param_sharing", "recurrent"), [
    ("MPE_simple_tag_v3", {}, "agent", True),  # two groups of different sizes: one switch branch each
    ("MPE_simple_spread_v3", {"continuous_actions": True}, "group", True),
    ("MPE_simple_tag_v3", {}, "all", False),
], ids=["tag-agent-gru", "spread-box-group-gru", "tag-all"])
def test_the_update_traces_with_groups_gru_box_actions_and_sharing(env_id: str, env_kwargs: dict,
                                                                     param_sharing: str, recurrent: bool
                                                                     ) -> None:
    """Shapes only (nothing compiles): the update runs every agent's turn, numbered over all groups."""
    config = happo.Config(env_id=env_id, env_kwargs=env_kwargs, num_envs=2, num_steps=8, total_timesteps=32,
                          num_minibatches=2, hidden_sizes=(8,), gru_size=8, recurrent=recurrent,
                          param_sharing=param_sharing)
    env = happo.make_env(config)
    trainer = happo.make_trainer(config, env)
    runner = jax.eval_shape(trainer.init, jax.random.PRNGKey(0), happo.HParams())
    runner, metrics = jax.eval_shape(trainer.update, runner, happo.HParams())
    assert runner.order.shape == (sum(env.group_size(g) for g in env.groups),)
    assert all(metrics[name].shape == () for name in (*happo.LOSS_PARTS, "total_loss"))
