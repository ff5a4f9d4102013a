"""Aggregate statistics and stratified-bootstrap intervals: closed-form cases, bootstrap behaviour, input
checks, and agreement with rliable (the reference implementation) where it is installed."""

import itertools

import numpy as np
import pytest

from jaxmarl_suite.evaluation import stats


def _trimmed_mean_by_hand(values):
    """Mean of the middle half: drop floor(n / 4) values from each end of the sorted list."""
    ordered = sorted(float(v) for v in values)
    cut = len(ordered) // 4
    kept = ordered[cut:len(ordered) - cut]
    return sum(kept) / len(kept)


# ------------------------------------------------------------------------------------ point estimates
def test_iqm_of_0_to_99_is_mean_of_25_to_74():
    scores = np.arange(100, dtype=float).reshape(20, 5)  # [runs, tasks]; IQM pools all of them
    assert stats.iqm(scores) == pytest.approx(np.mean(np.arange(25, 75)))
    assert stats.iqm(scores) == pytest.approx(49.5)


def test_iqm_drops_whole_runs_rounding_down():
    one_task = [np.array([7.0, 1, 100, 3, 5, 2, 6, 4])]  # 8 runs: drop 2 from each end
    assert stats.iqm(one_task) == pytest.approx((3 + 4 + 5 + 6) / 4)
    seven = [np.array([1.0, 2, 3, 4, 5, 6, 70])]  # 7 runs: floor(1.75) = 1 from each end
    assert stats.iqm(seven) == pytest.approx((2 + 3 + 4 + 5 + 6) / 5)


@pytest.mark.parametrize("shape", [(10, 5), (7, 3), (1, 1), (3, 2), (13, 1)])
def test_iqm_matches_a_hand_trimmed_mean_and_scipy(shape):
    scores = np.random.default_rng(sum(shape)).normal(size=shape)
    assert stats.iqm(scores) == pytest.approx(_trimmed_mean_by_hand(scores.ravel()), rel=1e-12)
    scipy_stats = pytest.importorskip("scipy.stats")
    assert stats.iqm(scores) == pytest.approx(scipy_stats.trim_mean(scores, 0.25, axis=None), rel=1e-12)


def test_mean_median_and_optimality_gap_by_hand():
    scores = np.array([[0.5, 1.2, 0.0],
                       [0.9, 0.1, 0.3]])
    task_means = [0.7, 0.65, 0.15]
    assert stats.mean(scores) == pytest.approx(sum(task_means) / 3)
    assert stats.median(scores) == pytest.approx(0.65)
    # gaps per run: 0.5, 0.1 | 0 (1.2 counts as 1), 0.9 | 1.0, 0.7
    assert stats.optimality_gap(scores) == pytest.approx((0.5 + 0.1 + 0 + 0.9 + 1.0 + 0.7) / 6)
    # gamma 0.5: 0, 0 | 0, 0.4 | 0.5, 0.2
    assert stats.optimality_gap(scores, gamma=0.5) == pytest.approx((0.4 + 0.5 + 0.2) / 6)


def test_probability_of_improvement_dominance_and_ties():
    low = np.random.default_rng(0).uniform(0, 1, size=(6, 3))
    high = low + 2.0
    assert stats.probability_of_improvement(high, low) == 1.0
    assert stats.probability_of_improvement(low, high) == 0.0
    tied = np.array([[1.0, 2.0], [1.0, 2.0], [3.0, 2.0]])
    assert stats.probability_of_improvement(tied, tied) == 0.5
    assert stats.probability_of_improvement(low, low) == 0.5


def test_probability_of_improvement_hand_enumerated():
    x, y = [np.array([1.0, 3.0])], [np.array([0.0, 2.0, 3.0])]
    # pairs (x, y): (1,0) win, (1,2) loss, (1,3) loss, (3,0) win, (3,2) win, (3,3) tie -> 3.5 / 6
    assert stats.probability_of_improvement(x, y) == pytest.approx(3.5 / 6)
    assert stats.probability_of_improvement(y, x) == pytest.approx(2.5 / 6)
    # a second task where x always wins; tasks weigh equally despite their different run counts
    x2 = [x[0], np.array([5.0, 6.0, 7.0, 8.0])]
    y2 = [y[0], np.array([1.0])]
    assert stats.probability_of_improvement(x2, y2) == pytest.approx((3.5 / 6 + 1.0) / 2)


def test_probability_of_improvement_matches_brute_force_and_mann_whitney():
    rng = np.random.default_rng(3)
    xs = [rng.integers(0, 5, size=n).astype(float) for n in (4, 7, 2)]  # small integers: many ties
    ys = [rng.integers(0, 5, size=n).astype(float) for n in (5, 3, 6)]
    by_task = []
    for x, y in zip(xs, ys, strict=True):
        wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(x, y))
        by_task.append(wins / (len(x) * len(y)))
    assert stats.probability_of_improvement(xs, ys) == pytest.approx(np.mean(by_task))
    assert stats.probability_of_improvement(xs, ys) + stats.probability_of_improvement(ys, xs) == \
        pytest.approx(1.0)
    scipy_stats = pytest.importorskip("scipy.stats")
    u = [scipy_stats.mannwhitneyu(x, y).statistic / (len(x) * len(y)) for x, y in zip(xs, ys, strict=True)]
    assert stats.probability_of_improvement(xs, ys) == pytest.approx(np.mean(u))


def test_performance_profile_of_known_scores():
    scores = [np.array([0.1, 0.5, 0.9, 0.9])]
    taus = [0.0, 0.1, 0.5, 0.9, 1.0]
    band = stats.performance_profile({"a": scores}, taus, reps=50)["a"]
    np.testing.assert_allclose(band.point, [1.0, 0.75, 0.5, 0.0, 0.0])  # strictly above tau
    assert band.point.shape == band.low.shape == band.high.shape == (5,)


def test_performance_profile_weighs_tasks_equally():
    scores = [np.array([0.0, 1.0]), np.array([1.0, 1.0, 1.0, 1.0])]
    band = stats.performance_profile({"a": scores}, [0.5], reps=50)["a"]
    assert band.point[0] == pytest.approx((0.5 + 1.0) / 2)  # pooling would give 5 / 6


def test_unequal_run_counts_match_hand_computations():
    tasks = [np.array([0.2, 0.9, 0.4]), np.array([0.1, 0.6, 0.8, 0.3, 0.7, 0.5])]
    pooled = np.concatenate(tasks)
    assert stats.iqm(tasks) == pytest.approx(_trimmed_mean_by_hand(pooled))  # 9 runs: drop 2 each end
    assert stats.iqm(tasks) == pytest.approx(np.mean(np.sort(pooled)[2:7]))
    assert stats.mean(tasks) == pytest.approx((0.5 + 0.5) / 2)
    assert stats.optimality_gap(tasks) == pytest.approx((np.mean(1 - tasks[0]) + np.mean(1 - tasks[1])) / 2)
    result = stats.aggregate_with_ci({"a": tasks, "b": [t + 0.1 for t in tasks]}, reps=300)
    assert result["a"]["iqm"].point == pytest.approx(stats.iqm(tasks))
    assert result["b"]["mean"].point == pytest.approx(0.6)


def test_array_and_per_task_forms_agree_and_nans_are_dropped():
    matrix = np.random.default_rng(1).uniform(size=(6, 4))
    columns = [matrix[:, t] for t in range(4)]
    a = stats.aggregate_with_ci({"x": matrix}, reps=200, seed=3)
    b = stats.aggregate_with_ci({"x": columns}, reps=200, seed=3)
    assert a == b
    with_nan = [np.append(c, np.nan) for c in columns]
    assert stats.aggregate_with_ci({"x": with_nan}, reps=200, seed=3) == a
    assert [t.tolist() for t in stats.task_scores(with_nan)] == [c.tolist() for c in columns]


# ----------------------------------------------------------------------------------------- bootstrap
def test_interval_of_a_constant_is_degenerate():
    result = stats.aggregate_with_ci({"c": [np.full(5, 0.7), np.full(3, 0.7)]}, reps=100)["c"]
    for metric, expected in [("iqm", 0.7), ("mean", 0.7), ("median", 0.7), ("optimality_gap", 0.3)]:
        interval = result[metric]
        assert interval.low == interval.point == interval.high
        assert interval.point == pytest.approx(expected)
    band = stats.performance_profile({"c": [np.full(4, 0.7)]}, [0.5, 0.8], reps=100)["c"]
    np.testing.assert_array_equal(band.low, band.high)
    np.testing.assert_array_equal(band.point, [1.0, 0.0])


def test_intervals_contain_the_point_estimate():
    rng = np.random.default_rng(7)
    scores = {"a": rng.normal(size=(12, 6)), "b": rng.exponential(size=(9, 6))}
    for intervals in stats.aggregate_with_ci(scores, reps=1000).values():
        for interval in intervals.values():
            assert interval.low <= interval.point <= interval.high
            assert interval.low < interval.high
    improvement = stats.probability_of_improvement_with_ci(scores["a"], scores["b"], reps=1000)
    assert improvement.low <= improvement.point <= improvement.high
    band = stats.performance_profile(scores, np.linspace(-2, 3, 11), reps=500)["a"]
    assert np.all(band.low <= band.point) and np.all(band.point <= band.high)


def test_intervals_shrink_with_more_runs():
    rng = np.random.default_rng(11)
    few = stats.aggregate_with_ci({"a": rng.normal(size=(5, 4))}, reps=1000)["a"]
    many = stats.aggregate_with_ci({"a": rng.normal(size=(200, 4))}, reps=1000)["a"]
    for metric in stats.AGGREGATE_METRICS:
        assert many[metric].high - many[metric].low < 0.5 * (few[metric].high - few[metric].low)


def test_mean_interval_width_matches_the_normal_approximation():
    # One task, 400 standard-normal runs: a 95% interval of the mean spans about 2 * 1.96 / sqrt(400).
    scores = [np.random.default_rng(5).normal(size=400)]
    interval = stats.aggregate_with_ci({"a": scores}, ["mean"], reps=4000)["a"]["mean"]
    expected = 2 * 1.96 * scores[0].std() / np.sqrt(400)
    assert interval.high - interval.low == pytest.approx(expected, rel=0.1)
    assert interval.point - interval.low == pytest.approx(interval.high - interval.point, rel=0.2)


def test_bootstrap_is_deterministic_per_seed_and_per_algorithm():
    rng = np.random.default_rng(2)
    scores = {"a": rng.uniform(size=(8, 3)), "b": rng.uniform(size=(5, 3))}
    first = stats.aggregate_with_ci(scores, reps=500, seed=4)
    assert stats.aggregate_with_ci(scores, reps=500, seed=4) == first
    assert stats.aggregate_with_ci(scores, reps=500, seed=5) != first
    # an algorithm's interval does not depend on which other algorithms are compared with it
    assert stats.aggregate_with_ci({"a": scores["a"]}, reps=500, seed=4)["a"] == first["a"]
    profile = stats.performance_profile(scores, [0.2, 0.5], reps=300, seed=1)
    again = stats.performance_profile(scores, [0.2, 0.5], reps=300, seed=1)
    np.testing.assert_array_equal(profile["b"].low, again["b"].low)


def test_confidence_level_widens_the_interval():
    scores = {"a": np.random.default_rng(8).normal(size=(10, 3))}
    narrow = stats.aggregate_with_ci(scores, ["iqm"], reps=2000, confidence=0.5)["a"]["iqm"]
    wide = stats.aggregate_with_ci(scores, ["iqm"], reps=2000, confidence=0.99)["a"]["iqm"]
    assert wide.low < narrow.low and narrow.high < wide.high


def test_pairwise_improvement_covers_every_pair_once():
    rng = np.random.default_rng(9)
    scores = {name: rng.normal(loc=i, size=(6, 2)) for i, name in enumerate("abc")}
    result = stats.pairwise_improvement(scores, reps=300)
    assert list(result) == [("a", "b"), ("a", "c"), ("b", "c")]
    for (x, y), interval in result.items():
        assert interval.point == pytest.approx(stats.probability_of_improvement(scores[x], scores[y]))
    only = stats.pairwise_improvement(scores, [("c", "a")], reps=300)
    assert only[("c", "a")].point == pytest.approx(1 - result[("a", "c")].point)


def test_sample_efficiency_curve_forms_agree():
    rng = np.random.default_rng(4)
    cube = rng.uniform(size=(6, 3, 4)) + np.arange(4)  # [runs, tasks, points]
    bands = stats.sample_efficiency_curve({"a": cube}, reps=300)
    listed = stats.sample_efficiency_curve({"a": [cube[:, :, p] for p in range(4)]}, reps=300)
    np.testing.assert_array_equal(bands["a"].point, listed["a"].point)
    np.testing.assert_array_equal(bands["a"].low, listed["a"].low)
    np.testing.assert_allclose(bands["a"].point, [stats.iqm(cube[:, :, p]) for p in range(4)])
    assert np.all(np.diff(bands["a"].point) > 0)
    assert np.all(bands["a"].low <= bands["a"].point) and np.all(bands["a"].point <= bands["a"].high)
    means = stats.sample_efficiency_curve({"a": cube}, "mean", reps=50)["a"]
    np.testing.assert_allclose(means.point, cube.mean(axis=(0, 1)))


# ------------------------------------------------------------------------------------- input checks
@pytest.mark.parametrize(("scores", "message"), [
    ({}, "no algorithms"),
    ({"a": []}, "no tasks"),
    ({"a": [np.array([1.0]), np.array([])]}, "task 1 has no runs"),
    ({"a": [np.array([np.nan, np.nan])]}, "only NaN"),
    ({"a": [np.array([1.0, np.inf])]}, "infinite"),
    ({"a": np.zeros(4)}, r"\[runs, tasks\]"),
    ({"a": [np.zeros((2, 2))]}, "1-D"),
    ({"a": [["x"]]}, "not numeric"),
    ({"a": 3.0}, "expected"),
    ({"a": np.zeros((3, 2)), "b": np.zeros((3, 4))}, "task counts differ"),
])
def test_bad_scores_are_rejected(scores, message):
    with pytest.raises(ValueError, match=message):
        stats.aggregate_with_ci(scores, reps=10)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"confidence": 0.0}, "confidence"),
    ({"confidence": 1.0}, "confidence"),
    ({"confidence": 95}, "confidence"),
    ({"reps": 0}, "reps"),
    ({"reps": 2.5}, "reps"),
    ({"seed": -1}, "seed"),
    ({"metrics": ("iqm", "mode")}, "unknown"),
    ({"metrics": "iqm"}, "sequence"),
])
def test_bad_bootstrap_settings_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        stats.aggregate_with_ci({"a": np.ones((3, 2))}, **kwargs)


def test_other_functions_validate_their_inputs():
    with pytest.raises(ValueError, match="tasks but scores_y has"):
        stats.probability_of_improvement(np.ones((3, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="reps"):
        stats.probability_of_improvement_with_ci(np.ones((3, 2)), np.ones((3, 2)), reps=0)
    with pytest.raises(ValueError, match="taus"):
        stats.performance_profile({"a": np.ones((3, 2))}, [])
    with pytest.raises(ValueError, match="taus"):
        stats.performance_profile({"a": np.ones((3, 2))}, [0.0, np.nan])
    with pytest.raises(ValueError, match="unknown algorithms"):
        stats.pairwise_improvement({"a": np.ones((3, 2)), "b": np.ones((3, 2))}, [("a", "z")])
    with pytest.raises(ValueError, match=r"\[runs, tasks, points\]"):
        stats.sample_efficiency_curve({"a": np.ones((3, 2))})
    with pytest.raises(ValueError, match="point 1 has 3 tasks"):
        stats.sample_efficiency_curve({"a": [np.ones((3, 2)), np.ones((3, 3))]}, reps=10)
    with pytest.raises(ValueError, match="task counts differ"):
        stats.sample_efficiency_curve({"a": np.ones((3, 2, 2)), "b": np.ones((3, 3, 2))}, reps=10)


# ------------------------------------------------------------------------------------ against rliable
@pytest.fixture(scope="module")
def rliable():
    """rliable's ``metrics`` and ``library`` modules (skipped when rliable is absent or does not import:
    its bootstrap needs ``arch``, whose 7.x releases fail to import with pandas 3)."""
    pytest.importorskip("rliable")
    try:
        from rliable import library, metrics
    except Exception as error:  # a broken dependency raises more than ImportError
        pytest.skip(f"rliable is installed but does not import: {error!r}")
    return metrics, library


@pytest.fixture(scope="module")
def matrices():
    # Tasks of different difficulty (offsets), so that a bootstrap that ignored the strata would give
    # visibly different intervals (about 0.03 wider here) from a stratified one.
    rng = np.random.default_rng(2024)
    offsets = np.array([0.0, 0.1, 0.25, 0.4, 0.5])
    return {"x": 0.5 * rng.beta(2, 3, size=(10, 5)) + offsets,
            "y": 0.5 * rng.beta(3, 2, size=(8, 5)) + offsets}


def _rliable_aggregates(metrics, scores):
    return np.array([metrics.aggregate_iqm(scores), metrics.aggregate_mean(scores),
                     metrics.aggregate_median(scores), metrics.aggregate_optimality_gap(scores)])


def test_point_estimates_equal_rliable(rliable, matrices):
    metrics, _ = rliable
    for scores in matrices.values():
        ours = [stats.iqm(scores), stats.mean(scores), stats.median(scores), stats.optimality_gap(scores)]
        np.testing.assert_allclose(ours, _rliable_aggregates(metrics, scores), rtol=1e-12, atol=0)
        assert stats.optimality_gap(scores, 0.5) == pytest.approx(
            metrics.aggregate_optimality_gap(scores, 0.5), rel=1e-12)
    x, y = matrices["x"], matrices["y"]  # different run counts
    assert stats.probability_of_improvement(x, y) == pytest.approx(metrics.probability_of_improvement(x, y))
    ties = np.round(x[:6] * 3), np.round(y * 3)
    assert stats.probability_of_improvement(*ties) == pytest.approx(metrics.probability_of_improvement(*ties))


def test_performance_profile_points_equal_rliable(rliable, matrices):
    _, library = rliable
    taus = np.linspace(0, 1, 21)
    theirs, _ = library.create_performance_profile(matrices, taus, reps=10)
    ours = stats.performance_profile(matrices, taus, reps=10)
    for name in matrices:
        np.testing.assert_allclose(ours[name].point, theirs[name], rtol=1e-12, atol=0)


# Both sides are seeded, but with different generators, so bounds agree only up to Monte-Carlo noise.
# Measured over several seeds with these resample counts, aggregate bounds differed by at most 0.002 and
# probability-of-improvement bounds by 0.013; profile bounds move in steps of 1/40 (a fraction of 8 runs,
# averaged over tasks) and differed by one step. An unstratified bootstrap would be off by about 0.03.
REPS = 5000
AGGREGATE_TOLERANCE, IMPROVEMENT_TOLERANCE, PROFILE_TOLERANCE = 0.01, 0.025, 0.05
ARCH_RANDOM_STATE = "ignore:random_state is deprecated:FutureWarning"  # rliable still passes RandomState


@pytest.mark.filterwarnings(ARCH_RANDOM_STATE)
def test_aggregate_intervals_are_close_to_rliable(rliable, matrices):
    metrics, library = rliable
    _, theirs = library.get_interval_estimates(
        matrices, lambda s: _rliable_aggregates(metrics, s), reps=REPS, random_state=np.random.RandomState(0))
    ours = stats.aggregate_with_ci(matrices, reps=REPS, seed=0)
    for name in matrices:
        for i, metric in enumerate(stats.AGGREGATE_METRICS):
            low, high = theirs[name][:, i]
            assert ours[name][metric].low == pytest.approx(low, abs=AGGREGATE_TOLERANCE), metric
            assert ours[name][metric].high == pytest.approx(high, abs=AGGREGATE_TOLERANCE), metric


# slow: rliable's side resamples in Python (about 27 s on 2 cores); the aggregate intervals' parity above
# stays in the default suite.
@pytest.mark.slow
@pytest.mark.filterwarnings(ARCH_RANDOM_STATE)
def test_improvement_and_profile_intervals_are_close_to_rliable(rliable, matrices):
    metrics, library = rliable
    x, y = matrices["x"], matrices["y"]
    _, theirs = library.get_interval_estimates({"xy": [x, y]}, metrics.probability_of_improvement,
                                               reps=REPS, random_state=np.random.RandomState(1))
    ours = stats.probability_of_improvement_with_ci(x, y, reps=REPS, seed=1)
    low, high = np.ravel(theirs["xy"])
    assert ours.low == pytest.approx(float(low), abs=IMPROVEMENT_TOLERANCE)
    assert ours.high == pytest.approx(float(high), abs=IMPROVEMENT_TOLERANCE)

    taus = np.linspace(0, 1, 11)
    # create_performance_profile takes no seed; its profile function on a seeded bootstrap is the same thing
    _, their_bands = library.get_interval_estimates(
        matrices, lambda s: np.array([library.run_score_deviation(s, tau) for tau in taus]), reps=REPS,
        random_state=np.random.RandomState(2))
    bands = stats.performance_profile(matrices, taus, reps=REPS, seed=2)
    for name in matrices:
        np.testing.assert_allclose(bands[name].low, their_bands[name][0], atol=PROFILE_TOLERANCE)
        np.testing.assert_allclose(bands[name].high, their_bands[name][1], atol=PROFILE_TOLERANCE)


# ------------------------------------------------------------------------------------------ win rates
@pytest.mark.parametrize("successes, trials", [(0, 10), (8, 10), (10, 10), (37, 100), (1, 1), (500, 2048)])
@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_wilson_interval_matches_scipy(successes, trials, confidence):
    from scipy.stats import binomtest

    expected = binomtest(successes, trials).proportion_ci(confidence, method="wilson")
    interval = stats.wilson_interval(successes, trials, confidence)
    assert interval.point == successes / trials
    assert interval.low == pytest.approx(expected.low, abs=1e-12)
    assert interval.high == pytest.approx(expected.high, abs=1e-12)
    assert 0.0 <= interval.low <= interval.point <= interval.high <= 1.0


def test_wilson_interval_by_hand():
    # 8 wins of 10 at 95%: centre (0.8 + z²/20) / (1 + z²/10), half-width z/(1 + z²/10) sqrt(0.016 + z²/400)
    z = 1.959963984540054
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z / (1 + z * z / 10) * np.sqrt(0.8 * 0.2 / 10 + z * z / 400)
    interval = stats.wilson_interval(8, 10)
    assert (interval.low, interval.high) == pytest.approx((centre - half, centre + half))
    assert (round(interval.low, 3), round(interval.high, 3)) == (0.490, 0.943)


@pytest.mark.parametrize("successes, trials, confidence, message", [
    (1, 0, 0.95, "trials must be a positive integer"),
    (11, 10, 0.95, r"successes must be an integer in \[0, trials=10\]"),
    (-1, 10, 0.95, "successes must be"),
    (1.5, 10, 0.95, "successes must be"),
    (1, 10, 1.0, "confidence must lie strictly between 0 and 1"),
])
def test_wilson_interval_rejects_bad_input(successes, trials, confidence, message):
    with pytest.raises(ValueError, match=message):
        stats.wilson_interval(successes, trials, confidence)
