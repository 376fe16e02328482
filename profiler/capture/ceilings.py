"""What this GPU really sustains, measured: GEMM TFLOP/s per precision and HBM TB/s.

A datasheet peak (989 TFLOP/s bf16, 4.8 TB/s on an H100/H200) is what no kernel reaches; MFU in
attention papers is quoted against what the GPU sustains. `measure(device)` times:

* **GEMM** (`torch.matmul`, cuBLAS) in bf16 and fp16, and fp8 (`torch._scaled_mm`, e4m3) where the
  GPU has it (compute capability 8.9+), over a sweep of large shapes (`GEMM_SHAPES`); each shape's
  value is the median of `REPEATS` timed loops (CUDA events), the precision's ceiling the best
  shape; 2·M·N·K FLOPs per call. *Sustained*: on the GPU each point first runs for `WARM_S`
  seconds, so the clocks have settled to what the power limit allows (a burst of a few
  milliseconds runs at boost clocks: an fp8 GEMM on an H200 measured 1,455 TFLOP/s that way and
  1,344 a minute later), and each timed loop lasts at least `LOOP_S`.
* **HBM** bandwidth of a read (a sum over a tensor far larger than L2: its bytes once) and of a
  copy (`copy_`: its bytes read and written), the larger of the two as the memory ceiling.

Every value keeps its spread (worst and best loop) in `detail`, so a second measurement can be
checked against it (reproducible within 3 % is the target). On the CPU the same code runs at the
sizes it is given (tests pass tiny ones): the result says `device: "cpu"` and is never stored or
shown as a GPU's ceiling (profiler/storage/ceilings.py refuses it).

    python -m profiler.capture.ceilings [--device cuda] [--json] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

import torch

GEMM_SHAPES = ((8192, 8192, 8192), (4096, 8192, 16384), (16384, 16384, 4096), (6144, 6144, 12288))
HBM_BYTES = 4 * 2**30        # per tensor: far beyond any L2 (50-60 MB on Hopper)
CALLS, REPEATS, WARMUP = 10, 5, 3   # calls per timed loop (at least), loops, warm-up calls (at least)
WARM_S, LOOP_S = 1.0, 0.05           # on the GPU: seconds of warm-up per point, of each timed loop (at least)


@dataclass(frozen=True)
class Ceiling:
    what: str      # 'gemm_bf16' | 'gemm_fp16' | 'gemm_fp8' | 'hbm_read' | 'hbm_copy'
    value: float   # TFLOP/s or TB/s: the best point's median loop
    unit: str      # 'TFLOP/s' | 'TB/s'
    detail: dict   # {"shapes" or "bytes": ..., "per_point": [{point, best, worst}], ...}


@dataclass(frozen=True)
class Measured:
    device: str                   # 'cuda' | 'cpu'
    gpu_name: str                 # torch's device name; 'CPU …' on the CPU
    stack: str                    # driver, torch, CUDA, cuDNN: what the numbers hold for
    ceilings: tuple[Ceiling, ...]
    skipped: dict = field(default_factory=dict)   # what -> why it was not measured
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)


def stack(device: str) -> str:
    """The software the numbers hold for: driver (NVML, when present), torch, CUDA, cuDNN."""
    from profiler.capture import nvml

    if device != "cuda":
        return f"torch {torch.__version__}; CPU {platform.machine()}"
    cudnn = torch.backends.cudnn.version()
    return (f"driver {nvml.driver_version() or 'unknown'}; torch {torch.__version__}; CUDA {torch.version.cuda}; "
            f"cuDNN {cudnn or 'none'}")


def identity(device: str) -> tuple[str, str]:
    """(the device's name as torch gives it, its software stack): what ceilings are kept under."""
    name = torch.cuda.get_device_name() if device == "cuda" else f"CPU {platform.processor() or platform.machine()}"
    return name, stack(device)


def _timed(fn, device: str, calls: int, repeats: int) -> tuple[float, float, float]:
    """(median, best, worst) seconds per call over ``repeats`` loops, after a warm-up. On the GPU the
    warm-up lasts `WARM_S` and a loop at least `LOOP_S` (more calls than ``calls`` when they are short)."""
    if device == "cuda":
        calls = _warm(fn, calls)
    else:
        for _ in range(WARMUP):
            fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / calls)
        else:
            started = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - started) / calls)
    return statistics.median(times), min(times), max(times)


def _warm(fn, calls: int) -> int:
    """Run ``fn`` on the GPU for `WARM_S` seconds; the calls one timed loop needs to last `LOOP_S`."""
    done, started = 0, time.perf_counter()
    while done < WARMUP or time.perf_counter() - started < WARM_S:
        for _ in range(WARMUP):
            fn()
        torch.cuda.synchronize()
        done += WARMUP
    per_call = (time.perf_counter() - started) / done
    return max(calls, math.ceil(LOOP_S / per_call))


def _gemm_fn(dtype: str, m: int, n: int, k: int, device: str):
    if dtype == "fp8":
        a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()   # column-major, as _scaled_mm wants
        one = torch.ones((), device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
    a, b = torch.randn(m, k, device=device, dtype=torch_dtype), torch.randn(k, n, device=device, dtype=torch_dtype)
    return lambda: torch.matmul(a, b)


def gemm(dtype: str, shapes, device: str, calls: int = CALLS, repeats: int = REPEATS) -> Ceiling:
    points = []
    for m, n, k in shapes:
        median, best, worst = _timed(_gemm_fn(dtype, m, n, k, device), device, calls, repeats)
        flops = 2.0 * m * n * k
        points.append({"shape": [m, n, k], "median": flops / median / 1e12, "best": flops / best / 1e12,
                       "worst": flops / worst / 1e12})
        _free(device)
    top = max(points, key=lambda p: p["median"])
    return Ceiling(f"gemm_{dtype}", top["median"], "TFLOP/s", {"per_point": points, "calls": calls, "repeats": repeats})


def hbm(kind: str, nbytes: int, device: str, calls: int = CALLS, repeats: int = REPEATS) -> Ceiling:
    """'read': a sum over ``nbytes`` (moved once); 'copy': ``nbytes`` copied (read and written)."""
    src = torch.ones(nbytes // 4, device=device, dtype=torch.float32)
    if kind == "read":
        fn, moved = (lambda: src.sum()), nbytes
    else:
        dst = torch.empty_like(src)
        fn, moved = (lambda: dst.copy_(src)), 2 * nbytes
    median, best, worst = _timed(fn, device, calls, repeats)
    point = {"bytes": nbytes, "moved": moved, "median": moved / median / 1e12, "best": moved / best / 1e12,
             "worst": moved / worst / 1e12}
    return Ceiling(f"hbm_{kind}", point["median"], "TB/s", {"per_point": [point], "calls": calls, "repeats": repeats})


def fp8_why_not(device: str) -> str | None:
    if device != "cuda":
        return "fp8 GEMMs need a CUDA GPU"
    if torch.cuda.get_device_capability() < (8, 9) or not hasattr(torch, "_scaled_mm"):
        return "this GPU (or torch) has no fp8 GEMM (compute capability 8.9+ and torch._scaled_mm)"
    return None


def measure(device: str = "cuda", shapes=GEMM_SHAPES, hbm_bytes: int = HBM_BYTES,
            dtypes=("bf16", "fp16", "fp8"), calls: int = CALLS, repeats: int = REPEATS) -> Measured:
    """Every ceiling on ``device``; a precision that cannot run is listed in ``skipped`` with why."""
    started = time.perf_counter()
    found, skipped = [], {}
    for dtype in dtypes:
        reason = fp8_why_not(device) if dtype == "fp8" else None
        if device == "cpu" and dtype != "fp8":
            reason = None
        if reason:
            skipped[f"gemm_{dtype}"] = reason
            continue
        try:
            found.append(gemm(dtype, shapes, device, calls, repeats))
        except (RuntimeError, TypeError) as exc:   # a precision cuBLAS or the CPU build lacks
            skipped[f"gemm_{dtype}"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    for kind in ("read", "copy"):
        found.append(hbm(kind, hbm_bytes, device, calls, repeats))
        _free(device)
    name, software = identity(device)
    return Measured(device, name, software, tuple(found), skipped, time.perf_counter() - started)


def memory_ceiling(measured: Measured) -> float | None:
    """The memory ceiling: the larger of the read and the copy bandwidth (TB/s)."""
    values = [c.value for c in measured.ceilings if c.what in ("hbm_read", "hbm_copy")]
    return max(values) if values else None


def _free(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m profiler.capture.ceilings")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", default=None, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    small = args.device == "cpu"
    got = measure(args.device, ((256, 256, 256),) if small else GEMM_SHAPES, 2**24 if small else HBM_BYTES)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(got.to_json(), f, indent=2)
    if args.json:
        print(json.dumps(got.to_json(), indent=2))
    else:
        for c in got.ceilings:
            print(f"{c.what:10s} {c.value:10.2f} {c.unit}  ({got.gpu_name}; {got.stack})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
