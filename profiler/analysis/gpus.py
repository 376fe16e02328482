"""GPU device descriptions: occupancy properties and datasheet peaks.

Two sources, one shape (`Device`):

* `device_from_trace(props)` reads one entry of a trace's `deviceProperties` list (what Kineto
  wrote from `cudaGetDeviceProperties`), filling the fields the trace does not carry
  (`reservedSharedMemPerBlock`, max blocks per SM) from the compute capability, as the CUDA
  occupancy calculator (`cuda_occupancy.h`) does.
* `builtin_device(name)` looks a device name up in the built-in table of SKUs
  (`profiler.analysis.skus`) for traces that lack `deviceProperties`; with them, the SKU is
  identified from name, memory size, SM count and clock (`skus.identify`).

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
        """The datasheet peak of one engine (a matrix unit: tensor / matrix core; a vector unit:
        CUDA core / vector ALU, as `profiler.analysis.tensor_cores` names them) at one precision;
        None where the sheet has none. An 'unknown' engine gets the higher of the two (the roof
        it cannot pass either way)."""
        from profiler.analysis.tensor_cores import MATRIX_ENGINES, VECTOR_ENGINES
        if precision == "fp16/bf16":
            precision = "bf16"
        if engine not in (*MATRIX_ENGINES, *VECTOR_ENGINES):
            found = [t[precision] for t in (self.tflops, self.vector_tflops) if precision in t]
            return max(found, default=None)
        table = self.tflops if engine in MATRIX_ENGINES else self.vector_tflops
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
    sku: str | None = None            # how the datasheet entry was chosen (skus.identify)
    sku_exact: bool = False           # True: name, memory and SMs (or an unambiguous name) agree
    sku_name: str | None = None       # the datasheet entry's name ('NVIDIA A100 40GB')


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


def builtin_device(name: str | None) -> Device | None:
    """The built-in entry whose name pattern matches `name` first (`skus.SKUS`), else None; a
    name alone cannot tell an A100 40 GB from an 80 GB part: `skus.identify` reads the rest."""
    from profiler.analysis import skus
    return skus.identify(name).device


def device_from_trace(props: dict) -> Device:
    """A `Device` from one `deviceProperties` entry; peaks come from the built-in table by name.

    Raises `ValueError` naming the missing key when the entry lacks what occupancy needs.
    """
    try:
        major, minor = int(props["computeMajor"]), int(props["computeMinor"])
        amd = "maxSharedMemoryPerMultiProcessor" in props or int(props["warpSize"]) == 64
        smem_sm = props.get("sharedMemPerMultiprocessor", props.get("maxSharedMemoryPerMultiProcessor"))
        smem_block = int(props["sharedMemPerBlock"])
        from profiler.analysis import skus
        found = skus.identify(props.get("name"), props.get("totalGlobalMem"), props.get("numSms"),
                              props.get("clockRate"), "amd" if amd else "nvidia")
        known = found.device
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
            peaks=known.peaks if known else None, from_trace=True, sku=found.evidence,
            sku_exact=found.exact, sku_name=known.name if known else None)
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
