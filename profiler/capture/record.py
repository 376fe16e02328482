"""How a captured run was measured: the record written into its "attention_run" object as "record".

`build(config, gpu)` gathers, beside the GPU's clocks, power, temperature and throttle reasons
sampled while the run was profiled and timed (`gpu`: a `nvml.Sampler` summary), the software
versions (driver, torch, CUDA, cuDNN, Python, the kernel packages), whether L2 was flushed (a cold
run's, by `flush_l2`: see `L2`), the clock control, and the other compute processes on the GPU. The trace's timing
self-check (kernel time in the trace against the event-timed loop and the graph replay) is computed
from the stored run (profiler/analysis/findings/conditions.py), not here. On the CPU the record says that
no GPU was sampled.
"""
from __future__ import annotations

import platform
from importlib import metadata

import torch

from profiler.capture import nvml

PACKAGES = ("flashinfer-python", "flash-attn-4", "triton", "nvidia-cutlass-dsl", "kernels")
L2 = ("a warm run's calls find in L2 whatever the call before left there (inputs smaller than L2 stay "
      "resident: not flushed); a cold run is the first call of a fresh process, after a write of twice L2's "
      "size evicted its inputs (flushed; not with --no-flush-l2), and with --counters its first kernel is "
      "checked under ncu (\"l2_check\": missed L2 or not, profiler/capture/l2check.py)")


def versions(device: str) -> dict:
    cudnn = torch.backends.cudnn.version() if device == "cuda" else None
    found = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": str(cudnn) if cudnn else None,
             "driver": nvml.driver_version() if device == "cuda" else None, "python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def build(device: str, gpu: dict | None, l2_flushed: bool = False) -> dict:
    """The run's measurement record (see the module docstring)."""
    if device != "cuda":
        gpu = {"source": None, "samples": 0, "note": "a CPU run: no GPU clocks, power or temperature to record"}
    return {"gpu": gpu, "versions": versions(device), "l2_flushed": l2_flushed, "l2": L2,
            "clock_control": "none: the clocks the driver chose (not locked by the capture)",
            "other_processes": nvml.other_processes(torch.cuda.current_device()) if device == "cuda" else []}


def flush_l2(device: str) -> bool:
    """Evict L2 before a cold call: write a buffer twice L2's size, so the inputs made just before
    are no longer resident and the first kernel reads them from DRAM (checked: l2check.py).
    True when flushed (on the GPU), False on the CPU."""
    if device != "cuda":
        return False
    size = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    scratch = torch.empty(2 * max(size, 1 << 20), dtype=torch.uint8, device="cuda")
    scratch.fill_(1)
    torch.cuda.synchronize()
    del scratch
    return True


def sampler(device: str) -> nvml.Sampler | None:
    """A started sampler of the GPU the capture runs on (None on the CPU)."""
    if device != "cuda":
        return None
    return nvml.Sampler(torch.cuda.current_device()).start()
