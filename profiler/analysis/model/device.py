"""A GPU as the occupancy calculator and the roofline see it (`Device`), its datasheet peaks
(`Peaks`), and the constructors the SKU table is written with. Value types only: `gpus` reads a
trace's device properties into them, `skus` lists the datasheet entries.
"""
from __future__ import annotations

from dataclasses import dataclass, field

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
        CUDA core / vector ALU, as `profiler.analysis.model.tensor_cores` names them) at one precision;
        None where the sheet has none. An 'unknown' engine gets the higher of the two (the roof
        it cannot pass either way)."""
        from profiler.analysis.model.tensor_cores import MATRIX_ENGINES, VECTOR_ENGINES
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


def make_peaks(matrix: dict, vector: dict, gbps: float, cite: str, per_package: int = 1) -> Peaks:
    """Datasheet figures: `matrix` TFLOP/s of the tensor / matrix cores by precision, `vector`
    TFLOP/s of the CUDA cores / vector units, `gbps` memory bandwidth; `cite` is the datasheet."""
    note = f"{DATASHEET}: {cite}" + ("" if per_package == 1 else f"; module figure / {per_package} GCDs")
    return Peaks(tflops={k: v / per_package for k, v in matrix.items()}, memory_gbps=gbps / per_package,
                 source=note, vector_tflops={k: v / per_package for k, v in vector.items()})


def nvidia_device(name, cc, sms, threads_sm, smem_sm_kb, optin_kb, peaks):
    major, minor = cc
    return Device(
        name=name, vendor="nvidia", compute_major=major, compute_minor=minor, num_sms=sms,
        warp_size=32, max_threads_per_sm=threads_sm, max_threads_per_block=1024,
        regs_per_sm=65536, regs_per_block=65536, shared_mem_per_sm_bytes=smem_sm_kb * KB,
        shared_mem_per_block_bytes=48 * KB, shared_mem_per_block_optin_bytes=optin_kb * KB,
        reserved_shared_mem_per_block_bytes=reserved_shared_mem_bytes(major),
        max_blocks_per_sm=max_blocks_per_sm(major, minor), peaks=peaks)


def amd_device(name, cus, peaks):
    return Device(
        name=name, vendor="amd", compute_major=9, compute_minor=0, num_sms=cus, warp_size=64,
        max_threads_per_sm=2048, max_threads_per_block=1024, regs_per_sm=None,
        regs_per_block=None, shared_mem_per_sm_bytes=64 * KB, shared_mem_per_block_bytes=64 * KB,
        shared_mem_per_block_optin_bytes=64 * KB, reserved_shared_mem_per_block_bytes=0,
        max_blocks_per_sm=None, peaks=peaks)
