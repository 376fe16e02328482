"""GPU device descriptions: occupancy properties and datasheet peaks.

Two sources, one shape (`Device`):

* `device_from_trace(props)` reads one entry of a trace's `deviceProperties` list (what Kineto
  wrote from `cudaGetDeviceProperties`), filling the fields the trace does not carry
  (`reservedSharedMemPerBlock`, max blocks per SM) from the compute capability, as the CUDA
  occupancy calculator (`cuda_occupancy.h`) does.
* `builtin_device(name)` looks a device name up in the built-in table of SKUs
  (`profiler.analysis.model.skus`) for traces that lack `deviceProperties`; with them, the SKU is
  identified from name, memory size, SM count and clock (`skus.identify`).

Peak figures (`Peaks`) are **datasheet figures** (dense, no sparsity) from the vendors' product
pages, not measurements; `Peaks.source` says so wherever they are shown.
"""
from __future__ import annotations

from dataclasses import replace

from profiler.analysis.model import skus
from profiler.analysis.model.device import Device, Peaks, max_blocks_per_sm, reserved_shared_mem_bytes


def builtin_device(name: str | None) -> Device | None:
    """The built-in entry whose name pattern matches `name` first (`skus.SKUS`), else None; a
    name alone cannot tell an A100 40 GB from an 80 GB part: `skus.identify` reads the rest."""
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
