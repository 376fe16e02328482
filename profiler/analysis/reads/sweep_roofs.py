"""The HBM bandwidth roofs of a bandwidth sweep (decode, rated in TB/s): per GPU that ran it, the
datasheet's memory bandwidth (`skus`, the same peak every "% of bandwidth" divides by) and, where
the store keeps one, the bandwidth the GPU was measured to sustain (profiler/capture/ceilings.py,
`storage.ceilings.latest`, the same figure `rating.against_measured` reads).
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import op_pricing, reads
from profiler.storage import ceilings as measured_ceilings
from profiler.storage.session import StoreHandle

COLUMNS = ["gpu_name", "roof", "tbps", "text"]


def bandwidth_roofs(store: StoreHandle, run_ids) -> pd.DataFrame:
    """gpu_name, roof ('datasheet' or 'measured'), tbps (TB/s) and text (its label, e.g. 'NVIDIA
    H200 datasheet 4.8 TB/s'), one row per roof known; no row for a GPU without a datasheet."""
    found = reads.run_devices(store, list(run_ids))
    measured = measured_ceilings.latest(store)
    rows, seen = [], set()
    for info in found.values():
        device = op_pricing.device_of(info)
        name = getattr(device, "sku_name", None) or getattr(device, "name", None) or (info or (None, None))[1]
        if name is None or name in seen:
            continue
        seen.add(name)
        peaks = getattr(device, "peaks", None)
        if peaks is not None and peaks.memory_gbps:
            tbps = peaks.memory_gbps / 1e3
            rows.append((name, "datasheet", tbps, f"{name} datasheet {tbps:.3g} TB/s"))
        got = (measured.get(info[1]) or measured.get(name) or {}).get("memory")
        if got:
            rows.append((name, "measured", float(got), f"{name} measured {float(got):.3g} TB/s"))
    return pd.DataFrame(rows, columns=COLUMNS)
