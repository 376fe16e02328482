"""How each run was measured, and the warnings when runs compared were measured differently.

A captured run's "attention_run" object carries a measurement record (profiler/capture/record.py:
the GPU's clocks, power, temperature and throttle reasons sampled while it ran, software
versions, L2 flushed or not, other processes on the GPU). This module reads it back:

* `records(store, run_ids)`: {run_id: record dict, or None for a run without one};
* `timing_check(store, run_ids)`: the trace's kernel time per call against the event-timed loop
  (`kernel_vs_wall_pct` = 100 x (kernel - wall) / wall) and against CUDA-graph replay
  (`kernel_vs_graph_pct`); a launch-bound loop (short decode calls) shows a large negative
  kernel-vs-wall and a small kernel-vs-graph;
* `record_table(store, run_ids)`: one row per run of what the Runs page shows;
* `warnings(store, run_ids)`: sentences, one per difference that makes a comparison unsafe: mean
  SM clocks more than `CLOCK_SPREAD_PCT` apart, a run throttled or clock-locked, other versions
  of the software, other processes on the GPU. Compare, rank and check print them.
"""
from __future__ import annotations

import json

import pandas as pd

from profiler.analysis.reads import run_queries
from profiler.analysis.findings import timings
from profiler.storage.session import StoreHandle

CLOCK_SPREAD_PCT = 5.0
VERSION_KEYS = ("driver", "torch", "cuda", "cudnn", "flashinfer-python", "flash-attn-4", "triton")


def records(store: StoreHandle, run_ids) -> dict:
    ids = list(run_ids)
    metas = store.query("SELECT run_id, run_meta FROM traces WHERE run_id IN (SELECT unnest($ids::VARCHAR[]))",
                        {"ids": ids})
    found = {}
    for run, meta in metas.itertuples(index=False):
        try:
            record = json.loads(meta).get("record") if isinstance(meta, str) else None
        except (ValueError, AttributeError):
            record = None
        found[run] = record if isinstance(record, dict) else None
    return {r: found.get(r) for r in ids}


def _labels(store, ids) -> dict:
    found = run_queries.run_labels(store, ids)
    return dict(zip(found["run_id"], found["label"]))


def _pct(a, b) -> float | None:
    if a is None or b is None or pd.isna(a) or pd.isna(b) or b == 0:
        return None
    return 100.0 * (float(a) - float(b)) / float(b)


def timing_check(store: StoreHandle, run_ids) -> pd.DataFrame:
    t = timings.run_timings(store, run_ids)
    return pd.DataFrame({"run_id": t["run_id"], "kernel_us_per_call": t["kernel_us_per_call"],
                         "wall_us_per_call": t["wall_us_per_call"], "graph_us_per_call": t["graph_us_per_call"],
                         "kernel_vs_wall_pct": [_pct(k, w) for k, w in zip(t["kernel_us_per_call"], t["wall_us_per_call"])],
                         "kernel_vs_graph_pct": [_pct(k, g) for k, g in zip(t["kernel_us_per_call"], t["graph_us_per_call"])]})


def _mean(record: dict | None, key: str):
    gpu = (record or {}).get("gpu") or {}
    return (gpu.get(key) or {}).get("mean")


def l2_text(check: dict | None) -> str | None:
    """A cold run's L2 check in a few words (None: not checked, e.g. a warm run)."""
    if not isinstance(check, dict):
        return None
    share = check.get("dram_read_share")
    if check.get("cold") is None:
        return f"not checked: {check.get('said') or 'no reason given'}"[:200]
    where = "missed L2" if check["cold"] else "partly in L2"
    return f"{where} (DRAM reads {share * 100:.0f} % of a flushed L2's)" if share is not None else where


def record_table(store: StoreHandle, run_ids) -> pd.DataFrame:
    """run_id, label, sampled (source and count, or why not), sm_clock_mhz, mem_clock_mhz, power_w,
    temp_c (means), throttled, throttle_reasons, clocks_locked, l2_flushed, l2_cold_check (a cold
    run's first kernel: missed L2 or not, `l2_text`), other_processes,
    versions, kernel_vs_wall_pct, kernel_vs_graph_pct."""
    ids = list(run_ids)
    recs, checks = records(store, ids), timing_check(store, ids).set_index("run_id")
    labels = _labels(store, ids)
    rows = []
    for run in ids:
        r = recs.get(run)
        gpu = (r or {}).get("gpu") or {}
        sampled = (f"{gpu['samples']} samples ({gpu['source']})" if gpu.get("samples") else
                   gpu.get("note") or "no measurement record (uploaded, or captured before records)")
        versions = (r or {}).get("versions") or {}
        others = (r or {}).get("other_processes")
        rows.append({"run_id": run, "label": labels.get(run, run), "sampled": sampled,
                     "sm_clock_mhz": _mean(r, "sm_clock_mhz"), "mem_clock_mhz": _mean(r, "mem_clock_mhz"),
                     "power_w": _mean(r, "power_w"), "temp_c": _mean(r, "temp_c"),
                     "throttled": gpu.get("throttled"), "throttle_reasons": ", ".join(gpu.get("throttle_reasons") or []) or None,
                     "clocks_locked": gpu.get("clocks_locked"), "l2_flushed": (r or {}).get("l2_flushed"),
                     "l2_cold_check": l2_text((r or {}).get("l2_check")),
                     "other_processes": None if others is None else len(others),
                     "versions": "; ".join(f"{k} {v}" for k, v in versions.items() if v) or None,
                     "kernel_vs_wall_pct": checks["kernel_vs_wall_pct"].get(run),
                     "kernel_vs_graph_pct": checks["kernel_vs_graph_pct"].get(run)})
    return pd.DataFrame(rows)


def warnings(store: StoreHandle, run_ids) -> list[str]:
    """Why the runs' numbers may not be comparable, one sentence each (none when they may be)."""
    ids = list(dict.fromkeys(run_ids))
    recs = records(store, ids)
    if not any(recs.values()):
        return []
    labels = _labels(store, ids)
    name = {r: labels.get(r, r) for r in ids}
    out = [f"{name[r]} has no measurement record (uploaded, or captured before records): its clocks, "
           "throttling and versions are unknown." for r in ids if recs[r] is None]
    out += _clock_warnings(recs, name) + _version_warnings(recs, name)
    for r, rec in recs.items():
        check = (rec or {}).get("l2_check") or {}
        if check.get("cold") is False:
            out.append(f"{name[r]} is a cold run whose first kernel found its data partly in L2 "
                       f"({l2_text(check)}): its cold time is partly warm.")
    for r, rec in recs.items():
        others = (rec or {}).get("other_processes") or []
        if others:
            out.append(f"{name[r]} shared the GPU with {len(others)} other process"
                       f"{'es' * (len(others) != 1)} (pid {', '.join(str(p['pid']) for p in others[:5])}).")
    return out


def _clock_warnings(recs: dict, name: dict) -> list[str]:
    out = []
    clocks = {r: _mean(rec, "sm_clock_mhz") for r, rec in recs.items() if _mean(rec, "sm_clock_mhz")}
    if len(clocks) > 1:
        lo, hi = min(clocks, key=clocks.get), max(clocks, key=clocks.get)
        spread = 100.0 * (clocks[hi] - clocks[lo]) / clocks[lo]
        if spread > CLOCK_SPREAD_PCT:
            out.append(f"The runs ran at different SM clocks: {name[hi]} at {clocks[hi]:,.0f} MHz, {name[lo]} at "
                       f"{clocks[lo]:,.0f} MHz ({spread:.1f} % apart, more than {CLOCK_SPREAD_PCT:.0f} %): their "
                       "times differ by the clock as well as by the code.")
    for r, rec in recs.items():
        gpu = (rec or {}).get("gpu") or {}
        if gpu.get("throttled"):
            slowing = [w for w in gpu.get("throttle_reasons", []) if w not in ("gpu_idle", "applications_clocks_setting")]
            out.append(f"{name[r]} was throttled while measured ({', '.join(slowing)}): its clocks dropped.")
    locked = {r for r, rec in recs.items() if ((rec or {}).get("gpu") or {}).get("clocks_locked")}
    if locked and len(locked) < sum(1 for rec in recs.values() if rec):
        out.append(f"{', '.join(name[r] for r in locked)} ran with clocks set by the user (application clocks) "
                   "and the others did not.")
    return out


def _version_warnings(recs: dict, name: dict) -> list[str]:
    out = []
    for key in VERSION_KEYS:
        seen = {r: ((rec or {}).get("versions") or {}).get(key) for r, rec in recs.items() if rec}
        values = {v for v in seen.values() if v}
        if len(values) > 1:
            listed = "; ".join(f"{name[r]}: {v}" for r, v in seen.items() if v)
            out.append(f"The runs ran under other versions of {key} ({listed}).")
    return out
