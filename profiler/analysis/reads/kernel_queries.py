"""Kernels of runs: the per-name table, hardware counters, and the details a kernel engineer reads
(math engine, theoretical and reported occupancy, launch configurations)."""
from __future__ import annotations

import pandas as pd

from profiler.analysis.model import gpus, occupancy, tensor_cores
from profiler.analysis.reads import kept, query_files, reads
from profiler.analysis.model.device import Device
from profiler.analysis.model.counters import COUNTER_COLUMNS
from profiler.analysis.reads.units import binary_size
from profiler.storage.session import StoreHandle


# ── kernels ──────────────────────────────────────────────────────────────────────────────────

def kernel_table(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Kernels per run by name: calls_per_iter, calls, total_us, us_per_iter, mean_us,
    gpu_time_share_pct, grid, block, registers_per_thread, shared_mem_bytes, est_occupancy_pct."""
    return query_files.run(store, "kernel_table", run_ids=query_files.ids(run_ids))


DETAIL_COLUMNS = ["tc_engine", "tc_precision", "tc_op", "tc_rule", "theory_occupancy_pct",
                  "occupancy_limiter", "reads_zero_but_ran", "launch_configs", "launch_config_list",
                  *COUNTER_COLUMNS]


def kernel_counters(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Per run and kernel name, the hardware counters attached to the run (``COUNTER_COLUMNS``;
    no rows for a run without counters)."""
    return query_files.run(store, "kernel_counters", run_ids=query_files.ids(run_ids))


def kernel_details(store: StoreHandle, run_ids) -> pd.DataFrame:
    """``kernel_table`` plus, per kernel name: the theoretical occupancy letting kernels opt into
    large shared memory, time-weighted over its launches like the reported value
    (theory_occupancy_pct; occupancy_limiter: that of its most-used launch configuration, what
    Kineto's 0 % really means; reads_zero_but_ran flags a reported 0 % the calculator does not
    confirm), launch_configs (how many distinct configurations) and launch_config_list (each
    with its calls, when there are several), and the engine read from the name on the run's GPU
    vendor (tc_engine, tc_precision, tc_op, tc_rule). Kept per run (profiler/analysis/reads/kept.py)."""
    return kept.per_run(store, "kernel_details", run_ids, lambda ids: _kernel_details(store, ids), "run_id")


def _kernel_details(store, run_ids) -> pd.DataFrame:
    kernels = kernel_table(store, run_ids)
    if kernels.empty:
        return kernels.reindex(columns=[*kernels.columns, *DETAIL_COLUMNS])
    devices = run_devices(store, run_ids)
    vendors = {run: tensor_cores.vendor_of(devices.get(run, (None, None))[1], names)
               for run, names in kernels.groupby("run_id")["kernel"]}
    table = tensor_cores.classify_frame(kernels, "kernel", vendors)
    configs = query_files.run(store, "kernel_configs", run_ids=query_files.ids(run_ids))
    resolved: dict[tuple, Device | None] = {}  # one lookup per run and device, not per configuration
    for run, device in configs[["run_id", "device"]].drop_duplicates().itertuples(index=False):
        resolved[(run, None if pd.isna(device) else int(device))] = run_device(devices.get(run), device)
    theory = [_theory(row, resolved[(row.run_id, None if pd.isna(row.device) else int(row.device))])
              for row in configs.itertuples()]
    configs["theory_pct"] = [t.occupancy_pct for t in theory]
    configs["limiter"] = [t.limiter for t in theory]
    table = table.merge(_occupancy_per_name(configs), on=["run_id", "kernel"], how="left")
    table["reads_zero_but_ran"] = (table["est_occupancy_pct"] == 0) & (table["theory_occupancy_pct"] > 0)
    return table.merge(kernel_counters(store, run_ids), on=["run_id", "kernel"], how="left")


def _occupancy_per_name(configs: pd.DataFrame) -> pd.DataFrame:
    """Per (run_id, kernel): the theoretical occupancy time-weighted over its launch
    configurations (by calls when none took time), the limiter of the most used one (configs
    come most used first), how many configurations and, when several, each with its calls."""
    names: dict[tuple, list] = {}
    for c in configs.itertuples():
        names.setdefault((c.run_id, c.kernel), []).append(c)
    rows = []
    for (run, kernel), group in names.items():
        known = [c for c in group if not pd.isna(c.theory_pct)]
        by_time = sum(c.dur_ns for c in known) > 0
        weights = [c.dur_ns if by_time else c.calls for c in known]
        theory = (sum(w * c.theory_pct for w, c in zip(weights, known)) / sum(weights)
                  if sum(weights) > 0 else None)
        listed = "; ".join(f"{_config_text(c)}: {c.calls}×" for c in group) if len(group) > 1 else None
        rows.append((run, kernel, theory, group[0].limiter, len(group), listed))
    return pd.DataFrame(rows, columns=["run_id", "kernel", "theory_occupancy_pct", "occupancy_limiter",
                                       "launch_configs", "launch_config_list"])


def _config_text(c) -> str:
    text = f"grid {c.grid_x}×{c.grid_y}×{c.grid_z} block {c.block_x}×{c.block_y}×{c.block_z}"
    if not pd.isna(c.registers_per_thread):
        text += f" {int(c.registers_per_thread)} regs"
    if not pd.isna(c.shared_mem_bytes) and c.shared_mem_bytes:
        text += f" {binary_size(c.shared_mem_bytes)} smem"
    return text


run_devices = reads.run_devices


def run_device(device_info, device_index=None) -> Device | None:
    """The one device lookup: the ``Device`` a run's kernel ran on, from a ``run_devices`` value
    (deviceProperties list, GPU name) and the kernel's device index; None when unknown."""
    props, gpu = device_info or (None, None)
    index = None if device_index is None or pd.isna(device_index) else int(device_index)
    try:
        return gpus.resolve_device(props, index, gpu)
    except ValueError:
        return None


def _theory(row, device: Device | None) -> occupancy.Occupancy:
    """The calculator on one launch configuration (a kernel_configs row) on its device."""
    threads = None if pd.isna(row.block_x) else int(row.block_x * row.block_y * row.block_z)
    blocks = None if pd.isna(row.grid_x) else int(row.grid_x * row.grid_y * row.grid_z)
    launch = occupancy.Launch(threads or 0, _opt(row.registers_per_thread), _opt(row.shared_mem_bytes), blocks)
    return occupancy.occupancy(launch, device)


def _opt(value) -> int | None:
    return None if pd.isna(value) else int(value)
