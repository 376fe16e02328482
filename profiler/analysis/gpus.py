"""GPU device descriptions: occupancy properties and datasheet peaks.

Two sources, one shape (`Device`):

* `device_from_trace(props)` reads one entry of a trace's `deviceProperties` list (what Kineto
  wrote from `cudaGetDeviceProperties`), filling the fields the trace does not carry
  (`reservedSharedMemPerBlock`, max blocks per SM) from the compute capability, as the CUDA
  occupancy calculator (`cuda_occupancy.h`) does.
* `builtin_device(name)` looks a device name up in a built-in table of common GPUs (A100, H100,
  H200, B200, V100, L4, MI250, MI250X, MI300X) for traces that lack `deviceProperties`.

Peak figures (`Peaks`) are **datasheet figures** (dense, no sparsity) from the vendors' product
pages, not measurements; `Peaks.source` says so wherever they are shown.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

KB = 1024
DATASHEET = "vendor datasheet (dense, no sparsity), not measured"


@dataclass(frozen=True)
class Peaks:
    """Datasheet peak throughput for one device as the runtime sees it (one GCD on MI250)."""

    tflops: dict[str, float]          # tensor / matrix cores: precision ('tf32', 'bf16', 'fp16', 'fp8',
                                      # AMD also 'fp32') -> TFLOP/s
    memory_gbps: float                # HBM / GDDR bandwidth, GB/s (1e9 bytes)
    source: str = DATASHEET
    vector_tflops: dict[str, float] = field(default_factory=dict)  # CUDA cores / vector units

    def peak_tflops(self, engine: str, precision: str | None) -> float | None:
        """The datasheet peak of one engine ('tensor core' or 'CUDA core', as
        `profiler.analysis.tensor_cores` names them) at one precision; None where the sheet has none.
        An 'unknown' engine gets the higher of the two (the roof it cannot pass either way)."""
        if precision == "fp16/bf16":
            precision = "bf16"
        if engine not in ("tensor core", "CUDA core"):
            found = [t[precision] for t in (self.tflops, self.vector_tflops) if precision in t]
            return max(found, default=None)
        table = self.tflops if engine == "tensor core" else self.vector_tflops
        return table.get(precision) if precision else None


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


def _peaks(matrix: dict, vector: dict, gbps: float, cite: str, per_package: int = 1) -> Peaks:
    """Datasheet figures: `matrix` TFLOP/s of the tensor / matrix cores by precision, `vector`
    TFLOP/s of the CUDA cores / vector units, `gbps` memory bandwidth; `cite` is the datasheet."""
    note = f"{DATASHEET}: {cite}" + ("" if per_package == 1 else f"; module figure / {per_package} GCDs")
    return Peaks(tflops={k: v / per_package for k, v in matrix.items()}, memory_gbps=gbps / per_package,
                 source=note, vector_tflops={k: v / per_package for k, v in vector.items()})


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


# Datasheets (dense figures; "sparse" doubles are not used):
H100_SHEET = "NVIDIA H100 datasheet + H100 whitepaper table 3, nvidia.com/en-us/data-center/h100"
H200_SHEET = "NVIDIA H200 datasheet (H200 SXM), nvidia.com/en-us/data-center/h200"
B200_SHEET = "NVIDIA HGX B200 datasheet, per GPU, nvidia.com/en-us/data-center/hgx"
A100_SHEET = "NVIDIA A100 datasheet + A100 whitepaper table 1, nvidia.com/en-us/data-center/a100"
V100_SHEET = "NVIDIA V100 datasheet (SXM2), nvidia.com/en-us/data-center/v100"
L4_SHEET = "NVIDIA L4 datasheet, nvidia.com/en-us/data-center/l4"
MI300X_SHEET = "AMD Instinct MI300X data sheet, amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
MI250X_SHEET = "AMD Instinct MI250X data sheet, amd.com/en/products/accelerators/instinct/mi200/mi250x.html"
MI250_SHEET = "AMD Instinct MI250 data sheet, amd.com/en/products/accelerators/instinct/mi200/mi250.html"

# Hopper SXM (H100 SXM5 and H200 share the compute figures; H200 has more, faster HBM)
_HOPPER_SXM_MATRIX = {"tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "fp64": 66.9}
_HOPPER_SXM_VECTOR = {"fp32": 66.9, "bf16": 133.8, "fp16": 133.8, "fp64": 33.5}

# (pattern on the lower-cased device name, device). Order matters: most specific first.
BUILTIN: tuple[tuple[str, Device], ...] = (
    (r"h200", _nv("NVIDIA H200", (9, 0), 132, 2048, 228, 227,
                  _peaks(_HOPPER_SXM_MATRIX, _HOPPER_SXM_VECTOR, 4800, H200_SHEET))),
    (r"h100.*pcie", _nv("NVIDIA H100 PCIe", (9, 0), 114, 2048, 228, 227,
                        _peaks({"tf32": 378, "bf16": 756, "fp16": 756, "fp8": 1513, "fp64": 51},
                               {"fp32": 51, "bf16": 102.4, "fp16": 102.4, "fp64": 25.6}, 2000, H100_SHEET))),
    (r"h100", _nv("NVIDIA H100 SXM", (9, 0), 132, 2048, 228, 227,
                  _peaks(_HOPPER_SXM_MATRIX, _HOPPER_SXM_VECTOR, 3350, H100_SHEET))),
    (r"b200", _nv("NVIDIA B200", (10, 0), 148, 2048, 228, 227,
                  _peaks({"tf32": 1100, "bf16": 2250, "fp16": 2250, "fp8": 4500, "fp64": 37},
                         {"fp32": 75, "fp64": 37}, 8000, B200_SHEET))),
    (r"a100.*40gb", _nv("NVIDIA A100 40GB", (8, 0), 108, 2048, 164, 163,
                        _peaks({"tf32": 156, "bf16": 312, "fp16": 312, "fp64": 19.5},
                               {"fp32": 19.5, "bf16": 39, "fp16": 78, "fp64": 9.7}, 1555, A100_SHEET))),
    (r"a100", _nv("NVIDIA A100 80GB", (8, 0), 108, 2048, 164, 163,
                  _peaks({"tf32": 156, "bf16": 312, "fp16": 312, "fp64": 19.5},
                         {"fp32": 19.5, "bf16": 39, "fp16": 78, "fp64": 9.7}, 2039, A100_SHEET))),
    (r"v100", _nv("NVIDIA V100", (7, 0), 80, 2048, 96, 96,
                  _peaks({"fp16": 125}, {"fp32": 15.7, "fp16": 31.4, "fp64": 7.8}, 900, V100_SHEET))),
    (r"\bl4\b", _nv("NVIDIA L4", (8, 9), 58, 1536, 100, 99,
                    _peaks({"tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242.5}, {"fp32": 30.3},
                           300, L4_SHEET))),
    (r"mi300x", _amd("AMD Instinct MI300X", 304,
                     _peaks({"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4,
                             "fp8": 2614.9, "fp64": 163.4},
                            {"fp32": 163.4, "fp64": 81.7}, 5300, MI300X_SHEET))),
    (r"mi250x", _amd("AMD Instinct MI250X (one GCD)", 110,
                     _peaks({"fp32": 95.7, "bf16": 383, "fp16": 383, "fp64": 95.7},
                            {"fp32": 47.9, "fp64": 47.9}, 3276.8, MI250X_SHEET, per_package=2))),
    (r"mi250", _amd("AMD Instinct MI250 (one GCD)", 104,
                    _peaks({"fp32": 90.5, "bf16": 362.1, "fp16": 362.1, "fp64": 90.5},
                           {"fp32": 45.3, "fp64": 45.3}, 3276.8, MI250_SHEET, per_package=2))),
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
