"""The benchmark harness runs end to end on a tiny configuration and reports what it measured."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest

from jaxmarl_suite.bench import format_table, run_benchmark, write_markdown
from jaxmarl_suite.cli import main


def test_run_benchmark_reports_positive_rates_and_a_table(tmp_path: Path) -> None:
    rows = run_benchmark(
        ["simple_spread"], [4], steps=4, repeats=1, compare_jaxmarl=False, min_repeat_s=0.0, progress=None
    )
    assert len(rows) == 1
    row = rows[0]
    assert row["env"] == "MPE_simple_spread_v3" and row["batch"] == 4
    assert row["ours_sps"] > 0 and row["vmap_sps"] > 0 and row["ours_compile_s"] > 0
    assert row["jaxmarl_sps"] is None and row["ratio_vs_jaxmarl"] is None
    table = format_table(rows)
    assert "MPE_simple_spread_v3" in table
    path = tmp_path / "bench.md"
    write_markdown(path, rows, command="test")
    assert "MPE_simple_spread_v3" in path.read_text()


def test_jaxmarl_comparison_runs_in_the_same_process() -> None:
    pytest.importorskip("jaxmarl")
    rows = run_benchmark(
        ["MPE_simple_spread_v3"],
        [8],
        steps=4,
        repeats=1,
        compare_jaxmarl=True,
        include_vmap=False,
        min_repeat_s=0.0,
        progress=None,
    )
    row = rows[0]
    assert row["jaxmarl_id"] == "MPE_simple_spread_v3" and row["jaxmarl_sps"] > 0
    assert row["ratio_vs_jaxmarl"] == pytest.approx(row["ours_sps"] / row["jaxmarl_sps"])


def test_reference_single_env_rate_is_measured() -> None:
    pytest.importorskip("mpe2")
    from jaxmarl_suite.bench import bench_reference

    assert bench_reference("simple_spread", steps=50) > 0
    assert bench_reference("MPE_simple_spread_v3", steps=10) is not None


def test_cli_bench_rejects_unknown_env(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "MPE_simple_sprea_v3", "--batches", "2", "--steps", "2", "--no-jaxmarl"]) == 2
    assert "MPE_simple_spread_v3" in capsys.readouterr().err


def test_smax_counterparts_and_a_same_run_comparison() -> None:
    pytest.importorskip("jaxmarl")
    from jaxmarl_suite.bench import jaxmarl_id, jaxmarl_kwargs

    assert jaxmarl_id("SMAX_3m") == "HeuristicEnemySMAX"
    assert jaxmarl_id("SMAX_2s3z", {"enemy": "agents"}) == "SMAX"
    assert jaxmarl_id("SMAX_MMM") is None  # JaxMARL has no MMM map
    assert jaxmarl_kwargs("SMAX", {"scenario": "2s3z"})["scenario"].num_allies == 5
    rows = run_benchmark(
        ["SMAX_3m"],
        batches=[4],
        steps=2,
        repeats=1,
        include_vmap=False,
        min_repeat_s=0.0,
        progress=None,
        env_kwargs={"enemy": "agents"},
    )
    assert rows[0]["jaxmarl_id"] == "SMAX" and rows[0]["ratio_vs_jaxmarl"] > 0


SYNTHETIC_HLO = """HloModule synthetic

%fused (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p)
}

%inner_body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]{0}) parameter(0)
  %a = f32[4]{0} get-tuple-element(%t), index=1
  %f1 = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused
  %f2 = f32[4]{0} fusion(%f1), kind=kLoop, calls=%fused
  ROOT %r = (s32[], f32[4]{0}) tuple(%i, %f2)
}

%inner_cond (t: (s32[], f32[4])) -> pred[] {
  %t = (s32[], f32[4]{0}) parameter(0)
  ROOT %c = pred[] fusion(%t), kind=kLoop, calls=%fused
}

%small (t: (f32[4])) -> (f32[4]) {
  %t = (f32[4]{0}) parameter(0)
  ROOT %x = f32[4]{0} fusion(%t), kind=kLoop, calls=%fused
}

%large (t: (f32[4])) -> (f32[4]) {
  %t = (f32[4]{0}) parameter(0)
  %x = f32[4]{0} fusion(%t), kind=kLoop, calls=%fused
  %y = f32[4]{0} custom-call(%x), custom_call_target="something"
  ROOT %z = f32[4]{0} copy(%y)
}

%outer_body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]{0}) parameter(0)
  %a = f32[4]{0} get-tuple-element(%t), index=1
  %b = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused
  %p = pred[] fusion(%b), kind=kLoop, calls=%fused
  %c = (f32[4]{0}) conditional(%p, %t, %t), branch_computations={%small, %large}
  %w = (s32[], f32[4]{0}) while(%t), condition=%inner_cond, body=%inner_body, TRIPS_5
  ROOT %r = (s32[], f32[4]{0}) tuple(%i, %b)
}

%outer_cond (t: (s32[], f32[4])) -> pred[] {
  %t = (s32[], f32[4]{0}) parameter(0)
  ROOT %c = pred[] fusion(%t), kind=kLoop, calls=%fused
}

%wrapper (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]{0}) parameter(0)
  ROOT %w = (s32[], f32[4]{0}) while(%t), condition=%outer_cond, body=%outer_body, TRIPS_8
}

ENTRY %main (x: f32[4]) -> (s32[], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %start = f32[4]{0} copy(%x)
  %t = (s32[], f32[4]{0}) tuple(%zero, %start)
  ROOT %call = (s32[], f32[4]{0}) call(%t), to_apply=%wrapper
}
"""
for _trips in (5, 8):
    _config = 'backend_config={"known_trip_count":{"n":"' + str(_trips) + '"}}'
    SYNTHETIC_HLO = SYNTHETIC_HLO.replace(f"TRIPS_{_trips}", _config)


def test_kernel_counts_follow_loops_branches_and_calls() -> None:
    """Hand-written HLO with known structure: per iteration of the outer loop, 2 fusions, the larger
    branch (fusion, custom call, copy = 3), an inner loop of 5 x (2 + its condition's 1), and the outer
    condition's 1: 2 + 3 + 15 + 1 = 21. The whole program adds the entry's copy to 8 iterations."""
    from jaxmarl_suite.bench import kernel_counts

    counts = kernel_counts(SYNTHETIC_HLO)
    assert counts.per_iteration == 21
    assert counts.per_call == 8 * 21 + 1
    assert counts.loops == ((5, 3),)


def test_kernel_counts_of_a_compiled_scan_grow_with_its_body() -> None:
    import jax
    import jax.numpy as jnp

    from jaxmarl_suite.bench import kernel_counts

    def program(extra: bool):
        def body(carry, _):
            carry = jnp.sin(carry)
            if extra:  # a reduction that cannot fuse into the elementwise op feeding the next step
                carry = jnp.sort(carry) + carry.sum()
            return carry, carry[0]

        return lambda x: jax.lax.scan(body, x, None, length=8)

    x = jnp.arange(16.0)
    small = kernel_counts(jax.jit(program(False)).lower(x).compile().as_text())
    large = kernel_counts(jax.jit(program(True)).lower(x).compile().as_text())
    assert 1 <= small.per_iteration < large.per_iteration
    assert large.per_call >= 8 * large.per_iteration


def _cuda_plugin_installed() -> bool:
    import importlib.util

    try:
        return any(importlib.util.find_spec(f"jax_plugins.xla_cuda{v}") for v in (12, 13))
    except ModuleNotFoundError:  # no jax_plugins namespace at all
        return False


def test_gpu_target_compiles_without_a_gpu_or_names_what_to_install() -> None:
    """With JAX's CUDA plugin installed (``.[gpu-target]``, as CI installs), XLA's GPU compiler compiles for
    an H200 here: the random draw that the CPU compiles into a rolled loop of many kernels is a single
    fusion, and a host callback in the loop (a training loop's logging) compiles too. Without the plugin
    the error says what to install."""
    import jax
    import jax.numpy as jnp
    from jax._src.interpreters import mlir

    from jaxmarl_suite import bench

    def program(key):
        def body(key, _):
            key, draw_key = jax.random.split(key)
            noise = jax.random.uniform(draw_key, (1024, 3))
            jax.debug.callback(lambda total: None, noise.sum())
            return key, jnp.tanh(noise).sum()

        return jax.lax.scan(body, key, None, length=8)

    key = jax.random.PRNGKey(0)
    if not _cuda_plugin_installed():
        with pytest.raises(bench.GpuTargetUnavailableError, match=r"jax\[cuda13-local\]"):
            bench.gpu_kernel_counts(program, key)
        return
    get_backend = mlir.ModuleContext.get_backend
    gpu = bench.gpu_kernel_counts(program, key)
    cpu = bench.kernel_counts(jax.jit(program).lower(key).compile().as_text())
    assert 1 <= gpu.per_iteration <= 12 < cpu.per_iteration
    assert mlir.ModuleContext.get_backend is get_backend  # the callback workaround is undone afterwards
    with pytest.raises(ValueError, match="h200"):
        bench.gpu_target_device("h100x")


def test_benchmark_rows_carry_kernel_counts() -> None:
    rows = run_benchmark(["MPE_simple_spread_v3"], [2], steps=2, repeats=1, compare_jaxmarl=False,
                         include_vmap=False, min_repeat_s=0.0, progress=None)
    assert rows[0]["ours_kernels"] > 0
    assert "kernels/step ours" in format_table(rows)


def test_hanabi_is_compared_with_jaxmarls_game_of_the_same_size_on_legal_moves() -> None:
    pytest.importorskip("jaxmarl")
    from jaxmarl_suite.bench import bench_jaxmarl, jaxmarl_id, jaxmarl_kwargs

    assert jaxmarl_id("Hanabi") == "hanabi"
    assert jaxmarl_kwargs("Hanabi", {"num_agents": 4, "observation": "v0_belief"}) == {"num_agents": 4}
    timing = bench_jaxmarl("hanabi", 4, 3, 1, 0.0, True, num_agents=3)
    assert timing.steps_per_s > 0


def test_sides_take_turns_and_each_keeps_its_best_repeat() -> None:
    import jax.numpy as jnp

    from jaxmarl_suite.bench import PreparedRollout, time_interleaved

    order: list[str] = []

    def side(name: str) -> PreparedRollout:
        def rollout(count: jax.Array) -> tuple[jax.Array, jax.Array]:
            return count + 1, count.astype(jnp.float32)

        prepared = PreparedRollout(lambda _key: jnp.int32(0), rollout, min_repeat_s=0.0)
        timed = prepared.repeat

        def repeat() -> float:
            order.append(name)
            return timed()

        prepared.repeat = repeat  # type: ignore[method-assign]
        return prepared

    ours, theirs = side("ours"), side("theirs")
    time_interleaved([ours, theirs], repeats=3)
    assert order == ["ours", "theirs"] * 3
    assert ours.calls == 1 and 0 < ours.best_s < float("inf")
    # Calls chain through the carry: the warm-up and calibration calls, then one call per repeat.
    assert int(ours.carry) == 2 + 3


def test_jaxmarl_failing_while_timed_is_noted_and_ours_failing_raises() -> None:
    import jax.numpy as jnp

    from jaxmarl_suite.bench.timing import PreparedRollout, _jaxmarl_dropper, time_interleaved

    def side(total: float) -> PreparedRollout:
        return PreparedRollout(lambda _key: jnp.int32(0), lambda c: (c + 1, jnp.float32(total)), 0.0)

    sides = {"ours": side(1.0), "jaxmarl": side(float("nan"))}  # a non-finite result fails a repeat
    ours, notes = sides["ours"], []
    time_interleaved(list(sides.values()), 3, on_error=_jaxmarl_dropper(sides, notes))
    assert list(sides) == ["ours"] and len(notes) == 1 and "JaxMARL failed: FloatingPointError" in notes[0]
    assert int(ours.carry) == 2 + 3  # ours kept its turns in every round
    broken = {"ours": side(float("nan"))}
    with pytest.raises(FloatingPointError):
        time_interleaved(list(broken.values()), 1, on_error=_jaxmarl_dropper(broken, []))
