"""Findings: short plain-language sentences generated from the store, each with its evidence.

`compare_findings(store, run_a, run_b)` explains the difference between two runs;
`run_findings(store, run_id)` summarises one run (the `runs` page); `sweep_findings(store,
run_ids)` says where variants of a sweep (any axis, per mode) cross over. Each `Finding` carries a
`kind`, the sentence, an `evidence` dict of the numbers and names it rests on (JSON-ready: no
NaN), and its `impact_us`: the GPU or CPU time per iteration it is about. Findings come ranked by
impact, at most `MAX_FINDINGS` of them, each kind once (repeated cases of a kind are listed in one
sentence); the GPU-time comparison and the kernel with the largest GPU-time change are always
there. Every number comes from the metrics layer (`run_queries.run_metrics`) or the per-name tables.
The rules behind each kind are in `docs/analysis.md`.
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from profiler.analysis.model import counters
from profiler.analysis.reads import kept, queries
from profiler.analysis.findings import mode_findings, sweep_leads, sweeps, timings, why
from profiler.analysis.reads import kernel_queries, pair_queries, query_files, run_queries
from profiler.analysis.findings.finding import Finding, Runs
from profiler.analysis.findings.finding_kinds import (bound, cpu_ops_only_in_one, cuda_core_math, kernels_per_iteration,
                                             launch_api, memcpy_only_in_one, zero_occupancy)
from profiler.analysis.reads.units import duration, json_value
from profiler.errors import UnknownRunError
from profiler.parse import demangled
from profiler.storage.session import StoreHandle

MAX_FINDINGS = 8
ALWAYS = ("cold_start", "gpu_time", "kernel_delta")  # kept whatever their impact
# the cost model's findings (bytes moved, fp32 CUDA-core GEMMs, kernel architecture) explain the
# GPU-time gap: they rank with the gap's size
WHY = ("bytes_moved", "fp32_cuda_core_gemm", "kernel_arch")
SAME_TIME_RATIO = 1.05  # GPU times closer than this read as "about the same"


def _load(store, run_ids: list[str]) -> Runs:
    labels = run_queries.run_labels(store, run_ids)
    missing = set(run_ids) - set(labels["run_id"])
    if missing:
        raise UnknownRunError(f"run {sorted(missing)[0]} is not in the store {store.path}")
    metrics = run_queries.run_metrics(store, run_ids).set_index("run_id")
    return Runs(run_ids, dict(zip(labels["run_id"], labels["label"])),
                 kernel_queries.kernel_details(store, run_ids), queries.memop_table(store, run_ids), metrics)


def run_findings(store: StoreHandle, run_id: str) -> list[Finding]:
    """Findings about one run: what bounds it, kernels per iteration, CUDA-core math,
    0 %-occupancy kernels explained, what its mode costs (`mode_findings`). Kept per run (profiler/analysis/reads/kept.py)."""
    return kept.value(store, ("run_findings",), [run_id], lambda: _run_findings(store, run_id))


def _run_findings(store, run_id: str) -> list[Finding]:
    runs = _load(store, [run_id])
    return _ranked([*bound(runs), *kernels_per_iteration(runs), *cuda_core_math(runs),
                    *zero_occupancy(runs, store), *_counters(runs), *mode_findings.mode_findings(store, runs)])


def compare_findings(store: StoreHandle, run_a: str, run_b: str, limit: int | None = MAX_FINDINGS) -> list[Finding]:
    """Findings that explain the difference between two runs (a first, then b), ranked; the
    first `limit` of them (all with None). Kept per pair."""
    return kept.value(store, ("compare_findings", limit), [run_a, run_b],
                      lambda: _compare_findings(store, run_a, run_b, limit))


def _compare_findings(store, run_a: str, run_b: str, limit: int | None) -> list[Finding]:
    runs = _load(store, [run_a, run_b])
    gap = max((f.impact_us for f in _gpu_time(runs)), default=0.0)
    why = [replace(f, impact_us=gap) if f.kind in WHY else f for f in _why(store, run_a, run_b)]
    return _ranked([*_cold_start(store, runs), *_gpu_time(runs), *_kernel_delta(store, runs), *bound(runs),
                    *kernels_per_iteration(runs), *memcpy_only_in_one(runs),
                    *launch_api(store, runs), *cpu_ops_only_in_one(store, runs),
                    *cuda_core_math(runs), *zero_occupancy(runs, store), *why,
                    *mode_findings.mode_findings(store, runs),
                    *(replace(f, impact_us=gap) for f in _counters(runs))], limit)


def _ranked(found: list[Finding], limit: int | None = MAX_FINDINGS) -> list[Finding]:
    """The always-kept kinds first, then the rest by impact, at most `limit` in all."""
    first = [f for f in found if f.kind in ALWAYS]
    rest = sorted((f for f in found if f.kind not in ALWAYS), key=lambda f: -f.impact_us)
    return first + (rest if limit is None else rest[:max(limit - len(first), 0)])


def _why(store, run_a: str, run_b: str) -> list[Finding]:
    return why.compare(store, run_a, run_b)


def sweep_findings(store: StoreHandle, run_ids) -> list[Finding]:
    """Where variants of a sweep (over any axis, per mode: `sweeps`) swap the lead in throughput
    (kept per set of runs)."""
    run_ids = query_files.ids(run_ids)
    return kept.value(store, ("sweep_findings",), run_ids, lambda: _sweep_findings(store, run_ids))


def _sweep_findings(store, run_ids) -> list[Finding]:
    points = sweeps.sweep_points(store, run_ids)
    curves = sweep_leads.ranked_curves(store, sweeps.sweep_curves(points), points)   # no same-kernel rival
    found = []
    for row in sweeps.crossovers(curves).to_dict("records"):
        gpu = curves[(curves["sweep"] == row["sweep"]) & (curves["x"] == row["x_hi"])
                     & curves["variant"].isin([row["leader"], row["trailer"]])]["gpu_work_us_per_iter"]
        found.append(Finding("crossover", row.pop("text"), {k: v if isinstance(v, list) else json_value(v)
                                                            for k, v in row.items()},
                             float(gpu.max() - gpu.min()) if len(gpu) else 0.0))
    return found


# ── one finding kind per function ─────────────────────────────────────────────────────────────

def _gpu_time(runs: Runs) -> list[Finding]:
    a, b = runs.ids
    gpu = {r: _gpu_us(runs, r) for r in runs.ids}
    if not gpu[a] or not gpu[b]:
        return []
    fast, slow = (a, b) if gpu[a] <= gpu[b] else (b, a)
    ratio = gpu[slow] / gpu[fast]
    if ratio < SAME_TIME_RATIO:
        text = (f"{runs.labels[a]} and {runs.labels[b]} launch about the same GPU work per iteration: "
                f"{gpu[a]:,.1f} µs vs {gpu[b]:,.1f} µs.")
    else:
        saved = 100 * (1 - gpu[fast] / gpu[slow])
        speed = f"{ratio:.1f}× faster" if ratio >= 2 else f"{saved:.0f}% less GPU time"
        text = (f"{runs.labels[fast]} launches {gpu[fast]:,.1f} µs of GPU work per iteration against "
                f"{gpu[slow]:,.1f} µs for {runs.labels[slow]} ({speed}).")
    return [Finding("gpu_time", text, {"gpu_work_us_per_iter": gpu, "ratio": round(ratio, 3)},
                    abs(gpu[a] - gpu[b]))]


def _counters(runs: Runs) -> list[Finding]:
    """What Nsight Compute measured on each run's main kernel (only runs with counters attached):
    one run's kernel alone, or two runs' side by side (ranked with the GPU-time gap they explain)."""
    tops = {r: counters.main_kernel(runs.kernels, r) for r in runs.ids}
    tops = {r: top for r, top in tops.items() if top is not None}
    if len(runs.ids) == 2 and len(tops) == 2:
        text, evidence = counters.compare_sentence(runs.labels, tops)
        return [Finding("counters", text, evidence)]
    return [Finding("counters", *counters.run_sentence(runs.labels[r], top),
                    float(top["us_per_iter"])) for r, top in tops.items()]


# what a cold call's extra CPU time is, by the op (or variant) it shows in; else the op is named alone
COLD_CAUSES = {"_cudnn_attention": "the plan build, where cuDNN builds the execution plan that warm calls reuse",
               "compile": "torch.compile compiling the function", "dynamo": "torch.compile compiling the function",
               "flashinfer": "flashinfer's first-use JIT compile of its kernel, then its plan",
               "flash_attn_4": "FlashAttention 4 compiling its CuTe DSL kernel on first use"}


def _cold_start(store, runs: Runs) -> list[Finding]:
    """A cold and a warm run of the same variant and shape: the cold first call against a warm
    call (wall time per call), the CPU work that makes the difference, named, and the kernels."""
    shapes = queries.run_shapes(store, runs.ids).set_index("run_id")
    if len(shapes) != 2 or shapes["cold"].isna().any() or shapes["cold"].nunique() != 2:
        return []
    keys = [k for k in queries.SHAPE_KEYS if k != "causal"]
    if not (shapes[keys].nunique(dropna=False) == 1).all():
        return []
    cold = shapes.index[shapes["cold"].astype(bool)][0]
    warm = shapes.index[~shapes["cold"].astype(bool)][0]
    timed = timings.run_timings(store, [cold, warm]).set_index("run_id")
    extra = query_files.run(store, "cold_extra_cpu", cold=cold, warm=warm)
    if extra.empty:
        return []
    top = extra.iloc[0]
    variant = str(shapes.loc[cold, "variant"])
    cause = next((why for key, why in COLD_CAUSES.items() if key in top["op"] or key in variant), None)
    first, per_call = timed.loc[cold, "wall_us_per_call"], timed.loc[warm, "wall_us_per_call"]
    text = f"{runs.labels[cold]}: "
    if pd.notna(first) and pd.notna(per_call):
        text += (f"the first call takes {duration(first)} against {duration(per_call)} per warm call; ")
    text += f"{duration(top['extra_us'])} more CPU time is spent in {top['op']}" + (f": {cause}." if cause else ".")
    k_cold, k_warm = timed.loc[cold, "kernel_us_per_call"], timed.loc[warm, "kernel_us_per_call"]
    if pd.notna(k_cold) and pd.notna(k_warm):
        text += f" Its kernels take {k_cold:.1f} µs against {k_warm:.1f} µs warm."
    return [Finding("cold_start", text, {
        "cold_run": cold, "warm_run": warm, "first_call_us": json_value(first), "warm_call_us": json_value(per_call),
        "top_op": top["op"], "top_extra_us": float(top["extra_us"]), "cause": cause,
        "kernel_us_per_call": {"cold": json_value(k_cold), "warm": json_value(k_warm)}})]


def _gpu_us(runs: Runs, run: str) -> float:
    """The GPU work one iteration launched (the metrics layer's gpu_work_us_per_iter)."""
    if run not in runs.metrics.index:
        return 0.0
    return float(runs.metrics.loc[run, "gpu_work_us_per_iter"])


def _kernel_delta(store, runs: Runs) -> list[Finding]:
    """The kernel (or copy) whose GPU time per iteration changes most between the two runs."""
    a, b = runs.ids
    delta = pair_queries.kernel_delta(store, a, b)
    if delta.empty:
        return []
    top = delta.iloc[0]
    total = float(delta["us_delta"].sum())
    share = f", {100 * float(top.us_delta) / total:.1f}% of the change in summed GPU time" \
        if abs(total) > 0 and top.us_delta * total > 0 and abs(top.us_delta) <= abs(total) else ""
    text = (f"The largest GPU-time change is {demangled.short(top.kernel)}: {top.us_a:,.1f} µs per iteration "
            f"in {runs.labels[a]} against {top.us_b:,.1f} µs in {runs.labels[b]} "
            f"({top.us_delta:+,.1f} µs{share}).")
    return [Finding("kernel_delta", text, {"kernel": top.kernel, "us_a": float(top.us_a),
                    "us_b": float(top.us_b), "us_delta": float(top.us_delta),
                    "summed_us_delta": total}, abs(float(top.us_delta)))]


