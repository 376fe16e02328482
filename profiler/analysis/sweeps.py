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
* `sweep_curves(points)`: per sweep, variant and axis value, the median, min and max over the
  repeats, and the run nearest the median (the one a point opens).
* `crossovers(curves)`: where two variants of one sweep swap the lead, with the sentence a user
  reads ("flex_decode overtakes sdpa_flash for decode from a KV cache of 8k").
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis import queries, roofline, run_shape

AXES = ("seq_len", "kv_len", "window", "head_dim", "kv_heads")
SHAPE = [k for k in queries.SHAPE_KEYS if k != "variant"]   # what a sweep holds fixed, but its axis
AXIS_NAMES = {"seq_len": "sequence length", "kv_len": "KV cache length", "window": "window",
              "head_dim": "head dim", "kv_heads": "K/V heads"}
METRICS = {"tflops": "TFLOP/s", "tbps": "TB/s"}
MIN_GAP = 0.05   # two medians this close (relative) do not lead each other: noise, not a crossover


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
    fixed = shapes[fixed_keys(axis)].astype(str)
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


def sweep_points(store, run_ids) -> pd.DataFrame:
    """One row per warm captured run with a shape and a rated throughput, per axis it is swept on
    (`sweep_members`: a variant with two or more values of that axis, all other shape keys equal):
    run_id, variant, the shape keys, axis, x (its value), sweep (a key naming the sweep), metric
    ('tflops' or 'tbps'), value and gpu_work_us_per_iter (the metrics layer's, for the table)."""
    shapes = queries.run_shapes(store, run_ids)
    shapes = shapes[shapes["seq_len"].notna() & ~shapes["cold"].fillna(False).astype(bool)]
    columns = ["run_id", "variant", *SHAPE, "axis", "x", "sweep", "metric", "value", "gpu_work_us_per_iter"]
    if shapes.empty:
        return pd.DataFrame(columns=columns)
    ids = list(shapes["run_id"])
    rated = roofline.roofline_table(store, ids)
    if rated.empty:
        return pd.DataFrame(columns=columns)
    busy = queries.run_metrics(store, ids)[["run_id", "gpu_work_us_per_iter"]]
    rows = shapes.merge(rated[["run_id", "kernel_us_per_iter"]], on="run_id").merge(busy, on="run_id")
    rows["metric"] = rows["mode"].map(metric_of)
    # a call's time: the GPU work one iteration launched (metrics layer); a run recorded on the
    # CPU has none, and its priced ops' own time stands for it (as in the roofline)
    gpu = rows["gpu_work_us_per_iter"].where(rows["gpu_work_us_per_iter"] > 0)
    rows["value"] = [useful_rate(shape, metric, us) for shape, metric, us in
                     zip(rows[SHAPE].to_dict("records"), rows["metric"], gpu.fillna(rows["kernel_us_per_iter"]))]
    rows = rows[rows["value"].notna() & (rows["value"] > 0)].reset_index(drop=True)
    out = sweep_members(rows).merge(rows, on="run_id")
    if out.empty:
        return pd.DataFrame(columns=columns)
    return out[columns].sort_values(["sweep", "variant", "x"], ignore_index=True)


def sweep_runs(store, selected, every) -> list[str]:
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


def sweep_curves(points: pd.DataFrame) -> pd.DataFrame:
    """Per sweep, variant and axis value: the median, min and max throughput over its runs (the
    repeats), runs, the run whose value is nearest the median (`run_id`), the median GPU busy µs
    per iteration, and the sweep's axis, mode and metric."""
    columns = ["sweep", "axis", "mode", "metric", "variant", "x", "median", "min", "max", "runs",
               "run_id", "gpu_work_us_per_iter"]
    if points.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (sweep, variant, x), group in points.groupby(["sweep", "variant", "x"], sort=True):
        median = float(group["value"].median())
        nearest = group.iloc[(group["value"] - median).abs().argmin()]
        rows.append((sweep, group["axis"].iloc[0], group["mode"].iloc[0], group["metric"].iloc[0],
                     variant, int(x), median, float(group["value"].min()), float(group["value"].max()),
                     len(group), nearest["run_id"], float(group["gpu_work_us_per_iter"].median())))
    return pd.DataFrame(rows, columns=columns)


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


def crossovers(curves: pd.DataFrame, min_gap: float = MIN_GAP) -> pd.DataFrame:
    """Where two variants of one sweep swap the lead in median throughput between two consecutive
    axis values both ran at (each at least `min_gap` apart, relative, so ties in noise do not
    cross): sweep, axis, mode, metric, leader (ahead from x_hi on), trailer, x_lo, x_hi, the four
    medians (leader_lo, trailer_lo, leader_hi, trailer_hi) and the sentence."""
    columns = ["sweep", "axis", "mode", "metric", "leader", "trailer", "x_lo", "x_hi",
               "leader_lo", "trailer_lo", "leader_hi", "trailer_hi", "text"]
    rows = []
    for sweep, part in curves.groupby("sweep", sort=False):
        axis, mode, metric = part["axis"].iloc[0], part["mode"].iloc[0], part["metric"].iloc[0]
        table = part.pivot_table(index="x", columns="variant", values="median")
        names = sorted(table.columns)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                pair = table[[a, b]].dropna()
                for k in range(len(pair) - 1):
                    (va, vb), (wa, wb) = pair.iloc[k], pair.iloc[k + 1]
                    clear = abs(va - vb) >= min_gap * min(va, vb) and abs(wa - wb) >= min_gap * min(wa, wb)
                    if not clear or (va - vb) * (wa - wb) >= 0:
                        continue
                    lead, trail = (a, b) if wa > wb else (b, a)
                    lo, hi = int(pair.index[k]), int(pair.index[k + 1])
                    lead_lo, trail_lo = pair.iloc[k][lead], pair.iloc[k][trail]
                    lead_hi, trail_hi = pair.iloc[k + 1][lead], pair.iloc[k + 1][trail]
                    unit = METRICS[metric]
                    text = (f"{lead} overtakes {trail} for {mode} {from_words(axis, mode, hi)}: "
                            f"{lead_hi:,.2f} against {trail_hi:,.2f} {unit} at {amount(axis, hi)}, where "
                            f"{trail} led at {amount(axis, lo)} ({trail_lo:,.2f} against {lead_lo:,.2f} {unit}).")
                    rows.append((sweep, axis, mode, metric, lead, trail, lo, hi, float(lead_lo),
                                 float(trail_lo), float(lead_hi), float(trail_hi), text))
    return pd.DataFrame(rows, columns=columns)
