"""Evaluating trained policies and comparing runs: episode returns with confidence intervals, rendered
episodes, aggregate statistics over runs and tasks with stratified-bootstrap intervals, and run reports."""

from jaxmarl_suite.evaluation.policy import (
    EvalReport,
    episode_frames,
    evaluate_policy,
    mean_ci,
    render_policy,
)
from jaxmarl_suite.evaluation.report import write_report
from jaxmarl_suite.evaluation.stats import (
    AGGREGATE_METRICS,
    Band,
    Interval,
    aggregate_with_ci,
    iqm,
    mean,
    median,
    optimality_gap,
    pairwise_improvement,
    performance_profile,
    probability_of_improvement,
    probability_of_improvement_with_ci,
    sample_efficiency_curve,
    task_scores,
)

__all__ = [
    "AGGREGATE_METRICS",
    "Band",
    "EvalReport",
    "Interval",
    "aggregate_with_ci",
    "episode_frames",
    "evaluate_policy",
    "iqm",
    "mean",
    "mean_ci",
    "median",
    "optimality_gap",
    "pairwise_improvement",
    "performance_profile",
    "probability_of_improvement",
    "probability_of_improvement_with_ci",
    "render_policy",
    "sample_efficiency_curve",
    "task_scores",
    "write_report",
]

