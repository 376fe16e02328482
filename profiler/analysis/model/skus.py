"""Which GPU product (SKU) a trace ran on, and its datasheet: one entry per SKU, each cited.

A device name alone does not tell the SKU: the A100 comes as 40 GB (1,555 GB/s) and 80 GB
(2,039 GB/s SXM, 1,935 GB/s PCIe), the H100 as SXM (132 SMs, 3.35 TB/s), PCIe (114 SMs,
2.0 TB/s) and NVL (94 GB, 3.9 TB/s), and a ROCm trace may name an MI250 GCD "AMD Radeon
Graphics". `identify(name, memory_bytes, sms, clock_khz, vendor)` reads what the trace's
`deviceProperties` say (name, `totalGlobalMem`, `numSms`, `clockRate`):

1. the entries whose name pattern matches the name (none when the name is generic);
2. of those, the ones with the reported SM count, then the ones whose nominal memory is within
   10 % of the reported size (GiB against the datasheet's GB, as vendors round);
3. with no name match, the entries of the vendor whose SM count and memory both match;
4. ties go to the entry whose boost clock is nearest the reported clock, else the first.

`Identified.evidence` says which facts decided (shown with the peaks); `exact` is False when the
facts leave several SKUs (the first is taken), so a share of peak above 100 % blames the peak.
Figures are dense (no sparsity), per GPU (per GCD on MI250/MI250X).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from profiler.analysis.model.device import Device, amd_device, nvidia_device, make_peaks

NV = "nvidia.com/en-us/data-center"
H100_SHEET = f"NVIDIA H100 datasheet + H100 whitepaper table 3, {NV}/h100"
H200_SHEET = f"NVIDIA H200 datasheet (H200 SXM / H200 NVL columns), {NV}/h200"
B200_SHEET = f"NVIDIA HGX B200 datasheet, per GPU, {NV}/hgx"
A100_SHEET = f"NVIDIA A100 datasheet (40GB/80GB PCIe, 40GB/80GB SXM columns) + whitepaper table 1, {NV}/a100"
V100_SHEET = f"NVIDIA V100 / V100S datasheet (SXM2, PCIe columns), {NV}/v100"
L4_SHEET = f"NVIDIA L4 datasheet, {NV}/l4"
AMD = "amd.com/en/products/accelerators/instinct"
MI300X_SHEET = f"AMD Instinct MI300X data sheet, {AMD}/mi300/mi300x.html"
MI325X_SHEET = f"AMD Instinct MI325X data sheet, {AMD}/mi300/mi325x.html"
MI250X_SHEET = f"AMD Instinct MI250X data sheet, {AMD}/mi200/mi250x.html"
MI250_SHEET = f"AMD Instinct MI250 data sheet, {AMD}/mi200/mi250.html"

_HOPPER_SXM = ({"tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "fp64": 66.9},
               {"fp32": 66.9, "bf16": 133.8, "fp16": 133.8, "fp64": 33.5})
_HOPPER_NVL = ({"tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5, "fp64": 60},
               {"fp32": 60, "fp64": 30})
_A100 = ({"tf32": 156, "bf16": 312, "fp16": 312, "fp64": 19.5},
         {"fp32": 19.5, "bf16": 39, "fp16": 78, "fp64": 9.7})
_MI300 = ({"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "fp64": 163.4},
          {"fp32": 163.4, "fp64": 81.7})


@dataclass(frozen=True)
class Sku:
    pattern: str          # on the lower-cased device name
    memory_gb: float      # nominal (datasheet) memory
    sms: int              # SMs / CUs (per GCD)
    boost_mhz: int
    device: Device


def _h(name, sms, optin, figures, gbps, sheet):
    return nvidia_device(name, (9, 0), sms, 2048, 228, optin, make_peaks(*figures, gbps, sheet))


SKUS: tuple[Sku, ...] = (   # most specific first within a name family
    Sku(r"h200.*nvl", 141, 132, 1785, _h("NVIDIA H200 NVL", 132, 227, _HOPPER_NVL, 4800, H200_SHEET)),
    Sku(r"h200", 141, 132, 1980, _h("NVIDIA H200", 132, 227, _HOPPER_SXM, 4800, H200_SHEET)),
    Sku(r"h100.*nvl", 94, 132, 1785, _h("NVIDIA H100 NVL", 132, 227, _HOPPER_NVL, 3900, H100_SHEET)),
    Sku(r"h100.*pcie", 80, 114, 1755, _h("NVIDIA H100 PCIe", 114, 227, (
        {"tf32": 378, "bf16": 756, "fp16": 756, "fp8": 1513, "fp64": 51},
        {"fp32": 51, "bf16": 102.4, "fp16": 102.4, "fp64": 25.6}), 2000, H100_SHEET)),
    Sku(r"h100", 80, 132, 1980, _h("NVIDIA H100 SXM", 132, 227, _HOPPER_SXM, 3350, H100_SHEET)),
    Sku(r"b200", 180, 148, 1965, nvidia_device("NVIDIA B200", (10, 0), 148, 2048, 228, 227, make_peaks(
        {"tf32": 1100, "bf16": 2250, "fp16": 2250, "fp8": 4500, "fp4": 9000, "fp64": 37},
        {"fp32": 75, "fp64": 37}, 8000, B200_SHEET))),
    Sku(r"a100.*pcie.*80|a100.*80.*pcie", 80, 108, 1410,
        nvidia_device("NVIDIA A100 80GB PCIe", (8, 0), 108, 2048, 164, 163, make_peaks(*_A100, 1935, A100_SHEET))),
    Sku(r"a100", 80, 108, 1410,
        nvidia_device("NVIDIA A100 80GB", (8, 0), 108, 2048, 164, 163, make_peaks(*_A100, 2039, A100_SHEET))),
    Sku(r"a100", 40, 108, 1410,
        nvidia_device("NVIDIA A100 40GB", (8, 0), 108, 2048, 164, 163, make_peaks(*_A100, 1555, A100_SHEET))),
    Sku(r"v100s", 32, 80, 1597, nvidia_device("NVIDIA V100S PCIe", (7, 0), 80, 2048, 96, 96, make_peaks(
        {"fp16": 130}, {"fp32": 16.4, "fp16": 32.8, "fp64": 8.2}, 1134, V100_SHEET))),
    Sku(r"v100.*pcie", 32, 80, 1380, nvidia_device("NVIDIA V100 PCIe", (7, 0), 80, 2048, 96, 96, make_peaks(
        {"fp16": 112}, {"fp32": 14, "fp16": 28, "fp64": 7}, 900, V100_SHEET))),
    Sku(r"v100", 32, 80, 1530, nvidia_device("NVIDIA V100", (7, 0), 80, 2048, 96, 96, make_peaks(
        {"fp16": 125}, {"fp32": 15.7, "fp16": 31.4, "fp64": 7.8}, 900, V100_SHEET))),
    Sku(r"v100", 16, 80, 1530, nvidia_device("NVIDIA V100 16GB", (7, 0), 80, 2048, 96, 96, make_peaks(
        {"fp16": 125}, {"fp32": 15.7, "fp16": 31.4, "fp64": 7.8}, 900, V100_SHEET))),
    Sku(r"\bl4\b", 24, 58, 2040, nvidia_device("NVIDIA L4", (8, 9), 58, 1536, 100, 99, make_peaks(
        {"tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242.5}, {"fp32": 30.3}, 300, L4_SHEET))),
    Sku(r"mi325x", 256, 304, 2100, amd_device("AMD Instinct MI325X", 304, make_peaks(*_MI300, 6000, MI325X_SHEET))),
    Sku(r"mi300x", 192, 304, 2100, amd_device("AMD Instinct MI300X", 304, make_peaks(*_MI300, 5300, MI300X_SHEET))),
    Sku(r"mi250x", 64, 110, 1700, amd_device("AMD Instinct MI250X (one GCD)", 110, make_peaks(
        {"fp32": 95.7, "bf16": 383, "fp16": 383, "fp64": 95.7}, {"fp32": 47.9, "fp64": 47.9},
        3276.8, MI250X_SHEET, per_package=2))),
    Sku(r"mi250", 64, 104, 1700, amd_device("AMD Instinct MI250 (one GCD)", 104, make_peaks(
        {"fp32": 90.5, "bf16": 362.1, "fp16": 362.1, "fp64": 90.5}, {"fp32": 45.3, "fp64": 45.3},
        3276.8, MI250_SHEET, per_package=2))),
)


@dataclass(frozen=True)
class Identified:
    device: Device | None
    evidence: str | None      # e.g. 'name + 39.6 GiB + 108 SMs', None when nothing matched
    exact: bool               # False: the name alone chose among several SKUs (or nothing matched)


def _number(value) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


@lru_cache(maxsize=256)
def identify(name: str | None, memory_bytes=None, sms=None, clock_khz=None,
             vendor: str | None = None) -> Identified:
    """The SKU of a device from what its trace reports (see the module's rules)."""
    lowered = (name or "").lower()
    gib, count, mhz = _number(memory_bytes), _number(sms), _number(clock_khz)
    gib = gib / 2**30 if gib else None
    in_name = re.search(r"(\d+)\s*gb", lowered)
    gib = gib if gib or not in_name else float(in_name.group(1))   # 'A100-SXM4-40GB'
    mhz = mhz / 1e3 if mhz else None
    by_name = [s for s in SKUS if lowered and re.search(s.pattern, lowered)]
    same_sms = (lambda s: count is None or s.sms == count)
    same_mem = (lambda s: gib is None or abs(gib - s.memory_gb) <= 0.1 * s.memory_gb)
    facts = [(f"{gib:.1f} GiB" if not in_name or memory_bytes else f"{gib:.0f} GB in the name") if gib else None, f"{count:.0f} SMs" if count else None,
             f"{mhz:.0f} MHz" if mhz else None]
    if by_name:
        found = [s for s in by_name if same_sms(s)] or by_name
        found = [s for s in found if same_mem(s)] or found
        used = ["name"] + [f for f, n in zip(facts, (gib, count)) if f and n is not None]
    else:
        found = [s for s in SKUS if count is not None and gib is not None and s.sms == count and same_mem(s)
                 and (vendor is None or s.device.vendor == vendor)]
        used = [f for f in facts[:2] if f]
    if not found:
        return Identified(None, None, False)
    if len({s.device.name for s in found}) > 1 and mhz:
        nearest = min(abs(s.boost_mhz - mhz) for s in found)
        found = [s for s in found if abs(s.boost_mhz - mhz) == nearest]
        used.append(facts[2])
    names = {s.device.name for s in found}
    exact = len(names) == 1
    evidence = f"{found[0].device.name}, identified by {' + '.join(used)}"
    if not exact:
        evidence += f" (these facts fit {len(names)} SKUs: {', '.join(sorted(names))}; the first is used)"
    device = replace(found[0].device, sku=evidence, sku_exact=exact, sku_name=found[0].device.name)
    return Identified(device, evidence, exact)
