"""Evaluating trained policies and comparing runs: episode returns with confidence intervals, rendered
episodes, aggregate statistics over runs and tasks with stratified-bootstrap intervals, and run reports."""

from jaxmarl_suite.evaluation.policy import (
    EvalReport,
    episode_frames,
    evaluate_policy,
    first_episodes,
    mean_ci,
    render_policy,
)
from jaxmarl_suite.evaluation.reference import reference_for
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
    wilson_interval,
)

__all__ = [
    "AGGREGATE_METRICS",
    "Band",
    "EvalReport",
    "Interval",
    "aggregate_with_ci",
    "episode_frames",
    "evaluate_policy",
    "first_episodes",
    "iqm",
    "mean",
    "mean_ci",
    "median",
    "optimality_gap",
    "pairwise_improvement",
    "performance_profile",
    "probability_of_improvement",
    "probability_of_improvement_with_ci",
    "reference_for",
    "render_policy",
    "sample_efficiency_curve",
    "task_scores",
    "wilson_interval",
    "write_report",
]

