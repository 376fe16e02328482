"""Findings that say why, from the op-level cost model (`profiler.analysis.reads.op_costs`).

* `bytes_moved`: how many bytes one iteration of each run moves, and, where a run materialises
  its score matrix, which ops write and re-read it;
* `fp32_cuda_core_gemm`: GEMMs that ran in fp32 on CUDA cores, against the fp32 and the
  tensor-core peaks;
* `kernel_arch`: the main attention / GEMM kernel of two runs built for different architectures
  or matrix instructions (`profiler.analysis.model.kernel_names`).

Each is a `finding.Finding` whose evidence names the ops and kernels it rests on and the page
that shows them (`attention`). `compare` joins `findings.compare_findings` (the compare page, the
`compare` command); `one_run` is shown on the Attention page.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import kept, op_costs, op_pricing, roofline, run_queries
from profiler.analysis.reads.units import binary_size
from profiler.analysis.model import kernel_names, rating
from profiler.analysis.model.costmodel import PRECISION_BYTES
from profiler.analysis.findings.finding import Finding
from profiler.storage.session import StoreHandle

SAME_BYTES_RATIO = 1.5   # closer than this, bytes moved do not explain a difference
MIN_COVERAGE_PCT = 50.0  # a byte total speaks for a run only where modelled ops cover this much of its kernel time


def _iteration(calls: pd.DataFrame) -> pd.DataFrame:
    """The calls of the run's first iteration that has any (time order)."""
    calls = calls[calls["iteration"].notna()]
    return calls[calls["iteration"] == calls["iteration"].min()].sort_values("ts_ns")


def _elements(shape: str) -> int:
    count = 1
    for n in shape.split("x"):
        count *= int(n)
    return count


def _gemm_io(shape: str) -> tuple[int, int, bool]:
    """(elements of the result, elements of the first operand, both operands batched) of a GEMM
    shape 'AxB @ CxD'. Attention's GEMMs multiply two batched activations; a layer's GEMM has a
    2-D weight."""
    a, b = (list(map(int, side.split("x"))) for side in shape.split(" @ "))
    out = _elements("x".join(map(str, [*a[:-1], b[-1]])))
    return out, _elements("x".join(map(str, a))), len(a) >= 3 and len(b) >= 3


def score_matrix(calls: pd.DataFrame) -> dict | None:
    """The largest tensor of one iteration that a batched GEMM of two activations writes,
    memory-bound ops re-read and rewrite, and a later GEMM reads (a materialised score matrix):
    its shape, dtype, bytes and the ops that touch it; None when there is none."""
    one = _iteration(calls)
    memory, gemms = one[one["kind"] == "memory"], one[one["kind"] == "gemm"]
    io = [_gemm_io(s) for s in gemms["shape"]]
    for _, biggest in memory.sort_values("bytes", ascending=False).iterrows():
        shape = biggest["shape"].split(" , ")[0]
        elements = _elements(shape)
        written = [i for i, (out, _, batched) in enumerate(io) if out == elements and batched]
        if written and any(first == elements for _, first, _ in io[written[0] + 1:]):
            touching = memory[memory["shape"].str.split(" , ").str[0] == shape]
            return {"shape": shape, "dtype": biggest["dtype"], "ops": list(touching["op"]),
                    "bytes": elements * PRECISION_BYTES.get(biggest["dtype"], 0)}
    return None


def coverage(totals: pd.DataFrame, kernel_us: dict) -> dict:
    """Per run, the share (%) of its kernel time per iteration (the metrics layer's
    kernel_sum_us_per_iter) that its modelled ops cover: how much of it a byte or FLOP total speaks for."""
    rows = totals.set_index("run_id")["kernel_us_per_iter"]
    return {r: 100.0 * float(rows.get(r, 0.0)) / us if us else 0.0 for r, us in kernel_us.items()}


def _bytes_finding(labels: dict, totals: pd.DataFrame, calls: pd.DataFrame, a: str, b: str,
                   covered: dict) -> list[Finding]:
    rows = totals.set_index("run_id")
    if a not in rows.index or b not in rows.index:
        return []
    if min(covered.get(a, 0.0), covered.get(b, 0.0)) < MIN_COVERAGE_PCT:   # mostly unmodelled: withheld
        return []
    more, less = (a, b) if rows.at[a, "bytes_per_iter"] >= rows.at[b, "bytes_per_iter"] else (b, a)
    big, small = rows.at[more, "bytes_per_iter"], rows.at[less, "bytes_per_iter"]
    if not small or big / small < SAME_BYTES_RATIO:
        return []
    text = (f"{labels[more]} moves {binary_size(big)} per iteration, {labels[less]} {binary_size(small)}: "
            f"{big / small:.1f}x more bytes through memory (modelled ops cover {covered[more]:.1f}% and "
            f"{covered[less]:.1f}% of their kernel time)")
    scores = score_matrix(calls[calls["run_id"] == more])
    if scores:
        text += (f". The {scores['shape'].replace('x', '×')} {scores['dtype']} score matrix "
                 f"({binary_size(scores['bytes'])}) is written by the first GEMM, re-read and rewritten by "
                 f"{', '.join(dict.fromkeys(o.removeprefix('aten::') for o in scores['ops']))}, and "
                 f"read by the second GEMM")
    attention = calls[(calls["run_id"] == less) & (calls["kind"] == "attention")]
    if not attention.empty:
        text += f"; {labels[less]} reads Q, K, V and writes O once ({attention['backend'].iloc[0]})"
    evidence = {"page": "attention", "runs": [more, less], "bytes_per_iter": {more: big, less: small},
                "modelled_kernel_time_pct": {more: covered[more], less: covered[less]},
                "score_matrix": scores, "ops": sorted(set(calls[calls["run_id"] == more]["op"]))}
    return [Finding("bytes_moved", text + ".", evidence)]


def _fp32_cuda_core(calls: pd.DataFrame) -> pd.DataFrame:
    """The GEMM calls that ran in fp32 on CUDA cores."""
    return calls[(calls["kind"] == "gemm") & (calls["engine"] == "CUDA core") & (calls["dtype"] == "fp32")]


def _fp32_gemms(labels: dict, calls: pd.DataFrame, archs: dict) -> list[Finding]:
    found = []
    slow = _fp32_cuda_core(calls)
    for run, rows in slow.groupby("run_id", sort=False):
        tflops = rows["flops"].sum() / (rows["kernel_ns"].sum() / 1e9) / 1e12
        peak = rows["peak_tflops"].iloc[0]
        kernels = list(dict.fromkeys(rows["main_kernel"]))
        per_iter = len(_iteration(rows))
        pct = rating.share(tflops, peak)
        text = (f"{labels[run]} runs {per_iter} GEMM{'s' if per_iter != 1 else ''} per iteration in fp32 "
                f"on CUDA cores at {tflops:.1f} TFLOP/s against an fp32 CUDA-core peak of {peak:g} "
                f"TFLOP/s " + (f"({pct:.0f} %)" if pct == pct else "(above the peak: the model or the peak "
                               "is wrong, see the suspect column)") if peak == peak else "")
        if text:
            found.append(Finding("fp32_cuda_core_gemm", text + ".", {
                "page": "attention", "run": run, "tflops": tflops, "peak_tflops": peak,
                "ops": sorted(set(rows["op"])), "kernels": kernels,
                "kernel_facts": [kernel_names.parse(k, archs.get(run)).summary for k in kernels]}))
    return found


def _main_kernel(calls: pd.DataFrame, run: str) -> str | None:
    rows = calls[(calls["run_id"] == run) & calls["kind"].isin(["attention", "gemm"])]
    if rows.empty:
        return None
    return rows.loc[rows["kernel_ns"].idxmax(), "main_kernel"]


def _arch_finding(labels: dict, calls: pd.DataFrame, a: str, b: str, archs: dict) -> list[Finding]:
    ka, kb = _main_kernel(calls, a), _main_kernel(calls, b)
    if not ka or not kb:
        return []
    pa, pb = kernel_names.parse(ka, archs.get(a)), kernel_names.parse(kb, archs.get(b))
    if (pa.arch, pa.instruction) == (pb.arch, pb.instruction) or not (pa.arch or pb.arch):
        return []
    us = {r: _us_per_call(calls, r, k) for r, k in ((a, ka), (b, kb))}
    if min(us.values()) <= 0:   # a kernel that took no time explains nothing
        return []
    fast, slow = (a, b) if us[a] <= us[b] else (b, a)
    parsed = {a: pa, b: pb}
    text = (f"{labels[fast]} runs {_a_kernel(parsed[fast].summary)} ({us[fast]:,.1f} µs per call) where "
            f"{labels[slow]} runs {_a_kernel(parsed[slow].summary)} ({us[slow]:,.1f} µs per call)")
    return [Finding("kernel_arch", text + ".", {"page": "attention", "kernels": {a: ka, b: kb},
                                                 "us_per_call": us, "faster": fast,
                                                 "facts": {a: pa.__dict__, b: pb.__dict__}})]


def _us_per_call(calls: pd.DataFrame, run: str, kernel: str) -> float:
    """The mean GPU time (µs) of the run's calls whose main kernel is `kernel`."""
    rows = calls[(calls["run_id"] == run) & (calls["main_kernel"] == kernel)]
    return float(rows["kernel_ns"].mean()) / 1e3 if len(rows) else 0.0


def _a_kernel(summary: str) -> str:
    """'a cuDNN, sm90, wgmma kernel', 'an sm80 …'; a kernel of no known library says so."""
    if not summary or summary.startswith("other"):
        rest = summary.removeprefix("other").lstrip(", ")
        return "a kernel of no known library" + (f" ({rest})" if rest else "")
    return f"{'an' if summary[0].lower() in 'aeiou' else 'a'} {summary} kernel"


def compare(store: StoreHandle, run_a: str, run_b: str) -> list[Finding]:
    """Cost-model findings for a pair of runs (empty when neither has modelled ops)."""
    calls = op_costs.op_calls(store, [run_a, run_b])
    if calls.empty:
        return []
    labels = dict(run_queries.run_labels(store, [run_a, run_b])[["run_id", "label"]].values)
    totals = roofline.run_totals(calls, run_queries.run_iterations(store, [run_a, run_b]))
    archs = {r: op_pricing.run_arch(store, r) for r in (run_a, run_b)}
    kernel_us = run_queries.run_metrics(store, [run_a, run_b]).set_index("run_id")["kernel_sum_us_per_iter"].to_dict()
    covered = coverage(totals, kernel_us)
    return [*_bytes_finding(labels, totals, calls, run_a, run_b, covered), *_fp32_gemms(labels, calls, archs),
            *_arch_finding(labels, calls, run_a, run_b, archs)]


def one_run(store: StoreHandle, run_id: str) -> list[Finding]:
    """Cost-model findings for one run: fp32 CUDA-core GEMMs (kept per run)."""
    return kept.value(store, ("why_one_run",), [run_id], lambda: _one_run(store, run_id))


def _one_run(store, run_id: str) -> list[Finding]:
    calls = op_costs.op_calls(store, [run_id])
    if calls.empty or _fp32_cuda_core(calls).empty:
        return []
    labels = dict(run_queries.run_labels(store, [run_id])[["run_id", "label"]].values)
    return _fp32_gemms(labels, calls, {run_id: op_pricing.run_arch(store, run_id)})
