"""The offline loop closed (slow): IPPO trains on MPE simple_spread (the ``ippo_MPE_simple_spread_v3_fast``
preset cut to 2e5 env steps), ``collect`` writes 500 of its episodes as a vault, BC clones it, and the
cloned policy, scored online over 500 episodes, recovers at least 80% of the behaviour policy's gain over a
uniformly random policy (the env's reference random score)."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest
import yaml

from jaxmarl_suite.evaluation import datasets
from jaxmarl_suite.evaluation.policy import evaluate_policy
from jaxmarl_suite.training.kit import make_train
from jaxmarl_suite.training.runner.config import baseline_module, parse_experiment
from jaxmarl_suite.training.runner.experiment import run_experiment

SPREAD = "MPE_simple_spread_v3"


@pytest.mark.slow
def test_bc_recovers_most_of_a_trained_policy_from_its_vault(tmp_path: Path) -> None:
    ippo = baseline_module("ippo")
    run_dir = tmp_path / "ippo"
    run_experiment(ippo, parse_experiment("ippo", ippo.Config, ippo.HParams, [
        "--preset", "ippo_MPE_simple_spread_v3_fast", "--total-timesteps", "200000",
        "--run-dir", str(run_dir), "--wandb", "disabled", "--no-progress", "--no-gif"]))
    vault = datasets.collect(run_dir, 500, tmp_path / "vaults")
    behaviour = datasets.read_vault(vault).metadata["mean_return"]
    scores = yaml.safe_load((Path(datasets.__file__).parent / "reference_scores.yaml").read_text())
    random = scores[SPREAD]["random"]
    assert behaviour >= random + 3.0, f"the behaviour policy ({behaviour:.2f}) barely beats random ({random})"

    bc = baseline_module("bc")
    config = bc.Config(dataset=str(vault), num_envs=16, num_steps=25, total_timesteps=16 * 25 * 20,
                       grad_steps=200, minibatch_size=256, hidden_sizes=(64, 64))
    out = jax.jit(make_train(bc, config))(jax.random.PRNGKey(0), bc.HParams(lr=1e-3))
    cloned = evaluate_policy(bc, config, bc.policy_params(out.runner), 500, jax.random.PRNGKey(1)).mean
    threshold = random + 0.8 * (behaviour - random)
    print(f"behaviour {behaviour:.3f}, random {random}, cloned {cloned:.3f}, threshold {threshold:.3f}")
    assert cloned >= threshold, (f"BC scored {cloned:.2f}, below {threshold:.2f} (behaviour {behaviour:.2f}, "
                                 f"random {random})")
