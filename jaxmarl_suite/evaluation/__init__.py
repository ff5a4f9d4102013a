"""Evaluating trained policies: episode returns with confidence intervals, and rendered episodes."""

from jaxmarl_suite.evaluation.policy import EvalReport, evaluate_policy, mean_ci, render_policy

__all__ = ["EvalReport", "evaluate_policy", "mean_ci", "render_policy"]
