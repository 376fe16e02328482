"""Sweeps over one axis of the attention shape, per mode, and where variants cross over.

A **sweep** is a set of warm captured runs that differ in one axis of their shape (`AXES`:
query length, KV length, window, head dim or K/V heads) and agree on every other key of
`queries.SHAPE_KEYS` (mode included: prefill, decode and train are never mixed). A prefill run's
KV length is its query length, so a length sweep lets `kv_len` move with `seq_len`.

* `swept(runs)`: the one definition of what a sweep varies: for a sweep's runs, the axis their
  shapes differ on and each run's value on it (the Sweep page and the runs page's "group sweeps").
* `sweep_members(shapes, per)`: which runs form sweeps, per value of ``per`` (a variant), and on
  which axis: one row per run and axis it is swept on.
* `sweep_points(store, run_ids)`: one row per run and axis it is swept on, with its throughput
  (`useful_rate`): TB/s in decode (memory-bound), TFLOP/s in prefill and train, each the work its
  shape asks of any variant over the run's GPU time per call, so the faster run rates higher.
* `sweep_curves(points)`: per sweep, variant and axis value, the figure of the repeats by the rule
  every ranking uses (`repeats`: median, least to most, outliers set aside), and the run nearest
  the median (the one a point opens).
* `crossovers(curves)`: where two variants of one sweep swap the lead, through ties (`repeats`),
  with the sentence a user reads ("flex_decode overtakes sdpa_flash for decode from a KV cache of 8k").
Who leads each point, and where a variant runs another's kernels, is `sweep_leads`' (given its
`ranked_curves`, `crossovers` leaves such a variant out where it does).
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import queries, run_queries
from profiler.analysis.findings import repeats
from profiler.analysis.model import run_shape
from profiler.storage.session import StoreHandle

AXES = ("seq_len", "kv_len", "window", "head_dim", "kv_heads")
SHAPE = [k for k in queries.SHAPE_KEYS if k != "variant"]   # what a sweep holds fixed, but its axis
AXIS_NAMES = {"seq_len": "sequence length", "kv_len": "KV cache length", "window": "window",
              "head_dim": "head dim", "kv_heads": "K/V heads"}
METRICS = {"tflops": "TFLOP/s", "tbps": "TB/s"}


def metric_of(mode: str | None) -> str:
    """The throughput a mode is judged by: TB/s for decode, TFLOP/s for prefill and train."""
    return "tbps" if mode == "decode" else "tflops"


def useful_rate(shape: dict, metric: str, us_per_call: float) -> float | None:
    """A run's throughput at its shape: the work the shape asks of any variant
    (`run_shape.shape_work`: the attention's FLOPs, or for decode the bytes of Q, K, V and the
    output) over the time one call of the run takes (`sweep_points`: the GPU busy time per
    iteration; a captured run calls once per iteration), in TFLOP/s or TB/s. At one shape the
    faster run always rates higher, as in FlashAttention's and FlashInfer's benchmarks; the
    roofline instead rates the work each run's own ops do (a naive decode that writes its score
    matrix moves more bytes, and so reads fast there while it runs slow)."""
    work = run_shape.shape_work(shape)
    if work is None or not us_per_call > 0:   # missing (NaN) or no time
        return None
    flops, nbytes = work
    return (nbytes if metric == "tbps" else flops) / (us_per_call * 1e-6) / 1e12


def fixed_keys(axis: str) -> list[str]:
    """The shape keys a sweep over `axis` holds equal (a length sweep lets the KV length follow)."""
    moving = {axis, "kv_len"} if axis == "seq_len" else {axis}
    return [k for k in SHAPE if k not in moving]


def swept(runs: pd.DataFrame) -> tuple[str | None, pd.Series]:
    """What a sweep varies: for the runs of one sweep (rows with the shape keys `SHAPE`, as
    `queries.run_shapes` gives them), the one axis of `AXES` their values differ on and each run's
    value on it (integers on the rows' index). Where every run's keys are its queries (prefill,
    train: kv_len == seq_len) the KV length follows the length: a sequence length sweep. (None, an
    empty Series) when the runs differ on no axis (one point, repeats), on more than one, or on a
    key a sweep holds fixed (mode, batch, heads, packed lengths, dtype, causality)."""
    nothing = (None, pd.Series(dtype="int64"))
    held = [k for k in SHAPE if k not in AXES]
    if runs.empty or runs[list(AXES)].isna().any().any() or (runs[held].astype(str).nunique() > 1).any():
        return nothing
    moving = {axis for axis in AXES if runs[axis].nunique() > 1}
    if moving == {"seq_len", "kv_len"} and (runs["kv_len"] == runs["seq_len"]).all():
        moving = {"seq_len"}
    if len(moving) != 1:
        return nothing
    axis = moving.pop()
    return axis, runs[axis].astype("int64")


def sweep_key(shapes: pd.DataFrame, axis: str) -> pd.Series:
    """Per row, the text naming the sweep over ``axis`` it can belong to: the axis and the values of
    `fixed_keys` (a KV cache that is not the queries, as in decode, stays fixed in a length sweep)."""
    fixed = shapes[fixed_keys(axis) + (["gpu_name"] if "gpu_name" in shapes else [])].astype(str)   # a device apiece
    if axis == "seq_len":
        cache = (shapes["kv_len"] != shapes["seq_len"]).fillna(True).astype(bool)
        fixed["kv_len"] = shapes["kv_len"].astype(str).where(cache, "L")
    if fixed.empty:
        return pd.Series(dtype=str)
    columns = [fixed[c] for c in fixed.columns]
    return columns[0].str.cat(columns[1:], sep="|").radd(f"{axis}|")


def sweep_members(shapes: pd.DataFrame, per=("variant",)) -> pd.DataFrame:
    """The sweeps among ``shapes`` (rows with run_id and `SHAPE`, shape keys not missing): one row per
    run and axis it is swept on: run_id, axis, x (its value, `swept`) and sweep (`sweep_key`). Runs
    of one value of the ``per`` columns (a variant) that hold the same sweep key are one sweep when
    `swept` finds them varied on that axis. The sweep key leaves ``per`` out: one sweep holds every
    variant's curve."""
    parts = [pd.DataFrame(columns=["run_id", "axis", "x", "sweep"])]
    if shapes.empty:
        return parts[0]
    for axis in AXES:
        key = sweep_key(shapes, axis)
        by = [*(shapes[k].astype(str) for k in per), key]
        # only groups with two or more values on the axis can be its sweep (most are one point)
        varied = (shapes.groupby(by, sort=False)[axis].transform("nunique") > 1).to_numpy()
        if not varied.any():
            continue
        for _, group in shapes[varied].groupby([b[varied] for b in by], sort=False):
            found, values = swept(group)
            if found == axis:
                parts.append(pd.DataFrame({"run_id": group["run_id"].to_numpy(), "axis": axis,
                                           "x": values.to_numpy(), "sweep": key[group.index].to_numpy()}))
    return pd.concat(parts, ignore_index=True).astype({"x": "int64"})


def sweep_points(store: StoreHandle, run_ids) -> pd.DataFrame:
    """One row per warm captured run with a shape and a time per call, per axis it is swept on
    (`sweep_members`: a variant with two or more values of that axis, all other shape keys and the
    device equal): run_id, variant, the shape keys, axis, x (its value), sweep (a key naming the
    sweep), metric ('tflops' or 'tbps'), value (its throughput), us_per_call (`ranking.per_call`:
    the one time of a call every ranking reads; a run recorded on the CPU: its attention call's
    CPU time) and gpu_work_us_per_iter (the metrics layer's)."""
    from profiler.analysis.findings import ranking

    shapes = queries.run_shapes(store, run_ids)
    shapes = shapes[shapes["seq_len"].notna() & ~shapes["cold"].fillna(False).astype(bool)]
    columns = ["run_id", "variant", *SHAPE, "axis", "x", "sweep", "metric", "value", "us_per_call", "timed_on",
               "gpu_work_us_per_iter"]
    if shapes.empty:
        return pd.DataFrame(columns=columns)
    ids = list(shapes["run_id"])
    busy = run_queries.run_metrics(store, ids)[["run_id", "gpu_work_us_per_iter"]]
    rows = shapes.merge(ranking.per_call(store, ids), on="run_id").merge(busy, on="run_id")
    rows["metric"] = rows["mode"].map(metric_of)
    rows["value"] = [useful_rate(shape, metric, us) for shape, metric, us in
                     zip(rows[SHAPE].to_dict("records"), rows["metric"], rows["us_per_call"])]
    rows = rows[rows["value"].notna() & (rows["value"] > 0)].reset_index(drop=True)
    out = sweep_members(rows).merge(rows, on="run_id")
    if out.empty:
        return pd.DataFrame(columns=columns)
    return out[columns].sort_values(["sweep", "variant", "x"], ignore_index=True)


def sweep_runs(store: StoreHandle, selected, every) -> list[str]:
    """The runs of ``every`` in the sweeps the ``selected`` runs can belong to: those of a selected
    run's variant, mode, batch, heads, packed lengths, dtype and causality, at any value of the
    axes. Selecting runs narrows the sweeps to their variants rather than to the few points picked."""
    picked = queries.run_shapes(store, selected)
    if picked.empty:
        return []
    keys = ["variant", *(k for k in SHAPE if k not in AXES)]
    wanted = set(picked[keys].astype(str).itertuples(index=False, name=None))
    pool = queries.run_shapes(store, every)
    return list(pool.loc[pool[keys].astype(str).apply(tuple, axis=1).isin(wanted), "run_id"])


CURVE_COLUMNS = ["sweep", "axis", "mode", "metric", "variant", "x", "median", "min", "max", "runs", "repeats",
                 "outliers", "run_id", "us_per_call", "us_min", "us_max", "gpu_work_us_per_iter"]


def sweep_curves(points: pd.DataFrame) -> pd.DataFrame:
    """Per sweep, variant and axis value: the figure of its runs (the repeats) by `repeats.figure`
    over their time per call, the rule every ranking uses (us_per_call: the median; us_min, us_max:
    the interval; repeats: used; outliers: the run ids set aside), and the throughput at those
    times (median, min: at the slowest repeat kept, max: at the fastest); runs, and the repeat
    nearest the median (`run_id`, the one a point opens). gpu_work_us_per_iter is us_per_call."""
    if points.empty:
        return pd.DataFrame(columns=CURVE_COLUMNS)
    rows = []
    for (sweep, variant, x), group in points.groupby(["sweep", "variant", "x"], sort=True):
        us = group["us_per_call"].to_numpy(dtype=float)
        fig = repeats.figure(us)
        work = float(group["value"].iloc[0] * us[0])        # the shape's work: the same for every repeat
        ids = group["run_id"].tolist()
        odd = [ids[i] for i in fig.outliers]
        kept = [(abs(u - fig.median), r) for r, u in zip(ids, us) if r not in odd]
        rows.append((sweep, group["axis"].iloc[0], group["mode"].iloc[0], group["metric"].iloc[0], variant, int(x),
                     work / fig.median, work / fig.hi, work / fig.lo, len(group), fig.n, odd, min(kept)[1],
                     fig.median, fig.lo, fig.hi, fig.median))
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def sweep_title(points: pd.DataFrame, sweep: str) -> str:
    """A sweep in words: its mode, the axis and the values it holds fixed."""
    row = points[points["sweep"] == sweep].iloc[0]
    axis = row["axis"]
    fixed = [f"{name} {int(row[k])}" for k, name in (("batch", "batch"), ("heads", "heads"), ("kv_heads", "K/V heads"),
                                                ("seq_len", "queries"), ("kv_len", "KV length"),
                                                ("head_dim", "head dim"), ("window", "window"))
             if k in fixed_keys(axis) and pd.notna(row[k]) and not (k == "window" and row[k] == 0)
             and not (k == "kv_len" and row["mode"] != "decode")]
    if row["varlen"]:
        fixed.append(f"packed {row['varlen']}")
    fixed += [str(row["dtype"]), "causal" if row["causal"] else "not causal"]
    return f"{row['mode']}: {AXIS_NAMES[axis]} sweep ({', '.join(fixed)})"


def amount(axis: str, x: int) -> str:
    """An axis value as a user says it: token counts in k from 1,024 on ('8k', '1.5k'), else the number."""
    if axis in ("seq_len", "kv_len", "window") and x >= 1024 and x % 512 == 0:
        return f"{x / 1024:g}k"
    return f"{x:,}"


def from_words(axis: str, mode: str, x: int) -> str:
    """Where a lead starts, in words: 'from a KV cache of 8k', 'from 2k tokens', 'from a window of 512'."""
    n = amount(axis, x)
    return {"seq_len": f"from {n} {'query tokens' if mode == 'decode' else 'tokens'}",
            "kv_len": f"from a KV cache of {n}", "window": f"from a window of {n}",
            "head_dim": f"from a head dim of {n}", "kv_heads": f"from {n} K/V heads"}[axis]


CROSS_COLUMNS = ["sweep", "axis", "mode", "metric", "leader", "trailer", "x_lo", "x_hi", "leader_lo", "trailer_lo",
                 "leader_hi", "trailer_hi", "ties", "margin_pct", "noise_pct", "text"]


def _figure(row) -> repeats.Figure:
    if "min" not in row or row["min"] != row["min"]:     # a curve without its repeats' spread
        return repeats.Figure(row["median"], row["median"], row["median"], 1, ())
    return repeats.Figure(row["median"], row["min"], row["max"], int(row.get("repeats", row.get("runs", 1))), ())


def leads(a: repeats.Figure, b: repeats.Figure, floor: float, min_gap: float = 0.0) -> int:
    """+1 when throughput a leads b, -1 when b leads a, 0 when tied (`repeats.tied`, or closer than
    ``min_gap``, relative)."""
    if repeats.tied(a, b, repeats.pair_noise(a, b, floor)) or repeats.difference(a, b) < min_gap:
        return 0
    return 1 if a.median > b.median else -1


def crossovers(curves: pd.DataFrame, min_gap: float = 0.0) -> pd.DataFrame:
    """Where two variants of one sweep swap the lead in throughput: between the last axis value
    where one led and the next where the other leads, ties (`leads`: the repeats' intervals overlap
    or the medians differ by less than the noise floor, the larger spread of the two) passed
    through, so a lead that changes through a tie is found. A sweep without repeats takes its noise
    floor from the other sweeps' repeats (unmeasured when none has any). Columns `CROSS_COLUMNS`: leader (ahead
    from x_hi on), trailer, the four medians, the tied values between (ties), the leader's margin
    at x_hi and the noise floor there (%), and the sentence. Given `ranked_curves`, a variant at a
    point where it runs another's kernels (``same_kernels_as``: sdpa_auto dispatching to cuDNN) is
    left out there: it is never reported as overtaking, or overtaken by, anyone."""
    rows = []
    everywhere = repeats.noise_floor(_figure(r) for r in curves.to_dict("records"))
    if "same_kernels_as" in curves:      # a variant running another's kernels is no rival there
        curves = curves[curves["same_kernels_as"].isna()]
    for sweep, part in curves.groupby("sweep", sort=False):
        axis, mode, metric = part["axis"].iloc[0], part["mode"].iloc[0], part["metric"].iloc[0]
        figs = {(r["variant"], int(r["x"])): _figure(r) for r in part.to_dict("records")}
        floor = repeats.noise_floor(figs.values())
        floor = everywhere if floor != floor else floor     # a sweep without repeats: the others' noise
        names = sorted(part["variant"].unique())
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                xs = sorted(x for v, x in figs if v == a and (b, x) in figs)
                last, ties = None, []
                for x in xs:
                    side = leads(figs[a, x], figs[b, x], floor, min_gap)
                    if side == 0:
                        ties.append(x) if last else None
                        continue
                    if last and last[0] != side:
                        rows.append(_crossing(sweep, axis, mode, metric, (a, b) if side > 0 else (b, a),
                                              last[1], x, ties, figs, floor))
                    last, ties = (side, x), []
    return pd.DataFrame(rows, columns=CROSS_COLUMNS)


def _crossing(sweep, axis, mode, metric, pair, lo, hi, ties, figs, floor) -> tuple:
    lead, trail = pair
    unit = METRICS[metric]
    lead_lo, trail_lo, lead_hi, trail_hi = (figs[lead, lo].median, figs[trail, lo].median,
                                            figs[lead, hi].median, figs[trail, hi].median)
    noise = repeats.pair_noise(figs[lead, hi], figs[trail, hi], floor)
    margin = 100 * (lead_hi / trail_hi - 1)
    further = [x for v, x in figs if v == lead and x > hi and (trail, x) in figs]
    beyond = (f"; ahead by {100 * (figs[lead, max(further)].median / figs[trail, max(further)].median - 1):.1f} % "
              f"at {amount(axis, max(further))}") if further else ""
    tied = "".join(f"; tied at {amount(axis, x)} ({figs[lead, x].median:,.2f} against {figs[trail, x].median:,.2f} "
                   f"{unit}, within the repeats' spread)" for x in ties)
    noise_words = "one run each, noise not measured" if noise != noise else f"noise floor {100 * noise:.1f} %"
    text = (f"{lead} overtakes {trail} for {mode} {from_words(axis, mode, hi)}: {lead_hi:,.2f} against "
            f"{trail_hi:,.2f} {unit} at {amount(axis, hi)} ({margin:.1f} % ahead; {noise_words}{beyond}), where "
            f"{trail} led at {amount(axis, lo)} ({trail_lo:,.2f} against {lead_lo:,.2f} {unit}){tied}.")
    return (sweep, axis, mode, metric, lead, trail, lo, hi, float(lead_lo), float(trail_lo), float(lead_hi),
            float(trail_hi), list(ties), float(margin), None if noise != noise else 100 * noise, text)
