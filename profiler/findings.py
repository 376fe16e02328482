"""Findings: short plain-language sentences generated from the store, each with its evidence.

`compare_findings(store, run_a, run_b)` explains the difference between two runs;
`run_findings(store, run_id)` summarises one run (the `runs` page); `sweep_findings(store,
run_ids)` says where variants of a sequence-length sweep cross over. Each `Finding` carries a
`kind`, the sentence, and an `evidence` dict of the numbers and names it rests on, so a page can
show them next to the sentence and the CLI can print them as JSON. The rules behind each kind are
in `docs/analysis.md`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from profiler import gpus, occupancy, queries, roofline
from profiler.errors import UnknownRunError
from profiler.diff import kernel_family

MATH_OPS = ("gemm", "conv", "attention")
MAX_NAMES = 5
SAME_TIME_RATIO = 1.05  # GPU times closer than this read as "about the same"


@dataclass(frozen=True)
class Finding:
    kind: str      # 'gpu_time' | 'kernels_per_iteration' | 'memcpy' | 'cuda_core_math' |
                   # 'zero_occupancy' | 'tiny_grid' | 'cpu_bound' | 'launch_api' | 'cpu_ops' |
                   # 'crossover' | 'cold_start' | 'memory' | 'no_memory'
    text: str
    evidence: dict = field(default_factory=dict)


@dataclass(frozen=True)
class _Runs:
    ids: list[str]
    labels: dict[str, str]
    kernels: pd.DataFrame        # queries.kernel_details
    memops: pd.DataFrame         # queries.memop_table
    per_iter: pd.DataFrame       # queries.iteration_cpu_gpu, averaged per run


def _load(store, run_ids: list[str]) -> _Runs:
    labels = queries.run_labels(store, run_ids)
    missing = set(run_ids) - set(labels["run_id"])
    if missing:
        raise UnknownRunError(f"run {sorted(missing)[0]} is not in the store {store.path}")
    per_iter = queries.iteration_cpu_gpu(store, run_ids).groupby("run_id").mean(numeric_only=True)
    return _Runs(run_ids, dict(zip(labels["run_id"], labels["label"])),
                 queries.kernel_details(store, run_ids), queries.memop_table(store, run_ids), per_iter)


def run_findings(store, run_id: str) -> list[Finding]:
    """Findings about one run: kernels per iteration, CPU- or GPU-bound, CUDA-core math,
    0 %-occupancy kernels explained."""
    runs = _load(store, [run_id])
    return [*_kernels_per_iteration(runs), *_cpu_bound(runs), *_cuda_core_math(runs),
            *_zero_occupancy(runs, store)]


def compare_findings(store, run_a: str, run_b: str) -> list[Finding]:
    """Findings that explain the difference between two runs (a first, then b)."""
    runs = _load(store, [run_a, run_b])
    return [*_cold_start(store, runs), *_gpu_time(runs), *_kernels_per_iteration(runs), *_memcpy_only_in_one(runs),
            *_launch_api(store, runs), *_cpu_ops_only_in_one(store, runs), *_cpu_bound(runs),
            *_cuda_core_math(runs), *_zero_occupancy(runs, store)]


def sweep_findings(store, run_ids) -> list[Finding]:
    """Where variants of a sequence-length sweep cross over in GPU time per iteration."""
    cross = roofline.crossovers(roofline.sweep_table(store, run_ids))
    found = []
    for row in cross.to_dict("records"):
        lo_fast, lo_slow = sorted([row["gpu_us_per_iter_lo_a"], row["gpu_us_per_iter_lo_b"]])
        hi_fast, hi_slow = sorted([row["gpu_us_per_iter_hi_a"], row["gpu_us_per_iter_hi_b"]])
        text = (f"{row['faster_below']} is faster at L={row['seq_len_lo']} ({lo_fast:.1f} vs "
                f"{lo_slow:.1f} µs GPU per iteration) but {row['faster_above']} is faster at "
                f"L={row['seq_len_hi']} ({hi_fast:.1f} vs {hi_slow:.1f} µs): they cross over "
                f"between these lengths.")
        found.append(Finding("crossover", text, row))
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
                f"{gpu[a]:.1f} µs vs {gpu[b]:.1f} µs.")
    else:
        saved = 100 * (1 - gpu[fast] / gpu[slow])
        speed = f"{ratio:.1f}× faster" if ratio >= 2 else f"{saved:.0f}% less GPU time"
        text = (f"{runs.labels[fast]} needs {gpu[fast]:.1f} µs of GPU time per iteration against "
                f"{gpu[slow]:.1f} µs for {runs.labels[slow]} ({speed}).")
    return [Finding("gpu_time", text, {"gpu_us_per_iter": gpu, "ratio": round(ratio, 3)})]


# what a cold call's extra CPU time is, by the op (or variant) it shows in; else the op is named alone
COLD_CAUSES = {"_cudnn_attention": "the plan build, where cuDNN builds the execution plan that warm calls reuse",
               "compile": "torch.compile compiling the function", "dynamo": "torch.compile compiling the function",
               "flashinfer": "flashinfer's first-use JIT compile of its kernel, then its plan"}


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
    from profiler import timings  # timings reads memory, which reads findings' Finding

    timed = timings.run_timings(store, [cold, warm]).set_index("run_id")
    extra = store.query(queries.sql_text("cold_extra_cpu"), {"cold": cold, "warm": warm})
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


def _plain(value):
    return None if pd.isna(value) else float(value)


def _gpu_us(runs: _Runs, run: str) -> float:
    if run not in runs.per_iter.index:
        return 0.0
    row = runs.per_iter.loc[run]
    return float(row["gpu_kernel_us"] + row["gpu_memop_us"])


def _kernels_per_iteration(runs: _Runs) -> list[Finding]:
    counts = {r: float(runs.kernels.loc[runs.kernels["run_id"] == r, "calls_per_iter"].sum())
              for r in runs.ids}
    distinct = {r: int((runs.kernels["run_id"] == r).sum()) for r in runs.ids}
    parts = [f"{runs.labels[r]} launches {_num(counts[r])} kernel(s) per iteration "
             f"({distinct[r]} distinct)" for r in runs.ids]
    return [Finding("kernels_per_iteration", "; ".join(parts) + ".",
                    {"kernels_per_iter": counts, "distinct_kernels": distinct})]


def _memcpy_only_in_one(runs: _Runs) -> list[Finding]:
    found = []
    for run, other in (runs.ids, runs.ids[::-1]):
        mine = runs.memops[runs.memops["run_id"] == run]
        theirs = set(runs.memops.loc[runs.memops["run_id"] == other, "memop"])
        only = mine[~mine["memop"].isin(theirs)].sort_values("bytes_per_iter", ascending=False)
        for row in only.head(MAX_NAMES).itertuples():
            text = (f"{runs.labels[run]} {_memop_verb(row.memop)} {_bytes(row.bytes_per_iter)} per "
                    f"iteration ({_num(row.calls_per_iter)} × {row.memop}, {row.us_per_iter:.1f} µs); "
                    f"{runs.labels[other]} has no such {row.kind}.")
            found.append(Finding("memcpy", text, {"run_id": run, "memop": row.memop,
                                 "calls_per_iter": row.calls_per_iter,
                                 "bytes_per_iter": row.bytes_per_iter, "us_per_iter": row.us_per_iter}))
    return found


def _memop_verb(name: str) -> str:
    if "DtoD" in name:
        return "copies device to device"
    return "sets" if name.startswith("Memset") else "copies"


def _launch_api(store, runs: _Runs) -> list[Finding]:
    a, b = runs.ids
    delta = queries.launch_api_delta(store, a, b)
    found = []
    for presence, run, other in (("only in a", a, b), ("only in b", b, a)):
        only = delta[delta["presence"] == presence]
        if only.empty:
            continue
        calls = only["calls_a" if run == a else "calls_b"]
        listed = ", ".join(f"{api} ({_num(c)} per iteration)"
                           for api, c in zip(only["api"][:MAX_NAMES], calls[:MAX_NAMES]))
        listed += f" and {len(only) - MAX_NAMES} more" if len(only) > MAX_NAMES else ""
        text = f"{runs.labels[run]} calls {listed}, which {runs.labels[other]} never calls."
        found.append(Finding("launch_api", text, {"run_id": run, "apis": dict(zip(only["api"], calls))}))
    return found


def _cpu_ops_only_in_one(store, runs: _Runs) -> list[Finding]:
    a, b = runs.ids
    delta = queries.cpu_op_delta(store, a, b)
    found = []
    for presence, run, side in (("only in a", a, "a"), ("only in b", b, "b")):
        only = delta[delta["presence"] == presence].sort_values(f"self_us_{side}", ascending=False)
        if only.empty:
            continue
        top = only.head(MAX_NAMES)
        listed = ", ".join(f"{op} ({_num(c)}×, {us:.1f} µs)" for op, c, us in
                           zip(top["op"], top[f"calls_{side}"], top[f"self_us_{side}"]))
        more = f" and {len(only) - MAX_NAMES} more" if len(only) > MAX_NAMES else ""
        text = f"CPU ops only in {runs.labels[run]} (per iteration, self time): {listed}{more}."
        found.append(Finding("cpu_ops", text, {"run_id": run, "ops": list(only["op"])}))
    return found


def _cpu_bound(runs: _Runs) -> list[Finding]:
    found = []
    for run in runs.ids:
        if run not in runs.per_iter.index:
            continue
        row = runs.per_iter.loc[run]
        cpu, gpu, wall = float(row["cpu_op_self_us"]), _gpu_us(runs, run), float(row["wall_us"])
        busy = 100.0 * gpu / wall if wall > 0 else 0.0
        if cpu > gpu:
            text = (f"{runs.labels[run]} is CPU-bound at this size: per iteration its CPU ops take "
                    f"{cpu:.1f} µs against {gpu:.1f} µs of GPU work, so the GPU is busy only "
                    f"{busy:.0f}% of the {wall:.1f} µs iteration.")
        else:
            text = (f"{runs.labels[run]} is GPU-bound at this size: {gpu:.1f} µs of GPU work per "
                    f"iteration against {cpu:.1f} µs of CPU op time.")
        found.append(Finding("cpu_bound", text, {"run_id": run, "cpu_op_us_per_iter": cpu,
                             "gpu_us_per_iter": gpu, "wall_us_per_iter": wall,
                             "gpu_busy_pct": busy, "cpu_bound": cpu > gpu}))
    return found


def _cuda_core_math(runs: _Runs) -> list[Finding]:
    found = []
    math = runs.kernels[runs.kernels["tc_op"].isin(MATH_OPS) & (runs.kernels["tc_engine"] == "CUDA core")]
    for run, rows in math.groupby("run_id", sort=False):
        share = float(rows["gpu_time_share_pct"].sum())
        families = rows.assign(family=rows["kernel"].map(kernel_family),
                               precision=rows["tc_precision"].fillna("?"))
        per = families.groupby(["family", "precision"], as_index=False)[["calls_per_iter", "us_per_iter"]].sum()
        per = per.sort_values("us_per_iter", ascending=False)
        listed = ", ".join(f"{f} ({p}, {_num(c)}× per iteration, {us:.1f} µs)" for f, p, c, us in
                           per.head(MAX_NAMES).itertuples(index=False))
        listed += f" and {len(per) - MAX_NAMES} more" if len(per) > MAX_NAMES else ""
        text = (f"{runs.labels[run]} runs {len(rows)} matrix kernel(s) on CUDA cores, not tensor "
                f"cores: {listed}; {_share(share)} of its GPU kernel time.")
        found.append(Finding("cuda_core_math", text, {"run_id": run, "kernels": list(rows["kernel"]),
                             "rules": list(rows["tc_rule"]), "gpu_time_share_pct": share}))
    return found


def _share(pct: float) -> str:
    if pct < 0.05:
        return "under 0.1%"
    return f"{pct:.1f}%" if pct < 1 else f"{pct:.0f}%"


def _zero_occupancy(runs: _Runs, store) -> list[Finding]:
    zero = runs.kernels[(runs.kernels["est_occupancy_pct"] == 0)]
    devices = queries.run_devices(store, runs.ids)
    found, tiny = [], []
    for row in zero.itertuples():
        device, launch, result = _theory(row, devices.get(row.run_id))
        if result.occupancy_pct is None:
            continue
        if min(occupancy.block_limits(launch, device, optin=False).values()) > 0:
            tiny.append((row, device))  # fits Kineto's limits: its 0 % is a rounded tiny grid
        else:
            found.append(_zero_finding(runs, row, device, result))
    return found + ([_tiny_grid_finding(runs, tiny)] if tiny else [])


def _theory(row, device_info) -> tuple[gpus.Device | None, occupancy.Launch, occupancy.Occupancy]:
    props, gpu = device_info or (None, None)
    try:
        device = gpus.resolve_device(props, None if pd.isna(row.device) else int(row.device), gpu)
    except ValueError:
        device = None
    launch = occupancy.Launch(_int(row.threads_per_block) or 0, _int(row.registers_per_thread),
                              _int(row.shared_mem_bytes), _int(row.grid_blocks))
    return device, launch, occupancy.occupancy(launch, device)


def _zero_finding(runs, row, device, result) -> Finding:
    smem, default_kb = _int(row.shared_mem_bytes) or 0, device.shared_mem_per_block_bytes // 1024
    why = (f"it uses {smem / 1024:.0f} KB of shared memory per block, above the {default_kb} KB "
           f"default Kineto assumes" if smem > device.shared_mem_per_block_bytes
           else "Kineto could not fit a block with its default limits")
    what = f"a {row.tc_engine.replace(' ', '-')} {row.tc_op} kernel"
    what += f" in {row.tc_precision}" if row.tc_precision else ""
    text = (f"The trace reports 0% occupancy for {_short(row.kernel)} ({runs.labels[row.run_id]}), "
            f"yet it ran {_num(row.calls_per_iter)}× per iteration for {row.us_per_iter:.1f} µs: {why}. "
            f"It is {what}; with opt-in shared memory {result.active_blocks_per_sm} block(s) of "
            f"{_int(row.threads_per_block)} threads fit per SM, {result.occupancy_pct:.1f}% "
            f"theoretical occupancy, limited by {_limiter_text(result.limiter)}.")
    return Finding("zero_occupancy", text, {
        "run_id": row.run_id, "kernel": row.kernel, "occupancy_reported_pct": 0.0,
        "occupancy_theoretical_pct": result.occupancy_pct, "occupancy_limiter": result.limiter,
        "shared_mem_bytes": smem, "blocks_per_sm": result.active_blocks_per_sm,
        "tensor_cores": row.tc_engine, "precision": row.tc_precision})


def _limiter_text(limiter: str) -> str:
    return "a grid with fewer blocks than the GPU has SMs" if limiter == "grid" else limiter


def _tiny_grid_finding(runs, tiny) -> Finding:
    names = [f"{kernel_family(r.kernel)} ({_int(r.grid_blocks)} block(s) on {d.num_sms} SMs)"
             for r, d in tiny[:MAX_NAMES]]
    text = (f"{len(tiny)} kernel(s) read 0% occupancy only because their grid is too small to "
            f"fill the GPU, not because they stall: {', '.join(names)}.")
    return Finding("tiny_grid", text, {"kernels": [r.kernel for r, _ in tiny],
                                       "run_ids": sorted({r.run_id for r, _ in tiny})})


# ── formatting ───────────────────────────────────────────────────────────────────────────────

def _int(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _num(value: float) -> str:
    value = round(float(value), 6)  # per-iteration averages like 4.9999999 read as 5
    return f"{value:.0f}" if value.is_integer() else f"{value:.1f}"


def _short(kernel: str, limit: int = 70) -> str:
    name = kernel.removeprefix("void ").split("(")[0]
    return name if len(name) <= limit else name[:limit - 1] + "…"


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"
