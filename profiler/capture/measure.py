"""Measuring one variant outside the profiler: back-to-back timing (CUDA events, or the host
clock), CUDA-graph replay, the run's "attention_run" metadata and writing it into its trace.
"""
from __future__ import annotations

import gzip
import json
import platform
import time
from pathlib import Path

import torch

from profiler.errors import ProfilerError
from profiler.capture.config import METADATA_KEY, TOLERANCE, CaptureConfig


def attempt(thunk):
    """(value, None) or (None, a one-line reason): a failing variant never stops the capture."""
    try:
        return thunk(), None
    except ProfilerError as exc:  # our own errors already say it in one sentence
        return None, str(exc)
    except Exception as exc:  # any failure of third-party kernels, compilers or hubs becomes a skip
        lines = str(exc).strip().splitlines()
        return None, f"{type(exc).__name__}: {lines[0][:200] if lines else 'no message'}"


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def label(variant: str) -> str:
    return f"attention:{variant}"


def time_calls(fn, inputs, device: str, calls: int) -> tuple[float, object]:
    """Microseconds per call over ``calls`` back-to-back calls: CUDA events around them all on
    cuda (one synchronize at the end), the host clock on cpu. Returns the last output too."""
    if device != "cuda":
        started = time.perf_counter()
        for _ in range(calls):
            out = fn(*inputs)
        return (time.perf_counter() - started) * 1e6 / calls, out
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        out = fn(*inputs)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / calls, out


def graph_time(fn, inputs, device: str, calls: int) -> tuple[float | None, str | None]:
    """(µs per replay of a CUDA graph of one call, None) or (None, why the variant has none)."""
    if device != "cuda":
        return None, "CUDA graphs need a CUDA GPU"
    graph = None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(*inputs)
        graph.replay()
        us, _ = time_calls(lambda: graph.replay(), (), device, calls)
        return us, None
    except Exception as exc:  # a variant that syncs, allocates on the host or recompiles cannot be captured
        lines = str(exc).strip().splitlines()
        return None, f"cannot be captured in a CUDA graph ({type(exc).__name__}: {lines[0][:160] if lines else ''})"
    finally:
        graph = None  # the graph's memory goes before the cache is emptied
        torch.cuda.synchronize()
        clear_cublas_workspaces()  # the side stream got a cuBLAS workspace of its own
        torch.cuda.empty_cache()


def clear_cublas_workspaces() -> None:
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        torch._C._cuda_clearCublasWorkspaces()


def _device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    return f"CPU {platform.processor() or platform.machine()}"


def run_meta(config: CaptureConfig, variant: str, seq_len: int, cold: bool, numbers: dict) -> dict:
    """The "attention_run" object: what ran, where, with which versions, and what it measured.

    ``wall_us_per_call`` / ``wall_calls`` / ``wall_clock``: see the module docstring (a cold run
    times its one call). ``graph_us_per_call`` / ``graph_calls`` / ``graph_note``: CUDA-graph
    replay. ``rel_error`` against the fp32 reference (checked after the profiled cycle), ``ok``
    when within ``tolerance`` (a train step: the largest of the output's and the gradients' errors,
    each gradient's in ``grad_rel_error``). ``mode`` (prefill, decode, train), ``kv_heads``,
    ``kv_len`` (keys per sequence), ``window`` and ``varlen`` (packed lengths, or None) say the
    shape beyond batch, heads, seq_len (the query length) and head_dim. ``repeat`` of ``repeats`` for warm runs. ``process``: the process's
    ``pid``, whether it was ``fresh`` (started for this variant), and its ``caches`` (path, and
    whether it held files at the start). ``ran_before``: variants already run at this shape in
    this process (caches they warmed).
    """
    cudnn = torch.backends.cudnn.version() if config.device == "cuda" else None
    schedule = ({"wait": 0, "warmup": 0, "active": 1} if cold else
                {"wait": config.wait, "warmup": config.warmup, "active": config.active})
    error = numbers.get("rel_error")
    tolerance = TOLERANCE[config.dtype]
    return {
        "variant": variant, "batch": config.batch, "heads": config.heads, "seq_len": seq_len,
        "head_dim": config.head_dim, "dtype": config.dtype, "causal": config.causal, "cold": cold,
        "device": config.device, "device_name": _device_name(config.device),
        "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
        "cudnn_version": str(cudnn) if cudnn else None, "label": label(variant), "schedule": schedule,
        "warmup_calls": 0 if cold else config.warmup_calls, "warmup_s": 0 if cold else config.warmup_s, "profile_memory": True, "record_shapes": True,
        "wall_clock": "cuda events" if config.device == "cuda" else "host clock",
        **numbers, "tolerance": tolerance, "ok": error is not None and error <= tolerance,
        "sweep": config.sweep, "repeats": 0 if cold else config.repeats,
        "mode": config.mode, "kv_heads": config.n_kv_heads, "kv_len": config.kv_len_of(seq_len),
        "window": config.window, "varlen": list(config.varlen) if config.varlen is not None else None,
    }


def write_meta(path: Path, meta: dict) -> None:
    """Put ``meta`` at the top level of the gzip trace at ``path`` (as ``"attention_run"``)."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    doc[METADATA_KEY] = meta
    with gzip.open(path, "wt", compresslevel=9) as f:
        json.dump(doc, f, separators=(",", ":"))


