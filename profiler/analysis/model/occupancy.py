"""Theoretical occupancy, following the CUDA occupancy calculator (`cuda_occupancy.h`).

Per SM, a kernel's resident blocks are the minimum of four limits:

* **warps**: `(max threads per SM / warp size) // ceil(threads per block / warp size)`;
* **registers**: registers are allocated per warp, `ceil(regs/thread * warp size, 256)`; each of
  the 4 SM sub-partitions holds `(regs per SM / 4) // regs per warp` warps; blocks =
  `warps that fit // warps per block` (0 if the block needs more than `regs per block`);
* **shared memory**: `ceil(shared mem per block + reserved per block, granularity)` out of the
  shared memory per SM (0 if the block exceeds its per-block limit: 48 KB by default, the
  opt-in limit for kernels that opt in);
* **blocks**: the hardware limit of resident blocks per SM (16 to 32 by architecture).

Theoretical occupancy is then what Nsight Compute calls it: **per SM, from the limiter**,
`blocks per SM * warps per block / max warps per SM`. A grid too small to give every SM that many
blocks does not lower it (an SM that runs a block runs it at this occupancy; ncu's achieved
occupancy is per active SM too, so achieved <= theoretical holds): the grid's whole-GPU average,
`min(blocks per SM, grid blocks / SM count) * threads per block / max threads per SM` (Kineto's
formula), is kept apart as `grid_average_pct`, with `grid_limited` saying the grid is the smaller.

`kineto_estimate_pct` reproduces Kineto's `est. achieved occupancy %` exactly (default 48 KB
shared-memory limit, float32 arithmetic, rounding half up); `occupancy` computes the value a kernel
really gets, letting kernels that use more than 48 KB opt in (cuDNN, cuBLAS `nvjet`, Triton, flash
attention), which Kineto reports as 0. The rules are documented in `docs/analysis.md`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from profiler.analysis.model.device import Device

NO_LIMIT = 2**31 - 1  # INT_MAX in cuda_occupancy.h: the resource is not used
REG_GRANULARITY = 256
SUB_PARTITIONS = 4
FACTORS = ("warps", "registers", "shared memory", "blocks")


@dataclass(frozen=True)
class Launch:
    """One kernel launch as a trace records it."""

    threads_per_block: int
    registers_per_thread: int | None
    shared_mem_bytes: int | None       # static + dynamic, per block
    grid_blocks: int | None            # grid x * y * z


@dataclass(frozen=True)
class Occupancy:
    """Result of the calculator for one launch on one device."""

    occupancy_pct: float | None        # theoretical per SM, from the limiter; None when not computable
    active_blocks_per_sm: int | None   # the calculator's limit
    blocks_per_sm: float | None        # averaged over the GPU: the limit, or grid blocks / SMs when fewer
    limiter: str                       # 'warps' | 'registers' | 'shared memory' | 'blocks'
                                       # (several joined by ' + '), or 'unknown'
    reason: str = ""                   # why the value is None, or why it is 0
    block_limits: dict[str, int] = field(default_factory=dict)
    grid_average_pct: float | None = None  # the whole GPU's average with the grid cap (Kineto's formula)
    grid_limited: bool = False         # the grid gives some SMs fewer blocks than the limiter allows


def smem_granularity(device: Device) -> int:
    """Shared memory allocation unit: 256 bytes up to Volta/Turing, 128 from Ampere on."""
    return 256 if device.compute_major <= 7 else 128


def warps_limit(threads: int, device: Device) -> int:
    if threads > device.max_threads_per_block:
        return 0
    warps_per_block = math.ceil(threads / device.warp_size)
    return (device.max_threads_per_sm // device.warp_size) // warps_per_block


def registers_limit(threads: int, regs_per_thread: int, device: Device) -> int:
    warps_per_block = math.ceil(threads / device.warp_size)
    regs_per_warp = _round_up(regs_per_thread * device.warp_size, REG_GRANULARITY)
    assumed = regs_per_warp * _round_up(warps_per_block, SUB_PARTITIONS)
    if regs_per_warp * warps_per_block > device.regs_per_block or assumed > device.regs_per_block:
        return 0
    if regs_per_warp == 0:
        return NO_LIMIT
    warps_per_partition = (device.regs_per_sm // SUB_PARTITIONS) // regs_per_warp
    return warps_per_partition * SUB_PARTITIONS // warps_per_block


def shared_mem_limit(smem_bytes: int, device: Device, optin: bool) -> int:
    allocated = _round_up(smem_bytes + device.reserved_shared_mem_per_block_bytes,
                          smem_granularity(device))
    per_block = device.shared_mem_per_block_bytes
    if optin and smem_bytes > per_block:
        per_block = device.shared_mem_per_block_optin_bytes
    if allocated > per_block + device.reserved_shared_mem_per_block_bytes:
        return 0
    per_sm = max(device.shared_mem_per_sm_bytes, allocated)
    return per_sm // allocated if allocated > 0 else NO_LIMIT


def block_limits(launch: Launch, device: Device, optin: bool = True) -> dict[str, int]:
    """Blocks per SM allowed by each factor (`NO_LIMIT` where a resource is unused)."""
    threads = launch.threads_per_block
    return {
        "warps": warps_limit(threads, device),
        "registers": registers_limit(threads, launch.registers_per_thread or 0, device),
        "shared memory": shared_mem_limit(launch.shared_mem_bytes or 0, device, optin),
        "blocks": device.max_blocks_per_sm,
    }


def occupancy(launch: Launch, device: Device | None, optin: bool = True) -> Occupancy:
    """Theoretical occupancy of `launch` on `device` and what limits it."""
    missing = _missing_input(launch, device)
    if missing:
        return Occupancy(None, None, None, "unknown", missing)
    limits = block_limits(launch, device, optin)
    active = min(limits.values())
    limiter = " + ".join(f for f in FACTORS if limits[f] == active)
    blocks, grid_limited = float(active), False
    if launch.grid_blocks is not None and launch.grid_blocks / device.num_sms < active:
        blocks, grid_limited = launch.grid_blocks / device.num_sms, True
    warps_per_block = math.ceil(launch.threads_per_block / device.warp_size)
    pct = 100.0 * active * warps_per_block / (device.max_threads_per_sm // device.warp_size)
    average = 100.0 * blocks * launch.threads_per_block / device.max_threads_per_sm
    reason = f"the block does not fit: {limiter}" if active == 0 else ""
    return Occupancy(pct, active, blocks, limiter, reason, limits, average, grid_limited)


def kineto_estimate_pct(launch: Launch, device: Device | None) -> int | None:
    """Kineto's `est. achieved occupancy %` for this launch, reproduced bit for bit."""
    if _missing_input(launch, device) or launch.grid_blocks is None:
        return None
    active = min(block_limits(launch, device, optin=False).values())
    blocks = np.float32(launch.grid_blocks) / np.float32(device.num_sms)
    blocks = min(blocks, np.float32(active))
    occ = np.float32(blocks * np.float32(launch.threads_per_block)) / np.float32(device.max_threads_per_sm)
    return int(0.5 + float(occ) * 100.0)


def _missing_input(launch: Launch, device: Device | None) -> str:
    if device is None:
        return "no device properties in the trace and the GPU is not in the built-in table"
    if device.vendor != "nvidia" or device.regs_per_sm is None or device.max_blocks_per_sm is None:
        return f"occupancy rules for {device.name} are not known (CUDA occupancy calculator only)"
    if launch.registers_per_thread is None:
        return "the trace does not record registers per thread for this kernel"
    if launch.threads_per_block <= 0:
        return "the trace does not record the block size for this kernel"
    return ""


def _round_up(value: int, unit: int) -> int:
    return unit * math.ceil(value / unit)
