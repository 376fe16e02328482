"""Roofline for attention: FLOPs and minimum bytes from the shape, against datasheet peaks.

For `softmax(Q K^T / sqrt(d)) V` with Q of shape (batch, heads, seq_q, head_dim) and K, V of
(batch, heads, seq_kv, head_dim):

* **FLOPs** = 2 matmuls x 2 FLOPs per multiply-add x (score elements) x head_dim, where score
  elements = batch * heads * seq_q * seq_kv, or only the lower triangle including the diagonal
  when causal (seq_q * (seq_q + 1) / 2 for a square mask). Softmax and scaling (~5 FLOPs per
  score element) are left out, as FlashAttention's own benchmarks do.
* **Minimum bytes** = read Q, K, V once and write O once: `(2 seq_q + 2 seq_kv) * batch * heads *
  head_dim * bytes per element`. A variant that materialises the score matrix moves more; the
  gap between achieved GB/s and this minimum is what the roofline shows.

Achieved TFLOP/s and GB/s divide these by the measured GPU time; the bound is
`min(peak TFLOP/s, intensity * peak GB/s)` using the device's datasheet peaks (`profiler.gpus`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from profiler import gpus, queries
from profiler.gpus import Device

BYTES_PER_ELEMENT = {"float32": 4, "fp32": 4, "float": 4, "tf32": 4, "bfloat16": 2, "bf16": 2,
                     "float16": 2, "fp16": 2, "half": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
                     "fp8": 1}
PEAK_KEY = {4: "fp32", 1: "fp8"}


class RooflineError(ValueError):
    """A shape or device the roofline cannot use; the message says which field and why."""


@dataclass(frozen=True)
class AttentionShape:
    batch: int
    heads: int
    seq_len: int
    head_dim: int
    dtype: str                 # torch dtype name without 'torch.': 'bfloat16', 'float16', 'float32'
    causal: bool
    seq_len_kv: int | None = None

    def __post_init__(self):
        for field in ("batch", "heads", "seq_len", "head_dim"):
            value = getattr(self, field)
            if not isinstance(value, int) or value <= 0:
                raise RooflineError(f"{field} must be a positive integer, got {value!r}")
        if _dtype(self.dtype) not in BYTES_PER_ELEMENT:
            raise RooflineError(f"unknown dtype {self.dtype!r}; expected one of {sorted(BYTES_PER_ELEMENT)}")


@dataclass(frozen=True)
class RooflinePoint:
    flops: int
    min_bytes: int
    intensity_flop_per_byte: float
    gpu_time_ns: int
    achieved_tflops: float
    achieved_gbps: float
    peak_tflops: float | None          # datasheet, for the dtype's precision
    peak_gbps: float | None            # datasheet
    bound_tflops: float | None         # min(peak, intensity * bandwidth)
    bound: str | None                  # 'compute' | 'memory'
    pct_of_bound: float | None         # achieved / bound * 100
    precision: str
    peak_source: str | None


def _dtype(name: str) -> str:
    return str(name).lower().removeprefix("torch.")


def precision_of(dtype: str) -> str:
    """Peak-table key for a dtype: fp32 / bf16 / fp16 / fp8."""
    name = _dtype(dtype)
    size = BYTES_PER_ELEMENT[name]
    if size == 2:
        return "bf16" if "b" in name else "fp16"
    return PEAK_KEY[size]


def score_elements(shape: AttentionShape) -> int:
    """Score-matrix entries computed; causal keeps row q's first q + 1 keys (torch SDPA's
    top-left aligned `is_causal` mask)."""
    seq_q, seq_kv = shape.seq_len, shape.seq_len_kv or shape.seq_len
    per_head = seq_q * seq_kv
    if shape.causal:
        full = min(seq_q, seq_kv)
        per_head = full * (full + 1) // 2 + (seq_q - full) * seq_kv
    return shape.batch * shape.heads * per_head


def attention_flops(shape: AttentionShape) -> int:
    """FLOPs of the two matmuls of attention (forward)."""
    return 4 * score_elements(shape) * shape.head_dim


def attention_min_bytes(shape: AttentionShape) -> int:
    """Bytes of Q, K, V read once and O written once."""
    seq_kv = shape.seq_len_kv or shape.seq_len
    elements = shape.batch * shape.heads * shape.head_dim * (2 * shape.seq_len + 2 * seq_kv)
    return elements * BYTES_PER_ELEMENT[_dtype(shape.dtype)]


def roofline_point(shape: AttentionShape, gpu_time_ns: int, device: Device | None) -> RooflinePoint:
    """Achieved throughput of one run against the device's datasheet roofline."""
    if not (gpu_time_ns is not None and gpu_time_ns > 0):  # also rejects NaN
        raise RooflineError(f"GPU time must be positive, got {gpu_time_ns!r} ns")
    flops, nbytes = attention_flops(shape), attention_min_bytes(shape)
    seconds, precision = gpu_time_ns / 1e9, precision_of(shape.dtype)
    peaks = device.peaks if device else None
    peak_tflops = peaks.tflops.get(precision) if peaks else None
    peak_gbps = peaks.memory_gbps if peaks else None
    intensity = flops / nbytes
    achieved = flops / seconds / 1e12
    bound_tflops = bound = pct = None
    if peak_tflops and peak_gbps:
        memory_roof = intensity * peak_gbps / 1e3
        bound_tflops = min(peak_tflops, memory_roof)
        bound = "compute" if peak_tflops <= memory_roof else "memory"
        pct = 100.0 * achieved / bound_tflops
    return RooflinePoint(flops, nbytes, intensity, int(gpu_time_ns), achieved, nbytes / seconds / 1e9,
                         peak_tflops, peak_gbps, bound_tflops, bound, pct, precision,
                         peaks.source if peaks else None)


def roofline_frame(runs: pd.DataFrame, device_for_run) -> pd.DataFrame:
    """One roofline row per run.

    `runs` needs columns trace_id, variant, batch, heads, seq_len, head_dim, dtype, causal,
    gpu_time_ns (GPU time of one iteration); `device_for_run(row)` returns its `Device`.
    Rows whose shape is unusable get an `error` sentence instead of numbers.
    """
    rows = []
    for run in runs.to_dict("records"):
        base = {"trace_id": run["trace_id"], "variant": run.get("variant")}
        if pd.isna(run.get("seq_len")):
            rows.append(base | {"error": f"run {run['trace_id']} has no attention shape "
                                         "(only captured runs describe themselves)"})
            continue
        try:
            shape = AttentionShape(int(run["batch"]), int(run["heads"]), int(run["seq_len"]),
                                   int(run["head_dim"]), str(run["dtype"]), bool(run["causal"]))
            rows.append(base | asdict(roofline_point(shape, run["gpu_time_ns"], device_for_run(run))))
        except (RooflineError, TypeError, ValueError) as exc:
            rows.append(base | {"error": f"run {run['trace_id']}: {exc}"})
    return pd.DataFrame(rows)


def roofline_table(store, run_ids) -> pd.DataFrame:
    """`roofline_frame` for runs in the store: shape from the run's metadata, GPU time = mean
    kernel + copy time per iteration, device from the trace's properties or the built-in table."""
    shapes = queries.run_shapes(store, run_ids)
    per_iter = queries.iteration_cpu_gpu(store, run_ids)
    gpu_ns = ((per_iter["gpu_kernel_us"] + per_iter["gpu_memop_us"]) * 1e3).groupby(per_iter["run_id"]).mean()
    runs = shapes.assign(trace_id=shapes["run_id"], gpu_time_ns=shapes["run_id"].map(gpu_ns))
    devices = queries.run_devices(store, run_ids)
    return roofline_frame(runs, lambda run: _device(devices.get(run["trace_id"])))


def _device(info) -> Device | None:
    props, gpu_name = info or (None, None)
    try:
        return gpus.resolve_device(props, 0, gpu_name)
    except ValueError:
        return gpus.builtin_device(gpu_name)


SERIES = ["batch", "heads", "head_dim", "dtype", "causal"]


def sweep_iterations(store, run_ids) -> pd.DataFrame:
    """Every iteration of the selected captured warm runs that have a shape: run_id, variant,
    batch, heads, seq_len, head_dim, dtype, causal, gpu_us_per_iter (kernels + copies) and
    cpu_us_per_iter (CPU op self time) of that iteration."""
    shapes = queries.run_shapes(store, run_ids)
    shapes = shapes[shapes["seq_len"].notna() & ~shapes["cold"].fillna(False).astype(bool)]
    per_iter = queries.iteration_cpu_gpu(store, list(shapes["run_id"]))
    per_iter = per_iter.assign(gpu_us_per_iter=per_iter["gpu_kernel_us"] + per_iter["gpu_memop_us"],
                               cpu_us_per_iter=per_iter["cpu_op_self_us"])
    return shapes.merge(per_iter[["run_id", "gpu_us_per_iter", "cpu_us_per_iter"]], on="run_id")


def sweep_table(store, run_ids) -> pd.DataFrame:
    """One row per (variant, shape) of the selected captured warm runs: variant, batch, heads,
    seq_len, head_dim, dtype, causal, runs, gpu_us_per_iter (kernels + copies) and
    cpu_us_per_iter (CPU op self time), each the mean over runs and iterations."""
    per_run = sweep_iterations(store, run_ids)
    metrics = ["gpu_us_per_iter", "cpu_us_per_iter"]
    keys = ["variant", *SERIES, "seq_len"]
    per_run = per_run.groupby(["run_id", *keys], as_index=False, dropna=False)[metrics].mean()
    out = per_run.groupby(keys, as_index=False, dropna=False).agg(
        runs=("run_id", "count"), gpu_us_per_iter=("gpu_us_per_iter", "mean"),
        cpu_us_per_iter=("cpu_us_per_iter", "mean"))
    return out.sort_values(keys, ignore_index=True)


def crossovers(sweep: pd.DataFrame, metric: str = "gpu_us_per_iter",
               min_gap: float = 0.05) -> pd.DataFrame:
    """Where two variants of the same series (all shape fields but seq_len equal) swap order
    in `metric`: variant_a, variant_b, seq_len_lo, seq_len_hi (the crossing lies between),
    faster_below, faster_above, and the metric of both at lo and hi. A swap counts only when the
    two differ by at least `min_gap` (relative) at both lengths, so ties in noise do not cross."""
    rows = []
    for _, series in sweep.groupby(SERIES, dropna=False):
        table = series.pivot_table(index="seq_len", columns="variant", values=metric)
        names = list(table.columns)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                rows += _pair_crossings(table[[a, b]].dropna(), a, b, min_gap)
    return pd.DataFrame(rows, columns=["variant_a", "variant_b", "seq_len_lo", "seq_len_hi",
                                       "faster_below", "faster_above", f"{metric}_lo_a",
                                       f"{metric}_lo_b", f"{metric}_hi_a", f"{metric}_hi_b"])


def _pair_crossings(pair: pd.DataFrame, a: str, b: str, min_gap: float) -> list[tuple]:
    lens, va, vb = list(pair.index), list(pair[a]), list(pair[b])
    clear = [abs(x - y) >= min_gap * min(x, y) for x, y in zip(va, vb)]
    out = []
    for k in range(len(lens) - 1):
        if (va[k] - vb[k]) * (va[k + 1] - vb[k + 1]) < 0 and clear[k] and clear[k + 1]:
            below, above = (a, b) if va[k] < vb[k] else (b, a)
            out.append((a, b, int(lens[k]), int(lens[k + 1]), below, above,
                        va[k], vb[k], va[k + 1], vb[k + 1]))
    return out
