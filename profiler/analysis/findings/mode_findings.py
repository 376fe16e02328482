"""Findings that explain a run's mode (`profiler.analysis.model.modes`), from the op-level cost model
(`op_costs.op_calls`: the calls' bytes, kernel time and rating):

* **decode_bandwidth** (decode runs only): decode moves the KV cache for a few FLOPs a byte, under
  the ridge point, so it is memory-bound; the finding gives each decode run's attention TB/s (its
  calls' bytes over their kernel time) and that as a share of the device's HBM bandwidth (the
  rating's `share`), and, when every run compared decodes, the run that reads the cache closest
  to the bandwidth.
* **probability_matrix** (train runs only): a softmax over a (batch, heads, queries, keys) score
  tensor means the math path (the math backend or a naive attention), which keeps the whole
  probability matrix for the backward; the finding gives its bytes per call.
* **gqa_bytes** (runs with GQA): query heads / key-value heads times fewer K and V bytes than with
  one K/V head per query head, for a run whose attention reads K and V of the K/V heads (it
  profits: the finding gives both sizes and the group); a run that copies K and V out to every
  query head first (`repeat_interleave`: copies of (batch, K/V heads, group, keys, dim) tensors,
  the naive path and the math backend) reads them as without GQA: the finding names it as not
  profiting, with the bytes those copies move per iteration.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from profiler.analysis.model import costmodel as cm, modes, rating
from profiler.analysis.reads import op_costs, reads
from profiler.analysis.findings.finding import Finding, Runs
from profiler.storage.session import StoreHandle


def mode_findings(store: StoreHandle, runs: Runs) -> list[Finding]:
    """The mode findings about the runs (one run, or a pair)."""
    calls = op_costs.op_calls(store, runs.ids)
    if calls.empty:
        return []
    mine = {r: calls[calls["run_id"] == r] for r in runs.ids}
    mode = {r: modes.run_mode(c["mode"].tolist()) for r, c in mine.items()}
    return [*_decode_bandwidth(runs, mine, mode), *_probability_matrix(runs, mine, mode),
            *_gqa_bytes(runs, mine, reads.run_shape_records(store, runs.ids))]


def _per_iter_us(calls: pd.DataFrame) -> float:
    """Kernel µs per iteration of `calls` (all of them where no iteration is known)."""
    n = calls["iteration"].dropna().nunique() or 1
    return float(calls["kernel_ns"].sum()) / 1e3 / n


def _decode_bandwidth(runs: Runs, mine: dict, mode: dict) -> list[Finding]:
    parts, evidence = [], {}
    for run in runs.ids:
        attention = mine[run][(mine[run]["kind"] == "attention") & (mine[run]["mode"] == "decode")]
        if mode[run] != "decode" or attention.empty or attention["kernel_ns"].sum() <= 0:
            continue
        seconds = float(attention["kernel_ns"].sum()) / 1e9
        nbytes, flops = float(attention["bytes"].sum()), float(attention["flops"].sum())
        tbps, peak = nbytes / seconds / 1e12, float(attention["peak_tbps"].iloc[0])
        pct = float(rating.share(tbps, peak))
        ridge = float(attention["ridge"].iloc[0])
        intensity = flops / nbytes if nbytes else float("nan")
        text = f"{runs.labels[run]} decodes at {intensity:.1f} FLOP/byte"
        if np.isfinite(ridge):
            text += f", under the ridge point of {ridge:.0f}: memory-bound"
        text += f"; its attention reads the KV cache (with Q and O) at {tbps:.2f} TB/s"
        text += f", {pct:.0f} % of the {peak:.2f} TB/s HBM bandwidth" if np.isfinite(pct) else ""
        parts.append(text)
        evidence[run] = {"tbps": tbps, "pct_of_bandwidth": pct if np.isfinite(pct) else None,
                         "peak_tbps": peak if np.isfinite(peak) else None, "bytes": nbytes,
                         "kernel_us": seconds * 1e6, "intensity": intensity,
                         "ridge": ridge if np.isfinite(ridge) else None, "impact_us": _per_iter_us(attention)}
    if not parts:
        return []
    text = "; ".join(parts) + "."
    winner = None
    if len(evidence) == len(runs.ids) > 1:
        winner = max(evidence, key=lambda r: evidence[r]["tbps"])
        text += f" {runs.labels[winner]} reads the cache closest to the memory bandwidth."
    return [Finding("decode_bandwidth", text, {"runs": evidence, "winner": winner},
                    max(e["impact_us"] for e in evidence.values()))]


def _probability_matrix(runs: Runs, mine: dict, mode: dict) -> list[Finding]:
    parts, evidence, impact = [], {}, 0.0
    for run in runs.ids:
        if mode[run] != "train":
            continue
        softmax = mine[run][mine[run]["op"].isin(cm.SOFTMAX) & mine[run]["input_dims"].notna()]
        for row in softmax.itertuples():
            dims, types = json.loads(row.input_dims)[0], json.loads(row.input_types)[0]
            if len(dims) != 4:       # (batch, heads, queries, keys): attention's scores, not a classifier's
                continue
            matrix = cm.tensor_bytes(dims, types)
            parts.append(f"{runs.labels[run]} trains through the math path: its softmax keeps the full "
                         f"probability matrix ({'x'.join(map(str, dims))}, {row.dtype}) of "
                         f"{matrix / 2**20:,.1f} MiB per call for the backward, where a fused kernel keeps "
                         f"only the log-sum-exp and recomputes it")
            evidence[run] = {"dims": dims, "dtype": row.dtype, "matrix_bytes": matrix}
            impact = max(impact, _per_iter_us(softmax))
            break
    if not parts:
        return []
    return [Finding("probability_matrix", "; ".join(parts) + ".", {"runs": evidence}, impact)]


def _expanded_kv(calls: pd.DataFrame, shape: dict | None) -> pd.DataFrame:
    """The copies that lay K or V out for every query head: inputs (batch, K/V heads, group, keys,
    dim) with K/V heads x group = the run's query heads (what `repeat_interleave` writes)."""
    if not shape or not shape.get("heads") or not shape.get("kv_heads") or shape["kv_heads"] >= shape["heads"]:
        return calls.iloc[0:0]
    heads, kv_heads = int(shape["heads"]), int(shape["kv_heads"])

    def expands(dims) -> bool:
        first = json.loads(dims)[0] if isinstance(dims, str) else None
        return bool(first) and len(first) == 5 and first[1] == kv_heads and first[1] * first[2] == heads
    copies = calls[(calls["op"] == "aten::copy_") & calls["input_dims"].notna()]
    return copies[[expands(d) for d in copies["input_dims"]]]


def _gqa_bytes(runs: Runs, mine: dict, shapes: dict) -> list[Finding]:
    parts, evidence, impact, profit, lose = [], {}, 0.0, [], []
    for run in runs.ids:
        gqa = mine[run][(mine[run]["kind"] == "attention") & (mine[run]["kv_group"] > 1)]
        copies = _expanded_kv(mine[run], shapes.get(run))
        if not gqa.empty:
            row = gqa.sort_values("kernel_ns", ascending=False).iloc[0]
            group, kv = int(row["kv_group"]), int(row["kv_bytes"])
            parts.append(f"{runs.labels[run]} uses GQA, {group} query heads per K/V head ({row['shape']}): "
                         f"K and V are {kv / 2**20:,.2f} MiB per call instead of {group * kv / 2**20:,.2f} MiB "
                         f"with a K/V head per query head, {group}x fewer K/V bytes")
            evidence[run] = {"kv_group": group, "kv_bytes": kv, "kv_bytes_without_gqa": group * kv,
                             "bytes": int(row["bytes"]), "shape": row["shape"], "profits": True}
            impact = max(impact, _per_iter_us(gqa))
            profit.append(runs.labels[run])
        elif not copies.empty:
            shape = shapes[run]
            group = int(shape["heads"]) // int(shape["kv_heads"])
            moved = float(copies["bytes"].sum()) / (copies["iteration"].dropna().nunique() or 1)
            parts.append(f"{runs.labels[run]} copies K and V out to all {int(shape['heads'])} query heads before "
                         f"its attention ({len(copies) // (copies['iteration'].dropna().nunique() or 1)} copies of "
                         f"{copies['shape'].iloc[0].split(' , ')[0]}, {moved / 2**20:,.1f} MiB moved per iteration), "
                         f"so it reads K and V as without GQA and does not profit from the {group} query heads per "
                         f"K/V head")
            evidence[run] = {"kv_group": group, "expand_bytes_per_iter": moved, "profits": False}
            impact = max(impact, _per_iter_us(copies))
            lose.append(runs.labels[run])
    if not parts:
        return []
    text = "; ".join(parts) + "."
    if profit and lose:
        text += f" Profit from GQA: {', '.join(profit)}; not: {', '.join(lose)}."
    return [Finding("gqa_bytes", text, {"runs": evidence}, impact)]
