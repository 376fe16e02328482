"""The findings about kernels, copies, launches and CPU ops, one kind per function, and the
number formats their sentences share. `findings` loads the runs (`finding._Runs`), calls these and
ranks what they find; the rules behind each kind are in `docs/analysis.md`.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import kernel_queries, pair_queries
from profiler.analysis.model import occupancy, tensor_cores
from profiler.analysis.model.device import Device
from profiler.analysis.model.diff import kernel_family
from profiler.analysis.findings.finding import Finding, Runs
from profiler.analysis.reads.units import binary_size, json_value
from profiler.analysis.findings.verdict import BOUND_EVIDENCE, bound_sentence
from profiler.parse import demangled
from profiler.storage.session import StoreHandle

MATH_OPS = ("gemm", "conv", "attention")
MAX_NAMES = 5


def kernels_per_iteration(runs: Runs) -> list[Finding]:
    counts = {r: float(runs.kernels.loc[runs.kernels["run_id"] == r, "calls_per_iter"].sum())
              for r in runs.ids}
    distinct = {r: int((runs.kernels["run_id"] == r).sum()) for r in runs.ids}
    parts = [f"{runs.labels[r]} launches {_num(counts[r])} kernel(s) per iteration "
             f"({distinct[r]} distinct)" for r in runs.ids]
    return [Finding("kernels_per_iteration", "; ".join(parts) + ".",
                    {"kernels_per_iter": counts, "distinct_kernels": distinct})]


def memcpy_only_in_one(runs: Runs) -> list[Finding]:
    parts, items = [], []
    for run, other in (runs.ids, runs.ids[::-1]):
        mine = runs.memops[runs.memops["run_id"] == run]
        theirs = set(runs.memops.loc[runs.memops["run_id"] == other, "memop"])
        only = mine[~mine["memop"].isin(theirs)].sort_values("us_per_iter", ascending=False)
        for row in only.head(MAX_NAMES).itertuples():
            parts.append(f"{runs.labels[run]} {_memop_verb(row.memop)} {binary_size(row.bytes_per_iter)} "
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


def launch_api(store: StoreHandle, runs: Runs) -> list[Finding]:
    a, b = runs.ids
    delta = pair_queries.launch_api_delta(store, a, b)
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


def cpu_ops_only_in_one(store: StoreHandle, runs: Runs) -> list[Finding]:
    a, b = runs.ids
    delta = pair_queries.cpu_op_delta(store, a, b)
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


def bound(runs: Runs) -> list[Finding]:
    """What bounds each run (the metrics layer's verdict), one sentence per run, one finding."""
    rows = [(run, runs.metrics.loc[run]) for run in runs.ids if run in runs.metrics.index]
    if not rows:
        return []
    text = " ".join(bound_sentence(row, runs.labels[run]) for run, row in rows)
    evidence = {"runs": {run: {k: json_value(row[k]) for k in BOUND_EVIDENCE} for run, row in rows}}
    return [Finding("bound", text, evidence, max(float(row["gpu_idle_us_per_iter"]) for _, row in rows))]


def cuda_core_math(runs: Runs) -> list[Finding]:
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


def zero_occupancy(runs: Runs, store: StoreHandle) -> list[Finding]:
    """Kernels the trace reports at 0 % occupancy that really ran, each name once: one finding
    for those that need opt-in shared memory (or cannot fit Kineto's limits), one for tiny grids."""
    zero = runs.kernels[(runs.kernels["est_occupancy_pct"] == 0)].sort_values("us_per_iter", ascending=False)
    devices = kernel_queries.run_devices(store, runs.ids)
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


def _theory(row, device_info) -> tuple[Device | None, occupancy.Launch, occupancy.Occupancy]:
    device = kernel_queries.run_device(device_info, row.device)
    launch = occupancy.Launch(_int(row.threads_per_block) or 0, _int(row.registers_per_thread),
                              _int(row.shared_mem_bytes), _int(row.grid_blocks))
    return device, launch, occupancy.occupancy(launch, device)


def _zero_finding(runs, explained) -> Finding:
    parts, items = [], []
    for row, device, result in explained:
        smem, default = _int(row.shared_mem_bytes) or 0, device.shared_mem_per_block_bytes
        why = (f"{binary_size(smem)} of shared memory per block, above the {binary_size(default)} Kineto "
               "assumes" if smem > default else "Kineto could not fit a block with its default limits")
        engine = tensor_cores.engine_phrase(row.tc_engine)   # 'a communication' kernel, not '… communication communication'
        what = f"{engine} kernel" if str(row.tc_op) in engine.split() else f"{engine} {row.tc_op} kernel"
        what += f" in {row.tc_precision}" if isinstance(row.tc_precision, str) else ""
        # the table's figure (time-weighted over the kernel's launch configurations), one value
        theory = getattr(row, "theory_occupancy_pct", None)
        theory = result.occupancy_pct if theory is None or theory != theory else float(theory)
        items.append({"run_id": row.run_id, "kernel": row.kernel, "occupancy_reported_pct": 0.0,
                      "occupancy_theoretical_pct": theory,
                      "occupancy_limiter": result.limiter, "shared_mem_bytes": smem,
                      "blocks_per_sm": result.active_blocks_per_sm, "engine": row.tc_engine,
                      "precision": row.tc_precision if isinstance(row.tc_precision, str) else None,
                      "us_per_iter": float(row.us_per_iter)})
        if len(parts) < MAX_NAMES:
            parts.append(f"{demangled.short(row.kernel)} ({what}, {_num(row.calls_per_iter)}× and "
                         f"{row.us_per_iter:.1f} µs per iteration in {runs.labels[row.run_id]}): "
                         f"{why}; with opt-in shared memory {result.active_blocks_per_sm} block(s) of "
                         f"{_int(row.threads_per_block)} threads fit per SM, "
                         f"{theory:.1f}% theoretical occupancy, limited by "
                         f"{result.limiter}")
    more = f"; and {len(items) - MAX_NAMES} more" if len(items) > MAX_NAMES else ""
    text = (f"The trace reports 0% occupancy for {len(items)} kernel(s) that ran: "
            + "; ".join(parts) + more + ".")
    return Finding("zero_occupancy", text, {"kernels": items}, sum(i["us_per_iter"] for i in items))



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

def _int(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _num(value: float) -> str:
    value = round(float(value), 6)  # per-iteration averages like 4.9999999 read as 5
    return f"{value:.0f}" if value.is_integer() else f"{value:.1f}"
