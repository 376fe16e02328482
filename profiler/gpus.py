"""GPU device descriptions: occupancy properties and datasheet peaks.

Two sources, one shape (`Device`):

* `device_from_trace(props)` reads one entry of a trace's `deviceProperties` list (what Kineto
  wrote from `cudaGetDeviceProperties`), filling the fields the trace does not carry
  (`reservedSharedMemPerBlock`, max blocks per SM) from the compute capability, as the CUDA
  occupancy calculator (`cuda_occupancy.h`) does.
* `builtin_device(name)` looks a device name up in a built-in table of common GPUs (A100, H100,
  H200, B200, V100, L4, MI250, MI300X) for traces that lack `deviceProperties`.

Peak figures (`Peaks`) are **datasheet figures** (dense, no sparsity) from the vendors' product
pages, not measurements; `Peaks.source` says so wherever they are shown.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

KB = 1024
DATASHEET = "vendor datasheet (dense, no sparsity), not measured"


@dataclass(frozen=True)
class Peaks:
    """Datasheet peak throughput for one device as the runtime sees it (one GCD on MI250)."""

    tflops: dict[str, float]          # math precision ('fp32', 'tf32', 'bf16', 'fp16', 'fp8') -> TFLOP/s
    memory_gbps: float                # HBM / GDDR bandwidth, GB/s (1e9 bytes)
    source: str = DATASHEET


@dataclass(frozen=True)
class Device:
    """What the occupancy calculator and the roofline need to know about a GPU."""

    name: str
    vendor: str                       # 'nvidia' | 'amd'
    compute_major: int
    compute_minor: int
    num_sms: int
    warp_size: int
    max_threads_per_sm: int
    max_threads_per_block: int
    regs_per_sm: int | None
    regs_per_block: int | None
    shared_mem_per_sm_bytes: int
    shared_mem_per_block_bytes: int           # default per-block limit (48 KB on NVIDIA)
    shared_mem_per_block_optin_bytes: int     # limit for kernels that opt in
    reserved_shared_mem_per_block_bytes: int  # taken by the driver per block (1 KB from sm_80)
    max_blocks_per_sm: int | None
    peaks: Peaks | None = None
    from_trace: bool = False


def max_blocks_per_sm(major: int, minor: int) -> int | None:
    """Resident block limit per SM by compute capability (`cudaOccMaxBlocksPerMultiprocessor`)."""
    table = {(7, 0): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16, (8, 9): 24, (9, 0): 32}
    if (major, minor) in table:
        return table[(major, minor)]
    return {5: 32, 6: 32, 10: 32, 12: 32}.get(major)


def reserved_shared_mem_bytes(major: int) -> int:
    """Shared memory the CUDA driver reserves per block: 1 KB from Ampere (sm_80) on."""
    return KB if major >= 8 else 0


def _peaks(fp32, tf32, bf16, fp16, fp8, gbps, per_package=1):
    values = {"fp32": fp32, "tf32": tf32, "bf16": bf16, "fp16": fp16, "fp8": fp8}
    tflops = {k: v / per_package for k, v in values.items() if v is not None}
    note = DATASHEET if per_package == 1 else f"{DATASHEET}; module figure / {per_package} GCDs"
    return Peaks(tflops=tflops, memory_gbps=gbps / per_package, source=note)


def _nv(name, cc, sms, threads_sm, smem_sm_kb, optin_kb, peaks):
    major, minor = cc
    return Device(
        name=name, vendor="nvidia", compute_major=major, compute_minor=minor, num_sms=sms,
        warp_size=32, max_threads_per_sm=threads_sm, max_threads_per_block=1024,
        regs_per_sm=65536, regs_per_block=65536, shared_mem_per_sm_bytes=smem_sm_kb * KB,
        shared_mem_per_block_bytes=48 * KB, shared_mem_per_block_optin_bytes=optin_kb * KB,
        reserved_shared_mem_per_block_bytes=reserved_shared_mem_bytes(major),
        max_blocks_per_sm=max_blocks_per_sm(major, minor), peaks=peaks)


def _amd(name, cus, peaks):
    return Device(
        name=name, vendor="amd", compute_major=9, compute_minor=0, num_sms=cus, warp_size=64,
        max_threads_per_sm=2048, max_threads_per_block=1024, regs_per_sm=None,
        regs_per_block=None, shared_mem_per_sm_bytes=64 * KB, shared_mem_per_block_bytes=64 * KB,
        shared_mem_per_block_optin_bytes=64 * KB, reserved_shared_mem_per_block_bytes=0,
        max_blocks_per_sm=None, peaks=peaks)


# (pattern on the lower-cased device name, device). Order matters: most specific first.
BUILTIN: tuple[tuple[str, Device], ...] = (
    (r"h200", _nv("NVIDIA H200", (9, 0), 132, 2048, 228, 227,
                  _peaks(67, 494.7, 989.4, 989.4, 1978.9, 4800))),
    (r"h100.*pcie", _nv("NVIDIA H100 PCIe", (9, 0), 114, 2048, 228, 227,
                        _peaks(51, 378, 756, 756, 1513, 2000))),
    (r"h100", _nv("NVIDIA H100 SXM", (9, 0), 132, 2048, 228, 227,
                  _peaks(67, 494.7, 989.4, 989.4, 1978.9, 3350))),
    (r"b200", _nv("NVIDIA B200", (10, 0), 148, 2048, 228, 227,
                  _peaks(75, 1100, 2250, 2250, 4500, 8000))),
    (r"a100.*40gb", _nv("NVIDIA A100 40GB", (8, 0), 108, 2048, 164, 163,
                        _peaks(19.5, 156, 312, 312, None, 1555))),
    (r"a100", _nv("NVIDIA A100 80GB", (8, 0), 108, 2048, 164, 163,
                  _peaks(19.5, 156, 312, 312, None, 2039))),
    (r"v100", _nv("NVIDIA V100", (7, 0), 80, 2048, 96, 96,
                  _peaks(15.7, None, None, 125, None, 900))),
    (r"\bl4\b", _nv("NVIDIA L4", (8, 9), 58, 1536, 100, 99,
                    _peaks(30.3, 60, 121, 121, 242.5, 300))),
    (r"mi300x", _amd("AMD Instinct MI300X", 304,
                     _peaks(163.4, 653.7, 1307.4, 1307.4, 2614.9, 5300))),
    (r"mi250", _amd("AMD Instinct MI250 (one GCD)", 104,
                    _peaks(45.3, None, 362.1, 362.1, None, 3276.8, per_package=2))),
)


def builtin_device(name: str | None) -> Device | None:
    """The built-in entry whose pattern matches `name` (case-insensitive), else None."""
    if not name:
        return None
    lowered = name.lower()
    for pattern, device in BUILTIN:
        if re.search(pattern, lowered):
            return device
    return None


def device_from_trace(props: dict) -> Device:
    """A `Device` from one `deviceProperties` entry; peaks come from the built-in table by name.

    Raises `ValueError` naming the missing key when the entry lacks what occupancy needs.
    """
    try:
        major, minor = int(props["computeMajor"]), int(props["computeMinor"])
        amd = "maxSharedMemoryPerMultiProcessor" in props or int(props["warpSize"]) == 64
        smem_sm = props.get("sharedMemPerMultiprocessor", props.get("maxSharedMemoryPerMultiProcessor"))
        smem_block = int(props["sharedMemPerBlock"])
        known = builtin_device(props.get("name"))
        return Device(
            name=str(props.get("name", "unknown GPU")), vendor="amd" if amd else "nvidia",
            compute_major=major, compute_minor=minor, num_sms=int(props["numSms"]),
            warp_size=int(props["warpSize"]), max_threads_per_sm=int(props["maxThreadsPerMultiprocessor"]),
            max_threads_per_block=int(props["maxThreadsPerBlock"]),
            regs_per_sm=_opt_int(props.get("regsPerMultiprocessor")),
            regs_per_block=_opt_int(props.get("regsPerBlock")),
            shared_mem_per_sm_bytes=int(smem_sm) if smem_sm is not None else smem_block,
            shared_mem_per_block_bytes=smem_block,
            shared_mem_per_block_optin_bytes=int(props.get("sharedMemPerBlockOptin", smem_block)),
            reserved_shared_mem_per_block_bytes=0 if amd else reserved_shared_mem_bytes(major),
            max_blocks_per_sm=None if amd else max_blocks_per_sm(major, minor),
            peaks=known.peaks if known else None, from_trace=True)
    except KeyError as exc:
        raise ValueError(f"deviceProperties entry lacks {exc.args[0]!r}") from exc


def _opt_int(value) -> int | None:
    return None if value is None else int(value)


def resolve_device(device_properties: list | None, device_index: int | None,
                   gpu_name: str | None) -> Device | None:
    """The device a kernel ran on: the trace's own properties (by `id`), else the built-in table."""
    for props in device_properties or []:
        if device_index is None or int(props.get("id", -1)) == int(device_index):
            return device_from_trace(props)
    return builtin_device(gpu_name)


def with_peaks(device: Device, peaks: Peaks) -> Device:
    """A copy of `device` with other peak figures (e.g. a user's measured ones)."""
    return replace(device, peaks=peaks)
