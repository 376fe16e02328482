"""Roofline of each run from the op-level cost model (the sweeps read its throughput: `sweeps`).

`roofline_table(store, run_ids)` sums one iteration of each run from `profiler.analysis.reads.op_costs`: the FLOPs
and the bytes every modelled op call moves (read from the trace's recorded shapes, so a variant
that writes and re-reads a score matrix moves far more bytes than one that reads Q, K, V and
writes O once), over the kernel time of those calls. Its point sits at that arithmetic
intensity, under the roof of the engine doing most of its FLOPs: min(engine's datasheet peak
for the precision, intensity x memory bandwidth). `ceilings(...)` gives the lines to draw: the
memory slope and one flat ceiling per engine, named as on the GPU's vendor (bf16 tensor core and
fp32 CUDA core on NVIDIA, bf16 matrix core and fp32 vector ALU on AMD), of the SKU the trace ran
on (`profiler.analysis.model.skus`); and, for a GPU whose ceilings were measured (profiler/capture/
ceilings.py), the measured GEMM ceiling of the run's precision over the measured memory slope
(`rating.against_measured` adds each run's share of them).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from profiler.analysis.reads import kept, kernel_queries, op_costs, op_pricing, run_queries
from profiler.analysis.model import rating, tensor_cores
from profiler.storage import ceilings as measured_ceilings
from profiler.storage.session import StoreHandle

CEILINGS = (("matrix", "bf16"), ("vector", "fp32"))   # one line each on the chart, per vendor's names


def run_totals(calls: pd.DataFrame, iterations: pd.DataFrame) -> pd.DataFrame:
    """Per run, from `op_costs.op_calls` rows inside an iteration: iterations, flops_per_iter,
    bytes_per_iter, kernel_us_per_iter, the dominant engine and dtype (most FLOPs; most bytes when
    no FLOPs), calls, shape_source."""
    calls = calls[calls["iteration"].notna()]
    count = iterations.groupby("run_id")["iteration"].nunique()
    work = calls.groupby(["run_id", "engine", "dtype"], dropna=False)[["flops", "bytes"]].sum()
    main = work.sort_values(["flops", "bytes"], ascending=False).reset_index().drop_duplicates("run_id")
    sums = calls.groupby("run_id").agg(flops=("flops", "sum"), bytes=("bytes", "sum"),
                                       kernel_ns=("kernel_ns", "sum"), calls=("op", "size"),
                                       shape_source=("shape_source", "first"))
    n = count.reindex(sums.index).fillna(1)
    out = pd.DataFrame({"iterations": n, "flops_per_iter": sums["flops"] / n,
                        "bytes_per_iter": sums["bytes"] / n, "kernel_us_per_iter": sums["kernel_ns"] / n / 1e3,
                        "calls_per_iter": sums["calls"] / n, "shape_source": sums["shape_source"]})
    return out.join(main.set_index("run_id")[["engine", "dtype"]]).reset_index()


def roofline_table(store: StoreHandle, run_ids) -> pd.DataFrame:
    """One row per run with modelled ops: run_totals' columns plus rating.rate's (tflops, tbps,
    intensity, peak_tflops, peak_tbps, ridge, roof_tflops, bound, pct_of_peak, pct_of_roof).
    Kept per run (profiler/analysis/reads/kept.py)."""
    return kept.per_run(store, "roofline_table", run_ids, lambda ids: _roofline_table(store, ids), "run_id")


def _roofline_table(store, run_ids) -> pd.DataFrame:
    run_ids = list(run_ids)
    totals = run_totals(op_costs.op_calls(store, run_ids), run_queries.run_iterations(store, run_ids))
    if totals.empty:
        return totals
    frame = totals.rename(columns={"flops_per_iter": "flops", "bytes_per_iter": "bytes"})
    found = kernel_queries.run_devices(store, run_ids)
    devices = {r: op_pricing.device_of(i) for r, i in found.items()}
    rated = rating.rate(frame, frame["kernel_us_per_iter"] / 1e6, devices)
    rated["gpu_name"] = [_sku_name(devices.get(r)) for r in rated["run_id"]]
    measured = measured_ceilings.latest(store)
    rated = rating.against_measured(rated, {r: measured.get((info or (None, None))[1]) for r, info in found.items()})
    return rated.rename(columns={"flops": "flops_per_iter", "bytes": "bytes_per_iter"})


def _sku_name(device) -> str | None:
    """The datasheet entry a device was identified as, else its own name."""
    return getattr(device, "sku_name", None) or getattr(device, "name", None)


def ceilings(roof: pd.DataFrame, lo: float = 0.01, hi: float = 10_000.0) -> pd.DataFrame:
    """The roof lines of each GPU in `roof` (a `roofline_table`): gpu_name, ceiling ('bf16 tensor
    core', 'fp32 CUDA core'; on AMD 'bf16 matrix core', 'fp32 vector ALU'), intensity, tflops =
    min(peak, intensity x bandwidth), sampled on a log grid from `lo` to `hi` FLOP/byte with the
    ridge point itself included."""
    from profiler.analysis.model import gpus
    rows = []
    for name in roof["gpu_name"].dropna().unique():
        device = gpus.builtin_device(name)
        if device is None or device.peaks is None:
            continue
        tbps = device.peaks.memory_gbps / 1e3
        matrix, vector = tensor_cores.engines_of(device.vendor)
        for unit, precision in CEILINGS:
            engine = matrix if unit == "matrix" else vector
            peak = device.peaks.peak_tflops(engine, precision)
            if peak is None:
                continue
            grid = np.unique(np.append(np.geomspace(lo, hi, 40), peak / tbps))
            rows += [(name, f"{precision} {engine}", x, min(peak, x * tbps)) for x in grid]
    rows += _measured_lines(roof, lo, hi)
    return pd.DataFrame(rows, columns=["gpu_name", "ceiling", "intensity", "tflops"])


def _measured_lines(roof: pd.DataFrame, lo: float, hi: float) -> list[tuple]:
    """One line per GPU and precision measured (`rating.against_measured`'s columns): min(measured
    GEMM TFLOP/s, intensity x measured TB/s), named 'measured bf16 GEMM'."""
    if "measured_tflops" not in roof:
        return []
    rows = []
    known = roof.dropna(subset=["measured_tflops", "measured_tbps"]).drop_duplicates(["gpu_name", "dtype"])
    for name, dtype, peak, tbps in known[["gpu_name", "dtype", "measured_tflops", "measured_tbps"]].itertuples(index=False):
        grid = np.unique(np.append(np.geomspace(lo, hi, 40), peak / tbps))
        rows += [(name, f"measured {dtype} GEMM", x, min(peak, x * tbps)) for x in grid]
    return rows
