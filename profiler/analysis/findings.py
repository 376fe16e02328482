"""Findings: short plain-language sentences generated from the store, each with its evidence.

`compare_findings(store, run_a, run_b)` explains the difference between two runs;
`run_findings(store, run_id)` summarises one run (the `runs` page); `sweep_findings(store,
run_ids)` says where variants of a sequence-length sweep cross over. Each `Finding` carries a
`kind`, the sentence, an `evidence` dict of the numbers and names it rests on (JSON-ready: no
NaN), and its `impact_us`: the GPU or CPU time per iteration it is about. Findings come ranked by
impact, at most `MAX_FINDINGS` of them, each kind once (repeated cases of a kind are listed in one
sentence); the GPU-time comparison and the kernel with the largest GPU-time change are always
there. Every number comes from the metrics layer (`queries.run_metrics`) or the per-name tables.
The rules behind each kind are in `docs/analysis.md`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from profiler.analysis import counters, gpus, kept, occupancy, queries, roofline, tensor_cores, timings, why
from profiler.analysis.diff import kernel_family
from profiler.analysis.finding import Finding
from profiler.analysis.verdict import BOUND_EVIDENCE, BOUND_WORDS, bound_sentence  # noqa: F401 (re-exported)
from profiler.errors import UnknownRunError
from profiler.parse import demangled

MATH_OPS = ("gemm", "conv", "attention")
MAX_NAMES = 5
MAX_FINDINGS = 8
ALWAYS = ("cold_start", "gpu_time", "kernel_delta")  # kept whatever their impact
# the cost model's findings (bytes moved, fp32 CUDA-core GEMMs, kernel architecture) explain the
# GPU-time gap: they rank with the gap's size
WHY = ("bytes_moved", "fp32_cuda_core_gemm", "kernel_arch")
SAME_TIME_RATIO = 1.05  # GPU times closer than this read as "about the same"


@dataclass(frozen=True)
class _Runs:
    ids: list[str]
    labels: dict[str, str]
    kernels: pd.DataFrame        # queries.kernel_details
    memops: pd.DataFrame         # queries.memop_table
    metrics: pd.DataFrame        # queries.run_metrics, indexed by run_id


def _load(store, run_ids: list[str]) -> _Runs:
    labels = queries.run_labels(store, run_ids)
    missing = set(run_ids) - set(labels["run_id"])
    if missing:
        raise UnknownRunError(f"run {sorted(missing)[0]} is not in the store {store.path}")
    metrics = queries.run_metrics(store, run_ids).set_index("run_id")
    return _Runs(run_ids, dict(zip(labels["run_id"], labels["label"])),
                 queries.kernel_details(store, run_ids), queries.memop_table(store, run_ids), metrics)


def run_findings(store, run_id: str) -> list[Finding]:
    """Findings about one run: what bounds it, kernels per iteration, CUDA-core math,
    0 %-occupancy kernels explained. Kept per run (profiler/analysis/kept.py)."""
    return kept.value(store, ("run_findings",), [run_id], lambda: _run_findings(store, run_id))


def _run_findings(store, run_id: str) -> list[Finding]:
    runs = _load(store, [run_id])
    return _ranked([*_bound(runs), *_kernels_per_iteration(runs), *_cuda_core_math(runs),
                    *_zero_occupancy(runs, store), *_counters(runs)])


def compare_findings(store, run_a: str, run_b: str, limit: int | None = MAX_FINDINGS) -> list[Finding]:
    """Findings that explain the difference between two runs (a first, then b), ranked; the
    first `limit` of them (all with None). Kept per pair."""
    return kept.value(store, ("compare_findings", limit), [run_a, run_b],
                      lambda: _compare_findings(store, run_a, run_b, limit))


def _compare_findings(store, run_a: str, run_b: str, limit: int | None) -> list[Finding]:
    runs = _load(store, [run_a, run_b])
    gap = max((f.impact_us for f in _gpu_time(runs)), default=0.0)
    why = [replace(f, impact_us=gap) if f.kind in WHY else f for f in _why(store, run_a, run_b)]
    return _ranked([*_cold_start(store, runs), *_gpu_time(runs), *_kernel_delta(store, runs), *_bound(runs),
                    *_kernels_per_iteration(runs), *_memcpy_only_in_one(runs),
                    *_launch_api(store, runs), *_cpu_ops_only_in_one(store, runs),
                    *_cuda_core_math(runs), *_zero_occupancy(runs, store), *why,
                    *(replace(f, impact_us=gap) for f in _counters(runs))], limit)


def _ranked(found: list[Finding], limit: int | None = MAX_FINDINGS) -> list[Finding]:
    """The always-kept kinds first, then the rest by impact, at most `limit` in all."""
    first = [f for f in found if f.kind in ALWAYS]
    rest = sorted((f for f in found if f.kind not in ALWAYS), key=lambda f: -f.impact_us)
    return first + (rest if limit is None else rest[:max(limit - len(first), 0)])


def _why(store, run_a: str, run_b: str) -> list[Finding]:
    return why.compare(store, run_a, run_b)


def sweep_findings(store, run_ids) -> list[Finding]:
    """Where variants of a sequence-length sweep cross over in GPU time per iteration (kept per
    set of runs)."""
    run_ids = queries._ids(run_ids)
    return kept.value(store, ("sweep_findings",), run_ids, lambda: _sweep_findings(store, run_ids))


def _sweep_findings(store, run_ids) -> list[Finding]:
    cross = roofline.crossovers(roofline.sweep_table(store, run_ids))
    found = []
    for row in cross.to_dict("records"):
        lo_fast, lo_slow = sorted([row["gpu_busy_us_per_iter_lo_a"], row["gpu_busy_us_per_iter_lo_b"]])
        hi_fast, hi_slow = sorted([row["gpu_busy_us_per_iter_hi_a"], row["gpu_busy_us_per_iter_hi_b"]])
        text = (f"{row['faster_below']} is faster at L={row['seq_len_lo']} ({lo_fast:.1f} vs "
                f"{lo_slow:.1f} µs GPU busy per iteration) but {row['faster_above']} is faster at "
                f"L={row['seq_len_hi']} ({hi_fast:.1f} vs {hi_slow:.1f} µs): they cross over "
                f"between these lengths.")
        found.append(Finding("crossover", text, {k: _plain(v) for k, v in row.items()},
                             abs(hi_slow - hi_fast)))
    return found


# ── one finding kind per function ─────────────────────────────────────────────────────────────

def _gpu_time(runs: _Runs) -> list[Finding]:
    a, b = runs.ids
    gpu = {r: _gpu_us(runs, r) for r in runs.ids}
    if not gpu[a] or not gpu[b]:
        return []
    fast, slow = (a, b) if gpu[a] <= gpu[b] else (b, a)
    ratio = gpu[slow] / gpu[fast]
    if ratio < SAME_TIME_RATIO:
        text = (f"{runs.labels[a]} and {runs.labels[b]} need about the same GPU time per iteration: "
                f"{gpu[a]:,.1f} µs vs {gpu[b]:,.1f} µs.")
    else:
        saved = 100 * (1 - gpu[fast] / gpu[slow])
        speed = f"{ratio:.1f}× faster" if ratio >= 2 else f"{saved:.0f}% less GPU time"
        text = (f"{runs.labels[fast]} needs {gpu[fast]:,.1f} µs of GPU time per iteration against "
                f"{gpu[slow]:,.1f} µs for {runs.labels[slow]} ({speed}).")
    return [Finding("gpu_time", text, {"gpu_busy_us_per_iter": gpu, "ratio": round(ratio, 3)},
                    abs(gpu[a] - gpu[b]))]


def _counters(runs: _Runs) -> list[Finding]:
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


def _cold_start(store, runs: _Runs) -> list[Finding]:
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
    extra = queries._run(store, "cold_extra_cpu", cold=cold, warm=warm)
    if extra.empty:
        return []
    top = extra.iloc[0]
    variant = str(shapes.loc[cold, "variant"])
    cause = next((why for key, why in COLD_CAUSES.items() if key in top["op"] or key in variant), None)
    first, per_call = timed.loc[cold, "wall_us_per_call"], timed.loc[warm, "wall_us_per_call"]
    text = f"{runs.labels[cold]}: "
    if pd.notna(first) and pd.notna(per_call):
        text += (f"the first call takes {_time(first)} against {_time(per_call)} per warm call; ")
    text += f"{_time(top['extra_us'])} more CPU time is spent in {top['op']}" + (f": {cause}." if cause else ".")
    k_cold, k_warm = timed.loc[cold, "kernel_us_per_call"], timed.loc[warm, "kernel_us_per_call"]
    if pd.notna(k_cold) and pd.notna(k_warm):
        text += f" Its kernels take {k_cold:.1f} µs against {k_warm:.1f} µs warm."
    return [Finding("cold_start", text, {
        "cold_run": cold, "warm_run": warm, "first_call_us": _plain(first), "warm_call_us": _plain(per_call),
        "top_op": top["op"], "top_extra_us": float(top["extra_us"]), "cause": cause,
        "kernel_us_per_call": {"cold": _plain(k_cold), "warm": _plain(k_warm)}})]


def _time(us: float) -> str:
    return f"{us / 1e3:,.1f} ms" if abs(us) >= 1000 else f"{us:,.1f} µs"


def _gpu_us(runs: _Runs, run: str) -> float:
    """GPU busy time per iteration (the metrics layer's definition)."""
    if run not in runs.metrics.index:
        return 0.0
    return float(runs.metrics.loc[run, "gpu_busy_us_per_iter"])


def _kernel_delta(store, runs: _Runs) -> list[Finding]:
    """The kernel (or copy) whose GPU time per iteration changes most between the two runs."""
    a, b = runs.ids
    delta = queries.kernel_delta(store, a, b)
    if delta.empty:
        return []
    top = delta.iloc[0]
    total = float(delta["us_delta"].sum())
    share = f", {100 * float(top.us_delta) / total:.1f}% of the change in summed GPU time" \
        if abs(total) > 0 and top.us_delta * total > 0 and abs(top.us_delta) <= abs(total) else ""
    text = (f"The largest GPU-time change is {_short(top.kernel)}: {top.us_a:,.1f} µs per iteration "
            f"in {runs.labels[a]} against {top.us_b:,.1f} µs in {runs.labels[b]} "
            f"({top.us_delta:+,.1f} µs{share}).")
    return [Finding("kernel_delta", text, {"kernel": top.kernel, "us_a": float(top.us_a),
                    "us_b": float(top.us_b), "us_delta": float(top.us_delta),
                    "summed_us_delta": total}, abs(float(top.us_delta)))]


def _kernels_per_iteration(runs: _Runs) -> list[Finding]:
    counts = {r: float(runs.kernels.loc[runs.kernels["run_id"] == r, "calls_per_iter"].sum())
              for r in runs.ids}
    distinct = {r: int((runs.kernels["run_id"] == r).sum()) for r in runs.ids}
    parts = [f"{runs.labels[r]} launches {_num(counts[r])} kernel(s) per iteration "
             f"({distinct[r]} distinct)" for r in runs.ids]
    return [Finding("kernels_per_iteration", "; ".join(parts) + ".",
                    {"kernels_per_iter": counts, "distinct_kernels": distinct})]


def _memcpy_only_in_one(runs: _Runs) -> list[Finding]:
    parts, items = [], []
    for run, other in (runs.ids, runs.ids[::-1]):
        mine = runs.memops[runs.memops["run_id"] == run]
        theirs = set(runs.memops.loc[runs.memops["run_id"] == other, "memop"])
        only = mine[~mine["memop"].isin(theirs)].sort_values("us_per_iter", ascending=False)
        for row in only.head(MAX_NAMES).itertuples():
            parts.append(f"{runs.labels[run]} {_memop_verb(row.memop)} {_bytes(row.bytes_per_iter)} "
                         f"per iteration ({_num(row.calls_per_iter)} × {row.memop}, "
                         f"{row.us_per_iter:.1f} µs) and {runs.labels[other]} has no such {row.kind}")
            items.append({"run_id": run, "memop": row.memop, "kind": row.kind,
                          "calls_per_iter": float(row.calls_per_iter),
                          "bytes_per_iter": float(row.bytes_per_iter), "us_per_iter": float(row.us_per_iter)})
    if not items:
        return []
    return [Finding("memcpy", "; ".join(parts) + ".", {"memops": items},
                    sum(i["us_per_iter"] for i in items))]


def _memop_verb(name: str) -> str:
    if "DtoD" in name:
        return "copies device to device"
    return "sets" if name.startswith("Memset") else "copies"


def _launch_api(store, runs: _Runs) -> list[Finding]:
    a, b = runs.ids
    delta = queries.launch_api_delta(store, a, b)
    parts, apis, impact = [], {}, 0.0
    for presence, run, other, side in (("only in a", a, b, "a"), ("only in b", b, a, "b")):
        only = delta[delta["presence"] == presence].sort_values(f"cpu_us_{side}", ascending=False)
        if only.empty:
            continue
        calls = only[f"calls_{side}"]
        listed = ", ".join(f"{api} ({_num(c)} per iteration)"
                           for api, c in zip(only["api"][:MAX_NAMES], calls[:MAX_NAMES]))
        listed += f" and {len(only) - MAX_NAMES} more" if len(only) > MAX_NAMES else ""
        parts.append(f"{runs.labels[run]} calls {listed}, which {runs.labels[other]} never calls")
        apis[run] = {str(k): float(v) for k, v in zip(only["api"], calls)}
        impact += float(only[f"cpu_us_{side}"].sum())
    if not parts:
        return []
    return [Finding("launch_api", "; ".join(parts) + ".", {"apis": apis}, impact)]


def _cpu_ops_only_in_one(store, runs: _Runs) -> list[Finding]:
    a, b = runs.ids
    delta = queries.cpu_op_delta(store, a, b)
    parts, ops, impact = [], {}, 0.0
    for presence, run, side in (("only in a", a, "a"), ("only in b", b, "b")):
        only = delta[delta["presence"] == presence].sort_values(f"self_us_{side}", ascending=False)
        if only.empty:
            continue
        top = only.head(MAX_NAMES)
        listed = ", ".join(f"{op} ({_num(c)}×, {us:.1f} µs)" for op, c, us in
                           zip(top["op"], top[f"calls_{side}"], top[f"self_us_{side}"]))
        more = f" and {len(only) - MAX_NAMES} more" if len(only) > MAX_NAMES else ""
        parts.append(f"only in {runs.labels[run]}: {listed}{more}")
        ops[run] = [str(o) for o in only["op"]]
        impact += float(only[f"self_us_{side}"].sum())
    if not parts:
        return []
    return [Finding("cpu_ops", "CPU ops (per iteration, self time) " + "; ".join(parts) + ".",
                    {"ops": ops}, impact)]


def _bound(runs: _Runs) -> list[Finding]:
    """What bounds each run (the metrics layer's verdict), one sentence per run, one finding."""
    rows = [(run, runs.metrics.loc[run]) for run in runs.ids if run in runs.metrics.index]
    if not rows:
        return []
    text = " ".join(bound_sentence(row, runs.labels[run]) for run, row in rows)
    evidence = {"runs": {run: {k: _plain(row[k]) for k in BOUND_EVIDENCE} for run, row in rows}}
    return [Finding("bound", text, evidence, max(float(row["gpu_idle_us_per_iter"]) for _, row in rows))]


def _cuda_core_math(runs: _Runs) -> list[Finding]:
    parts, evidence, impact = [], {}, 0.0
    math = runs.kernels[runs.kernels["tc_op"].isin(MATH_OPS)
                        & runs.kernels["tc_engine"].isin(tensor_cores.VECTOR_ENGINES)]
    for run, rows in math.groupby("run_id", sort=False):
        share = float(rows["gpu_time_share_pct"].sum())
        families = rows.assign(family=rows["kernel"].map(kernel_family),
                               precision=rows["tc_precision"].fillna("?"))
        per = families.groupby(["family", "precision"], as_index=False)[["calls_per_iter", "us_per_iter"]].sum()
        per = per.sort_values("us_per_iter", ascending=False)
        listed = ", ".join(f"{f} ({p}, {_num(c)}× per iteration, {us:.1f} µs)" for f, p, c, us in
                           per.head(MAX_NAMES).itertuples(index=False))
        listed += f" and {len(per) - MAX_NAMES} more" if len(per) > MAX_NAMES else ""
        engine = rows["tc_engine"].iloc[0]
        parts.append(f"{runs.labels[run]} runs {len(rows)} matrix kernel(s) on {engine}s, not on "
                     f"its matrix units (tensor / matrix cores): {listed}; {_share(share)} of its "
                     "summed kernel time")
        evidence[run] = {"kernels": list(rows["kernel"]), "rules": list(rows["tc_rule"]),
                         "gpu_time_share_pct": share}
        impact += float(rows["us_per_iter"].sum())
    if not parts:
        return []
    return [Finding("cuda_core_math", "; ".join(parts) + ".", {"runs": evidence}, impact)]


def _share(pct: float) -> str:
    return "under 0.1%" if pct < 0.05 else f"{pct:.1f}%"


def _zero_occupancy(runs: _Runs, store) -> list[Finding]:
    """Kernels the trace reports at 0 % occupancy that really ran, each name once: one finding
    for those that need opt-in shared memory (or cannot fit Kineto's limits), one for tiny grids."""
    zero = runs.kernels[(runs.kernels["est_occupancy_pct"] == 0)].sort_values("us_per_iter", ascending=False)
    devices = queries.run_devices(store, runs.ids)
    explained, tiny, seen = [], [], set()
    for row in zero.itertuples():
        if row.kernel in seen:
            continue
        device, launch, result = _theory(row, devices.get(row.run_id))
        if result.occupancy_pct is None:
            continue
        seen.add(row.kernel)
        if min(occupancy.block_limits(launch, device, optin=False).values()) > 0:
            tiny.append((row, device))  # fits Kineto's limits: its 0 % is a rounded tiny grid
        else:
            explained.append((row, device, result))
    return ([_zero_finding(runs, explained)] if explained else []) + \
        ([_tiny_grid_finding(tiny)] if tiny else [])


def _theory(row, device_info) -> tuple[gpus.Device | None, occupancy.Launch, occupancy.Occupancy]:
    device = queries.run_device(device_info, row.device)
    launch = occupancy.Launch(_int(row.threads_per_block) or 0, _int(row.registers_per_thread),
                              _int(row.shared_mem_bytes), _int(row.grid_blocks))
    return device, launch, occupancy.occupancy(launch, device)


def _zero_finding(runs, explained) -> Finding:
    parts, items = [], []
    for row, device, result in explained:
        smem, default = _int(row.shared_mem_bytes) or 0, device.shared_mem_per_block_bytes
        why = (f"{_bytes(smem)} of shared memory per block, above the {_bytes(default)} Kineto "
               "assumes" if smem > default else "Kineto could not fit a block with its default limits")
        what = f"{tensor_cores.engine_phrase(row.tc_engine)} {row.tc_op} kernel"
        what += f" in {row.tc_precision}" if isinstance(row.tc_precision, str) else ""
        items.append({"run_id": row.run_id, "kernel": row.kernel, "occupancy_reported_pct": 0.0,
                      "occupancy_theoretical_pct": result.occupancy_pct,
                      "occupancy_limiter": result.limiter, "shared_mem_bytes": smem,
                      "blocks_per_sm": result.active_blocks_per_sm, "engine": row.tc_engine,
                      "precision": row.tc_precision if isinstance(row.tc_precision, str) else None,
                      "us_per_iter": float(row.us_per_iter)})
        if len(parts) < MAX_NAMES:
            parts.append(f"{_short(row.kernel)} ({what}, {_num(row.calls_per_iter)}× and "
                         f"{row.us_per_iter:.1f} µs per iteration in {runs.labels[row.run_id]}): "
                         f"{why}; with opt-in shared memory {result.active_blocks_per_sm} block(s) of "
                         f"{_int(row.threads_per_block)} threads fit per SM, "
                         f"{result.occupancy_pct:.1f}% theoretical occupancy, limited by "
                         f"{_limiter_text(result.limiter)}")
    more = f"; and {len(items) - MAX_NAMES} more" if len(items) > MAX_NAMES else ""
    text = (f"The trace reports 0% occupancy for {len(items)} kernel(s) that ran: "
            + "; ".join(parts) + more + ".")
    return Finding("zero_occupancy", text, {"kernels": items}, sum(i["us_per_iter"] for i in items))


def _limiter_text(limiter: str) -> str:
    return "a grid with fewer blocks than the GPU has SMs" if limiter == "grid" else limiter


def _tiny_grid_finding(tiny) -> Finding:
    names = [f"{kernel_family(r.kernel)} ({_int(r.grid_blocks)} block(s) on {d.num_sms} SMs)"
             for r, d in tiny[:MAX_NAMES]]
    more = f" and {len(tiny) - MAX_NAMES} more" if len(tiny) > MAX_NAMES else ""
    text = (f"{len(tiny)} kernel(s) read 0% occupancy only because their grid is too small to "
            f"fill the GPU, not because they stall: {', '.join(names)}{more}.")
    return Finding("tiny_grid", text, {"kernels": [r.kernel for r, _ in tiny],
                                       "run_ids": sorted({r.run_id for r, _ in tiny})},
                   sum(float(r.us_per_iter) for r, _ in tiny))


# ── formatting ───────────────────────────────────────────────────────────────────────────────

def _plain(value):
    """A number or flag as plain JSON data (None for NaN)."""
    if value is None or pd.isna(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _int(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _num(value: float) -> str:
    value = round(float(value), 6)  # per-iteration averages like 4.9999999 read as 5
    return f"{value:.0f}" if value.is_integer() else f"{value:.1f}"


def _short(kernel: str, limit: int = 70) -> str:
    """A kernel's name in a sentence: parsed (function and template arguments, no namespaces)."""
    return demangled.short(kernel, limit)


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"
