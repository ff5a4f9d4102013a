"""Describing a benchmark run: the machine it ran on (``machine_info``, which every benchmark script prints)
and the table of its rows (``format_table``, ``write_markdown``)."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from collections.abc import Sequence
from typing import Any

import jax


def machine_info(packages: Sequence[str] = ()) -> dict[str, str]:
    """Date, CPU model, core counts, the load average at the start, Python, JAX (version, backend,
    devices), JaxMARL's version, ``XLA_FLAGS``, and the version of each of ``packages`` (for example
    ``("mujoco",)``). Every benchmark script heads its tables with this."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    devices = jax.devices()
    info = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": f"{os.cpu_count()} logical, {usable} usable by this process",
        "load average (1, 5, 15 min) at start": ", ".join(f"{x:.2f}" for x in load),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": f"{jax.default_backend()} ({len(devices)} x {devices[0].device_kind})",
        "jaxmarl": _package_version("jaxmarl"),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", "") or "(unset)",
    }
    info.update({name: _package_version(name) for name in packages})
    return info


def _package_version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:  # any failure means "not available"
        return "not installed"


def _summary(row: dict[str, Any]) -> str:
    parts = [f"ours {_rate(row['ours_sps'])}/s"]
    if row["vmap_sps"] is not None:
        parts.append(f"vmap {_rate(row['vmap_sps'])}/s")
    if row["jaxmarl_sps"] is not None:
        parts.append(f"JaxMARL {_rate(row['jaxmarl_sps'])}/s (x{row['ratio_vs_jaxmarl']:.2f})")
    return ", ".join(parts)


def _rate(value: float | None) -> str:
    if value is None:
        return "—"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.2f}{suffix}"
    return f"{value:.0f}"


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def format_table(rows: Sequence[dict[str, Any]], machine: dict[str, str] | None = None) -> str:
    """Markdown: machine info, the results table, and what the columns mean.

    ``machine`` defaults to ``machine_info()`` collected now.
    """
    machine = machine_info() if machine is None else machine
    lines = [f"- **{name}**: {value}" for name, value in machine.items()]
    steps = sorted({row["steps"] for row in rows})
    lines += [
        f"- **steps per timed call**: {', '.join(map(str, steps)) or '—'} "
        "(one jitted `lax.scan`, random actions drawn inside)",
        "",
        "| env | batch | ours steps/s | ours compile s | vmap-path steps/s | ours/vmap "
        "| JaxMARL steps/s | JaxMARL compile s | ours/JaxMARL | kernels/step ours | kernels/step JaxMARL "
        "| mpe2 1-env steps/s | ours/mpe2 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    gpu = any(row.get("ours_gpu_kernels") is not None for row in rows)
    if gpu:
        lines[-2] += " GPU-target kernels/step ours | GPU-target kernels/step JaxMARL |"
        lines[-1] += "---:|---:|"
    notes: list[str] = []
    for row in rows:
        lines.append(
            f"| {row['env']} | {row['batch']} | {_rate(row['ours_sps'])} | {_seconds(row['ours_compile_s'])} "
            f"| {_rate(row['vmap_sps'])} | {_ratio(row['native_gain'])} | {_rate(row['jaxmarl_sps'])} "
            f"| {_seconds(row['jaxmarl_compile_s'])} | {_ratio(row['ratio_vs_jaxmarl'])} "
            f"| {_count(row.get('ours_kernels'))} | {_count(row.get('jaxmarl_kernels'))} "
            f"| {_rate(row.get('reference_sps'))} | {_ratio(row.get('ratio_vs_reference'))} |"
            + (f" {_count(row.get('ours_gpu_kernels'))} | {_count(row.get('jaxmarl_gpu_kernels'))} |"
               if gpu else "")
        )
        notes += [f"{row['env']} B={row['batch']}: {note}" for note in row.get("notes", [])]
    lines += [
        "",
        "Steps/s are **env steps per second**: one env step is every agent of one env acting once, so a "
        "batch of B envs advances B env steps per call of `step`. Speeds are the best of the timed "
        "repeats after compilation, the sides taking turns repeat by repeat; compile s is tracing + "
        "lowering + XLA compilation of the whole rollout. Ours = `AutoReset(make(id, num_envs=B))` "
        "(batch-native); vmap path = the same under "
        "`VecEnv(..., use_vmap=True)`; JaxMARL = `jax.vmap(env.reset/step)` of its env (auto-resetting); "
        "mpe2 = its PettingZoo parallel env "
        "stepping one env in a Python loop with random actions, as its users run it. Kernels/step: "
        "the kernels one step of the compiled rollout launches (fusions, custom calls and unfused ops "
        "in the scan body of the optimised HLO; `KernelCounts`), which is launch overhead on a GPU."
        + (" GPU-target kernels/step: the same, of the rollout compiled by XLA's GPU compiler for a GPU "
           "that need not be present (`compile_for_gpu`)." if gpu else ""),
    ]
    if notes:
        lines += ["", "Notes:", *[f"- {note}" for note in dict.fromkeys(notes)]]
    return "\n".join(lines)


def write_markdown(path: str | os.PathLike[str], rows: Sequence[dict[str, Any]], command: str = "") -> None:
    """Write a titled markdown report (date and machine info included) of ``rows`` to ``path``."""
    machine = machine_info()
    header = ["# Env throughput"]
    if command:
        header += ["", f"Command: `{command}`"]
    text = "\n".join([*header, "", format_table(rows, machine), ""])
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
