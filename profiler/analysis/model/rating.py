"""Achieved throughput against the datasheet: the one definition of every "% of peak".

`rated(...)` turns FLOPs, bytes and seconds into TFLOP/s, TB/s, intensity, the engine's peak
for the precision on the identified SKU (`profiler.analysis.model.skus`), the ridge point, bound and
the shares of peak, bandwidth and roof. Every page, finding and CLI output reads these columns.

A share above 100 % is impossible: the model (FLOPs or bytes counted for the op) or the peak
(the SKU) is wrong. Such a share is never shown (NaN), and `suspect` says which is suspect:
the **peak** when the SKU was not identified exactly (the name alone fits several SKUs), else the
**model** (the FLOPs or the bytes the op is charged; bytes of a small op can also come from the
L2 cache, not HBM, which the model does not see).

`against_measured(...)` adds the shares of what the GPU was *measured* to sustain (its GEMM
TFLOP/s at the precision and its HBM TB/s, profiler/capture/ceilings.py, kept per GPU and
software stack in the store): every rate is shown as % of the datasheet and % of the measured
ceiling. A share of a measured ceiling above 100 % is NaN too: the run beat what the GPU was
measured to do, so the measurement (or the model) is in doubt.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from profiler.analysis.model import arrays

if TYPE_CHECKING:
    import pandas as pd


def _peak(device, engine, dtype) -> tuple[float | None, float | None, str | None, bool]:
    """(peak TFLOP/s of the engine at the dtype, bandwidth TB/s, the datasheet and SKU, whether
    the SKU is exact) of a device."""
    peaks = getattr(device, "peaks", None)
    if peaks is None:
        return None, None, None, False
    source = f"{peaks.source}; {device.sku}" if getattr(device, "sku", None) else peaks.source
    return (peaks.peak_tflops(engine, dtype if isinstance(dtype, str) else None), peaks.memory_gbps / 1e3,
            source, bool(getattr(device, "sku_exact", False)))


# FLOP per byte under which an op is memory-bound on every GPU, even where the engine's compute peak
# for its precision is not known (every ridge point, fp64 CUDA cores included, lies above it)
PLAINLY_MEMORY = 1.0


def share(achieved, peak):
    """100 x achieved / peak, NaN where that is above 100 % (impossible: see `suspect`) or
    where there is no peak; arrays or scalars."""
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = 100 * np.asarray(achieved, dtype=float) / np.asarray(peak, dtype=float)
    out = np.where(pct > 100, np.nan, pct)
    return out if out.ndim else float(out)


def suspect(over_compute: bool, over_bandwidth: bool, exact_sku: bool) -> str | None:
    """Which figure a share above 100 % puts in doubt (None when no share is above 100 %)."""
    if not (over_compute or over_bandwidth):
        return None
    what = " and ".join(w for w, over in (("TFLOP/s", over_compute), ("TB/s", over_bandwidth)) if over)
    if not exact_sku:
        return f"peak: {what} above 100 % of a peak whose SKU the trace does not pin down"
    counted = " and ".join(w for w, over in (("FLOPs", over_compute), ("bytes", over_bandwidth)) if over)
    text = f"model: {what} above 100 % of the identified SKU's peak: the {counted} counted for the op are too many"
    if over_bandwidth:   # bytes the model counts as memory traffic may have been cache hits
        text += ", or part of the bytes were served from cache (L2), not from memory"
    return text


def rated(run_id, engine, dtype, flops, nbytes, seconds, device_of: dict) -> dict:
    """Achieved TFLOP/s and TB/s over `seconds`, intensity, the engine's datasheet peak for the
    precision, the ridge point, bound, % of peak, bandwidth and roof (NaN above 100 %, with
    `suspect` saying why), as columns (one row per item of the arguments); `device_of` maps
    run_id to its `Device` (or None)."""
    keys = list(zip(run_id, engine, dtype))
    looked = {k: _peak(device_of.get(k[0]), k[1], k[2]) for k in set(keys)}   # a few distinct keys
    peak, bandwidth, source, exact = ([looked[k][i] for k in keys] for i in range(4))
    flops, nbytes, seconds = np.asarray(flops), np.asarray(nbytes), np.asarray(seconds, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        tflops, tbps = flops / seconds / 1e12, nbytes / seconds / 1e12
        intensity = flops / np.where(nbytes > 0, nbytes, np.nan)
        peak_tflops, peak_tbps = np.array(peak, dtype=float), np.array(bandwidth, dtype=float)
        ridge = peak_tflops / peak_tbps                                        # FLOP/byte
        roof = np.minimum(peak_tflops, intensity * peak_tbps)
        pct_peak, pct_bw = 100 * tflops / peak_tflops, 100 * tbps / peak_tbps
    over_c, over_b = pct_peak > 100, pct_bw > 100     # np.nan > 100 is False
    why = arrays.objects([suspect(c, b, e) for c, b, e in zip(over_c.tolist(), over_b.tolist(), exact)])
    return {"tflops": tflops, "tbps": tbps, "intensity": intensity, "peak_tflops": peak_tflops,
            "peak_tbps": peak_tbps, "ridge": ridge, "roof_tflops": roof,
            "bound": np.where(np.isnan(ridge), np.where(intensity < PLAINLY_MEMORY, "memory", None),
                              np.where(intensity < ridge, "memory", "compute")),
            "pct_of_peak": share(tflops, peak_tflops), "pct_of_bandwidth": share(tbps, peak_tbps),
            "pct_of_roof": share(tflops, roof), "peak_source": arrays.objects(source),
            "suspect": why}


def rate(frame: pd.DataFrame, seconds: pd.Series, device_of: dict) -> pd.DataFrame:
    """`rated` on a DataFrame: `frame` needs run_id, flops, bytes, engine, dtype; its columns plus
    tflops, tbps, intensity, peak_tflops, peak_tbps, ridge, roof_tflops, bound, pct_of_peak,
    pct_of_bandwidth, pct_of_roof, peak_source, suspect."""
    return frame.assign(**rated(*(frame[c].to_numpy(object) for c in ("run_id", "engine", "dtype")),
                                frame["flops"].to_numpy(), frame["bytes"].to_numpy(), seconds.to_numpy(), device_of))


# ── against what the GPU was measured to sustain ─────────────────────────────────────────────
MEASURED_COLUMNS = ("measured_tflops", "measured_tbps", "pct_of_measured_peak", "pct_of_measured_bandwidth",
                    "measured_stack")


def measured_peak(entry: dict | None, engine, dtype) -> float | None:
    """The measured GEMM TFLOP/s for a matrix engine at ``dtype`` (a `storage.ceilings.latest`
    entry); None for other engines, other precisions, or a GPU never measured."""
    from profiler.analysis.model.tensor_cores import MATRIX_ENGINES

    if not entry or engine not in MATRIX_ENGINES or not isinstance(dtype, str):
        return None
    return entry.get(f"gemm_{dtype}")


def pct_of_measured_roof(bound, pct_of_measured_peak, pct_of_measured_bandwidth):
    """The share of the measured roof a run reaches: of the measured bandwidth where memory bounds
    it (``bound`` 'memory'), else of the measured GEMM peak; NaN where that GPU was never measured."""
    memory = np.array([b == "memory" for b in bound], dtype=bool)
    return np.where(memory, np.asarray(pct_of_measured_bandwidth, dtype=float), np.asarray(pct_of_measured_peak, dtype=float))


def against_measured(frame: pd.DataFrame, measured_of: dict) -> pd.DataFrame:
    """``frame`` (run_id, engine, dtype, tflops, tbps: a rated frame) with MEASURED_COLUMNS: the
    GPU's measured ceilings (``measured_of``: run_id -> `storage.ceilings.latest` entry) and the
    shares of them, NaN where unmeasured; a share above 100 % is kept NaN like `share`'s."""
    entries = [measured_of.get(r) for r in frame["run_id"]]
    peak = np.array([measured_peak(e, g, d) for e, g, d in zip(entries, frame["engine"], frame["dtype"])], dtype=float)
    tbps = np.array([(e or {}).get("memory") for e in entries], dtype=float)
    return frame.assign(measured_tflops=peak, measured_tbps=tbps,
                        pct_of_measured_peak=share(frame["tflops"].to_numpy(dtype=float), peak),
                        pct_of_measured_bandwidth=share(frame["tbps"].to_numpy(dtype=float), tbps),
                        measured_stack=arrays.objects([(e or {}).get("stack") for e in entries]))
