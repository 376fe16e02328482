"""SQL ▶ DataFrame: every read the dashboard makes, one query per ``sql/<name>.sql`` file.

Each function is named after its SQL file and the table it returns, takes a store handle (a
``Store`` or its ``Session``: profiler/storage/session.py) and run ids, and returns a pandas DataFrame with units in
its column names (``*_ns``, ``*_us``, ``*_pct``, ``*_bytes``). A file's header names the SQL modules it
includes (profiler/storage/sql/lib/, sql_library.py); a read installs them on its cursor first. Times "per iteration" divide by the
run's ProfilerStep count; a run without iterations counts as one iteration spanning the trace.

Sections: runs & iterations · kernels · timeline · launches · CPU cost · compare.
Add new queries in the section they belong to (or a new section) with their own ``.sql`` file.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis import diff, gpus, kept, occupancy, reads, tensor_cores
from profiler.analysis.counters import COUNTER_COLUMNS
from profiler.analysis.reads import SQL_DIR, QueryError, Session, session, sql_text  # noqa: F401 (re-exported)
from profiler.errors import UnknownRunError

TIMELINE_MAX_MARKS = 3000     # marks per panel the browser draws quickly
TIMELINE_PAGE_MARKS = 8000    # marks per timeline page: many panels share it (keeps a run < 1 s)
TIMELINE_WIDTH_PX = 1200      # events shorter than window / width merge into one mark
ALIGN_MAX_KERNELS = 4000      # longer iterations are cut before alignment


# queries whose rows for a run depend only on that run's stored rows: kept per run between page
# runs (profiler/analysis/kept.py), with the order of their ORDER BY ("given": $run_ids' order)
PER_RUN = {name: "given" for name in ("run_metrics", "iteration_metrics", "run_shapes", "run_devices",
                                      "run_timings", "memory_summary")} | {
    name: "run_id" for name in ("run_iterations", "kernel_table", "kernel_configs", "memop_table",
                                "iteration_cpu_gpu", "memory_timeline", "memory_iteration_peaks",
                                "launch_api_table", "launch_targets_table", "launch_latency_histogram",
                                "launch_latency_stats", "op_self_time", "cudnn_op_time", "kernel_counters")}
# queries of one run or a pair, kept whole: the parameters that name runs
PAIRS = {"kernel_delta": ("run_a", "run_b"), "launch_api_delta": ("run_a", "run_b"),
         "cpu_op_delta": ("run_a", "run_b"), "kernel_sequence": ("run_id",),
         "cold_extra_cpu": ("cold", "warm")}


def _run(store, name: str, **params) -> pd.DataFrame:
    """The rows of ``sql/<name>.sql``; those of the PER_RUN and PAIRS queries are kept."""
    if name in PER_RUN:
        rest = tuple(sorted((k, v) for k, v in params.items() if k != "run_ids"))
        return kept.per_run(store, (name, rest), params["run_ids"],
                            lambda ids: _read(store, name, run_ids=ids, **dict(rest)), PER_RUN[name])
    if name in PAIRS:
        return kept.value(store, (name, tuple(sorted(params.items()))), [params[k] for k in PAIRS[name]],
                          lambda: _read(store, name, **params))
    return _read(store, name, **params)


def _read(store, name: str, **params) -> pd.DataFrame:
    """The rows of ``sql/<name>.sql``. Only reads: the metrics layer's rows were written at ingest
    (or by a writing handle's upkeep, profiler/storage/migrations.py)."""
    return store.query(sql_text(name), params)


def _ids(run_ids) -> list[str]:
    return [str(r) for r in run_ids]


# ── runs & iterations ────────────────────────────────────────────────────────────────────────

def run_catalog(store) -> pd.DataFrame:
    """Every run, newest first: run_id, name, variant, shape (B×H×L×D), dtype, causal, cold,
    gpu_name, versions, iterations, kernels_per_iter, gpu_busy_us_per_iter, gpu_busy_pct,
    gpu_idle_pct, cpu_busy_us_per_iter, bound (all from the metrics layer), events, size_bytes,
    source, added_at."""
    ids = list(store.query("SELECT run_id FROM traces")["run_id"])
    return _run(store, "run_catalog", run_ids=ids)


# ── the metrics layer (definitions in sql/metrics.sql) ──────────────────────────────────────

def run_metrics(store, run_ids) -> pd.DataFrame:
    """One row per run (in ``run_ids`` order), means per iteration: wall_us_per_iter,
    gpu_busy_us_per_iter, gpu_idle_us_per_iter, carried_us_per_iter (GPU work launched before
    the iteration), kernel_us_per_iter, copy_us_per_iter, exposed_copy_us_per_iter,
    comm_us_per_iter, kernel_sum_us_per_iter, kernels_per_iter, cpu_busy_us_per_iter (launching
    thread), launch_api_us_per_iter, launch_calls_per_iter, sync_us_per_iter,
    idle_sync_us_per_iter, idle_cpu_us_per_iter, cpu_events_per_iter; shares of the iteration
    gpu_busy_pct, gpu_idle_pct, carried_pct, kernel_pct, comm_pct, exposed_copy_pct, cpu_busy_pct
    (busy + carried + idle = 100); bound ('gpu' | 'cpu' | 'sync' | 'mixed' | 'none') and
    profiler_overhead_likely."""
    return _run(store, "run_metrics", run_ids=_ids(run_ids))


def iteration_metrics(store, run_ids) -> pd.DataFrame:
    """Per run and iteration, in ns: name, start_ns, end_ns, wall_ns, gpu_active_ns, gpu_busy_ns,
    carried_ns, gpu_idle_ns, idle_sync_ns, idle_cpu_ns, kernel_ns, copy_ns, comm_ns,
    kernel_sum_ns, kernels, cpu_busy_ns, cpu_events, launch_api_ns, launch_calls, sync_ns."""
    return _run(store, "iteration_metrics", run_ids=_ids(run_ids))


def run_labels(store, run_ids) -> pd.DataFrame:
    """run_id, label (variant/shape or file name + short id), name, source, gpu_name, cold."""
    return _run(store, "run_labels", run_ids=_ids(run_ids))


def run_iterations(store, run_ids) -> pd.DataFrame:
    """run_id, iteration, name, start_ns, end_ns, dur_us (whole trace when none recorded)."""
    return _run(store, "run_iterations", run_ids=_ids(run_ids))


def iteration_bounds(store, run_ids, iteration: int) -> pd.DataFrame:
    """Per run, in ``run_ids`` order, the chosen iteration (its last one when it has fewer):
    run_id, iteration, name, start_ns, end_ns, dur_us. Runs missing from the store are left out."""
    iters = run_iterations(store, run_ids)
    if iters.empty:
        return iters
    last = iters.groupby("run_id")["iteration"].transform("max")
    chosen = iters[iters["iteration"] == last.clip(upper=iteration)]
    order = {run: i for i, run in enumerate(_ids(run_ids))}
    return chosen.sort_values("run_id", key=lambda ids: ids.map(order), ignore_index=True)


# ── kernels ──────────────────────────────────────────────────────────────────────────────────

def kernel_table(store, run_ids) -> pd.DataFrame:
    """Kernels per run by name: calls_per_iter, calls, total_us, us_per_iter, mean_us,
    gpu_time_share_pct, grid, block, registers_per_thread, shared_mem_bytes, est_occupancy_pct."""
    return _run(store, "kernel_table", run_ids=_ids(run_ids))


DETAIL_COLUMNS = ["tc_engine", "tc_precision", "tc_op", "tc_rule", "theory_occupancy_pct",
                  "occupancy_limiter", "reads_zero_but_ran", "launch_configs", "launch_config_list",
                  *COUNTER_COLUMNS]


def kernel_counters(store, run_ids) -> pd.DataFrame:
    """Per run and kernel name, the hardware counters attached to the run (``COUNTER_COLUMNS``;
    no rows for a run without counters)."""
    return _run(store, "kernel_counters", run_ids=_ids(run_ids))


def kernel_details(store, run_ids) -> pd.DataFrame:
    """``kernel_table`` plus, per kernel name: the theoretical occupancy letting kernels opt into
    large shared memory, time-weighted over its launches like the reported value
    (theory_occupancy_pct; occupancy_limiter: that of its most-used launch configuration, what
    Kineto's 0 % really means; reads_zero_but_ran flags a reported 0 % the calculator does not
    confirm), launch_configs (how many distinct configurations) and launch_config_list (each
    with its calls, when there are several), and the engine read from the name on the run's GPU
    vendor (tc_engine, tc_precision, tc_op, tc_rule). Kept per run (profiler/analysis/kept.py)."""
    return kept.per_run(store, "kernel_details", run_ids, lambda ids: _kernel_details(store, ids), "run_id")


def _kernel_details(store, run_ids) -> pd.DataFrame:
    kernels = kernel_table(store, run_ids)
    if kernels.empty:
        return kernels.reindex(columns=[*kernels.columns, *DETAIL_COLUMNS])
    devices = run_devices(store, run_ids)
    vendors = {run: tensor_cores.vendor_of(devices.get(run, (None, None))[1], names)
               for run, names in kernels.groupby("run_id")["kernel"]}
    table = tensor_cores.classify_frame(kernels, "kernel", vendors)
    configs = _run(store, "kernel_configs", run_ids=_ids(run_ids))
    resolved: dict[tuple, gpus.Device | None] = {}  # one lookup per run and device, not per configuration
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


def binary_size(n: float) -> str:
    """Bytes as B, KiB, MiB or GiB with one decimal (binary units)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


run_devices = reads.run_devices


def run_device(device_info, device_index=None) -> gpus.Device | None:
    """The one device lookup: the ``Device`` a run's kernel ran on, from a ``run_devices`` value
    (deviceProperties list, GPU name) and the kernel's device index; None when unknown."""
    props, gpu = device_info or (None, None)
    index = None if device_index is None or pd.isna(device_index) else int(device_index)
    try:
        return gpus.resolve_device(props, index, gpu)
    except ValueError:
        return None


def _theory(row, device: gpus.Device | None) -> occupancy.Occupancy:
    """The calculator on one launch configuration (a kernel_configs row) on its device."""
    threads = None if pd.isna(row.block_x) else int(row.block_x * row.block_y * row.block_z)
    blocks = None if pd.isna(row.grid_x) else int(row.grid_x * row.grid_y * row.grid_z)
    launch = occupancy.Launch(threads or 0, _opt(row.registers_per_thread), _opt(row.shared_mem_bytes), blocks)
    return occupancy.occupancy(launch, device)


def _opt(value) -> int | None:
    return None if pd.isna(value) else int(value)


# ── timeline ─────────────────────────────────────────────────────────────────────────────────

def timeline_marks(store, run_id: str, origin_ns: int, window_ns: tuple[int, int],
                   width_px: int = TIMELINE_WIDTH_PX, max_depth: int = 6,
                   max_marks: int = TIMELINE_MAX_MARKS) -> pd.DataFrame:
    """The marks of one timeline panel: ``window_ns`` is (start, end) relative to ``origin_ns``.
    Sub-pixel events are merged per lane in DuckDB; at most ``max_marks`` rows come back (the
    longest); ``marks_before_cap`` says how many there were. Times in µs from ``origin_ns``."""
    marks = _panel_marks(store, [(run_id, origin_ns, window_ns)], width_px, max_depth, max_marks)
    return marks.drop(columns="run_id")


def _panel_marks(store, panels: list[tuple[str, int, tuple[int, int]]], width_px: int,
                 max_depth: int, max_marks: int) -> pd.DataFrame:
    """Marks of several panels (run_id, origin_ns, window_ns) in one query, with a run_id column;
    kept per panels and limits (a timeline opened again with the same window costs no query)."""
    for _, _, (start, end) in panels:
        if end <= start:
            raise QueryError(f"time window {start}..{end} ns is empty: its end must follow its start")
    key = ("timeline_marks", tuple((str(r), int(o), (int(w[0]), int(w[1]))) for r, o, w in panels),
           int(width_px), int(max_depth), int(max_marks))
    return kept.value(store, key, list(dict.fromkeys(str(p[0]) for p in panels)),
                      lambda: _read_panel_marks(store, panels, width_px, max_depth, max_marks))


def _read_panel_marks(store, panels, width_px: int, max_depth: int, max_marks: int) -> pd.DataFrame:
    return _read(store, "timeline_marks", run_ids=[p[0] for p in panels],
                origins_ns=[int(p[1]) for p in panels],
                t0s_ns=[int(p[1] + p[2][0]) for p in panels],
                t1s_ns=[int(p[1] + p[2][1]) for p in panels],
                buckets_ns=[max(1, (p[2][1] - p[2][0]) // max(1, width_px)) for p in panels],
                max_depth=max_depth, max_marks=max_marks)


def timeline_extent_ns(store, run_ids, iteration: int) -> int:
    """Length of the longest chosen iteration among the runs (the default time window)."""
    bounds = iteration_bounds(store, run_ids, iteration)
    return max(int((bounds["end_ns"] - bounds["start_ns"]).max()), 1) if len(bounds) else 1


def timeline_panels(store, run_ids, iteration: int, window_ns: tuple[int, int],
                    shared_scale: bool, max_marks_total: int = TIMELINE_PAGE_MARKS) -> list:
    """[(run_id, step name, x domain in µs, marks)] per run, aligned at the start of its
    ``iteration`` (its last when it has fewer), all read in one query. Each panel draws only its
    own iteration (the window cut at the iteration's end); with ``shared_scale`` every panel's
    x domain is the whole window, else its own part of it. Marks per panel shrink with many runs."""
    bounds = iteration_bounds(store, run_ids, iteration)
    if bounds.empty:
        return []
    start, end = window_ns
    windows = [(start, min(end, max(r.end_ns - r.start_ns, start + 1))) for r in bounds.itertuples()]
    per_panel = max(300, min(TIMELINE_MAX_MARKS, max_marks_total // len(bounds)))
    marks = _panel_marks(store, [(r.run_id, int(r.start_ns), w)
                                 for r, w in zip(bounds.itertuples(), windows)],
                         TIMELINE_WIDTH_PX, 6, per_panel)
    by_run = dict(tuple(marks.groupby("run_id", sort=False)))
    empty = marks.iloc[0:0]
    return [(r.run_id, r.name, (start / 1e3, end / 1e3) if shared_scale else (w[0] / 1e3, w[1] / 1e3),
             by_run.get(r.run_id, empty).drop(columns="run_id").reset_index(drop=True))
            for r, w in zip(bounds.itertuples(), windows)]


def timeline_range_stats(store, run_ids, iteration: int, range_ns: tuple[int, int],
                         limit: int = 40) -> pd.DataFrame:
    """Per run, what ran inside ``range_ns`` (ns from the start of its ``iteration``, cut at the
    iteration's end like its panel): run_id, kind, name, events, total_ns (time inside the range)
    and self_ns, the ``limit`` longest."""
    bounds = iteration_bounds(store, run_ids, iteration)
    start, end = range_ns
    if end <= start:
        raise QueryError(f"time range {start}..{end} ns is empty: its end must follow its start")
    return _run(store, "timeline_range_stats", run_ids=list(bounds["run_id"]),
                t0s_ns=[int(r.start_ns + start) for r in bounds.itertuples()],
                t1s_ns=[int(r.start_ns + max(min(end, r.end_ns - r.start_ns), start + 1))
                        for r in bounds.itertuples()], max_depth=6, limit=limit)


# ── launches ─────────────────────────────────────────────────────────────────────────────────

def launch_api_table(store, run_ids) -> pd.DataFrame:
    """API calls per run by name: api_kind, category (launch/memcpy/memset/sync/other),
    calls_per_iter, calls, api_us_per_iter, mean_us, kernels_launched_per_iter,
    memops_launched_per_iter."""
    return _run(store, "launch_api_table", run_ids=_ids(run_ids))


def launch_targets_table(store, run_ids) -> pd.DataFrame:
    """What each API launched: run_id, api, api_kind, target_kind, target_name,
    launches_per_iter, launches, mean_target_us."""
    return _run(store, "launch_targets_table", run_ids=_ids(run_ids))


def launch_latency_histogram(store, run_ids) -> pd.DataFrame:
    """API start → kernel start: run_id, api, bin_start_us, bin_end_us, launches."""
    return _run(store, "launch_latency_histogram", run_ids=_ids(run_ids))


def launch_latency_stats(store, run_ids) -> pd.DataFrame:
    """API start → kernel start: run_id, api, launches, p50_us, p90_us, p99_us, max_us."""
    return _run(store, "launch_latency_stats", run_ids=_ids(run_ids))


# ── CPU cost ─────────────────────────────────────────────────────────────────────────────────

def iteration_cpu_gpu(store, run_ids) -> pd.DataFrame:
    """Per run and iteration: wall_us, cpu_busy_us (launching thread), cpu_op_self_us (all
    threads), launch_api_us, sync_us, gpu_busy_us, gpu_idle_us, gpu_kernel_us, gpu_memop_us."""
    return _run(store, "iteration_cpu_gpu", run_ids=_ids(run_ids))


def op_self_time(store, run_ids, limit: int = 15) -> pd.DataFrame:
    """The ``limit`` heaviest CPU ops per run: op, calls_per_iter, self_us_per_iter,
    total_us_per_iter, self_share_pct."""
    return _run(store, "op_self_time", run_ids=_ids(run_ids), limit=int(limit))


def cudnn_op_time(store, run_ids) -> pd.DataFrame:
    """Per run and iteration: cudnn_calls, cudnn_cpu_us (outermost cuDNN ops),
    cudnn_kernel_us (kernels they launched)."""
    return _run(store, "cudnn_op_time", run_ids=_ids(run_ids))


def run_cpu_summary(store, run_ids, per_iter: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per run: label, cold, iterations, mean per-iteration cpu_busy_us (launching
    thread), cpu_op_self_us, launch_api_us, sync_us, gpu_busy_us and gpu_kernel_us,
    first_iter_cpu_us vs later_iter_cpu_us (CPU op self time), gpu_busy_pct, gpu_idle_pct and
    the metrics layer's verdict ``bound``. ``per_iter``: an ``iteration_cpu_gpu`` result the
    caller already has."""
    per_iter = iteration_cpu_gpu(store, run_ids) if per_iter is None else per_iter
    labels = run_labels(store, run_ids)[["run_id", "label", "cold"]]
    if per_iter.empty:
        return labels.iloc[0:0]
    grouped = per_iter.sort_values("iteration").groupby("run_id")
    summary = grouped[["cpu_busy_us", "cpu_op_self_us", "launch_api_us", "sync_us", "gpu_busy_us",
                       "gpu_kernel_us"]].mean()
    summary["iterations"] = grouped.size()
    summary["first_iter_cpu_us"] = grouped["cpu_op_self_us"].first()
    summary["later_iter_cpu_us"] = grouped["cpu_op_self_us"].apply(lambda s: s.iloc[1:].mean())
    verdict = run_metrics(store, run_ids).set_index("run_id")[["gpu_busy_pct", "gpu_idle_pct", "bound"]]
    return labels.merge(summary.join(verdict).reset_index(), on="run_id")


SHAPE_KEYS = ["variant", "batch", "heads", "seq_len", "head_dim", "dtype", "causal"]


def cold_warm_table(store, run_ids, per_iter: pd.DataFrame | None = None) -> pd.DataFrame:
    """Captured runs of the same variant and shape, cold (first call of a fresh shape) against
    warm: the SHAPE_KEYS, cold_runs, warm_runs, mean per-iteration cold/warm cpu_op_self_us and
    gpu_kernel_us, and cpu_cold_over_warm. Only shapes with both a cold and a warm run."""
    per_iter = iteration_cpu_gpu(store, run_ids) if per_iter is None else per_iter
    per_run = per_iter.groupby("run_id")[["cpu_op_self_us", "gpu_kernel_us"]].mean()
    runs = run_shapes(store, run_ids).dropna(subset=["variant", "cold"]).join(per_run, on="run_id")
    runs["temp"] = runs["cold"].map({True: "cold", False: "warm"})
    table = runs.pivot_table(index=SHAPE_KEYS, columns="temp", dropna=False, aggfunc={
        "run_id": "count", "cpu_op_self_us": "mean", "gpu_kernel_us": "mean"})
    if table.empty or not {"cold", "warm"} <= set(table.columns.get_level_values(1)):
        return pd.DataFrame(columns=[*SHAPE_KEYS, "cold_runs", "warm_runs"])
    table.columns = [f"{temp}_{name}" for name, temp in table.columns]
    table = table.rename(columns={"cold_run_id": "cold_runs", "warm_run_id": "warm_runs"})
    table = table[(table["cold_runs"] > 0) & (table["warm_runs"] > 0)].reset_index()
    table["cpu_cold_over_warm"] = table["cold_cpu_op_self_us"] / table["warm_cpu_op_self_us"]
    return table


# ── compare ──────────────────────────────────────────────────────────────────────────────────

def kernel_sequence(store, run_id: str, iteration: int) -> pd.DataFrame:
    """Kernels and copies of one iteration in start order: seq, kind, name, stream, start_us
    (from the iteration start), dur_us, launch_api."""
    bounds = iteration_bounds(store, [run_id], iteration)
    if bounds.empty:
        raise UnknownRunError(f"run {run_id} is not in the store (deleted, or a mistyped link?)")
    row = bounds.iloc[0]
    return _run(store, "kernel_sequence", run_id=run_id, start_ns=int(row.start_ns),
                end_ns=int(row.end_ns))


def kernel_delta(store, run_a: str, run_b: str) -> pd.DataFrame:
    """Per kernel name, per iteration: calls_a, calls_b, calls_delta, us_a, us_b, us_delta,
    presence ('both' | 'only in a' | 'only in b')."""
    _check_pair(run_a, run_b)
    return _run(store, "kernel_delta", run_a=run_a, run_b=run_b)


def launch_api_delta(store, run_a: str, run_b: str) -> pd.DataFrame:
    """Per API name, per iteration: api_kind, calls_a/b/delta, cpu_us_a/b/delta, presence."""
    _check_pair(run_a, run_b)
    return _run(store, "launch_api_delta", run_a=run_a, run_b=run_b)


def _check_pair(run_a: str, run_b: str) -> None:
    if run_a == run_b:
        raise QueryError(f"compare needs two different runs; both sides are {run_a}")


def kernel_alignment(store, run_a: str, run_b: str, iteration: int) -> pd.DataFrame:
    """The kernel sequences of one iteration of each run, aligned by kernel family
    (``diff.align_kernel_sequences``): slot, seq_a, name_a, dur_us_a, seq_b, name_b, dur_us_b,
    family, status ('same' | 'same family' | 'replaced' | 'only in a' | 'only in b')."""
    _check_pair(run_a, run_b)
    return kept.value(store, ("kernel_alignment", run_a, run_b, int(iteration)), [run_a, run_b],
                      lambda: _kernel_alignment(store, run_a, run_b, iteration))


def _kernel_alignment(store, run_a: str, run_b: str, iteration: int) -> pd.DataFrame:
    seq_a = kernel_sequence(store, run_a, iteration).head(ALIGN_MAX_KERNELS)
    seq_b = kernel_sequence(store, run_b, iteration).head(ALIGN_MAX_KERNELS)
    return diff.align_kernel_sequences(seq_a, seq_b)


# ── store summary (command line) ─────────────────────────────────────────────────────────────

def trace_summary(store) -> list[dict]:
    """One dict per run, oldest first, JSON-ready (no NaN: missing values are None): run_id,
    name, source, variant, gpu, events, kernels, iterations, the metrics layer's per-iteration
    figures (kernels_per_iter, wall_us_per_iter, gpu_busy_us_per_iter, kernel_us_per_iter,
    copy_us_per_iter, comm_us_per_iter, carried_us_per_iter, gpu_busy_pct, gpu_idle_pct,
    carried_pct, span_busy_pct (TraceLens's first-to-last busy share), cpu_busy_us_per_iter,
    launch_api_us_per_iter, sync_us_per_iter, bound, profiler_overhead_likely), launch_apis {launch API name: calls per iteration}, added_at."""
    ids = list(store.query("SELECT run_id FROM traces")["run_id"])
    rows = _run(store, "trace_summary", run_ids=ids).to_dict("records")
    for row in rows:
        apis = row.pop("launch_apis")
        for key, value in row.items():
            row[key] = json_value(value)
        row["launch_apis"] = {} if apis is None else {str(k): float(v) for k, v in dict(apis).items()}
    return rows


def json_value(value):
    """A DataFrame cell as plain JSON data: NaN/NA/NaT → None, numpy scalars → Python,
    timestamps → ISO text."""
    if value is None or (not isinstance(value, (list, dict, str)) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value.item() if hasattr(value, "item") else value


# ── analysis (findings, compare CLI) ─────────────────────────────────────────────────────────

def memop_table(store, run_ids) -> pd.DataFrame:
    """Copies and sets per run by name: kind, calls_per_iter, bytes_per_iter, us_per_iter."""
    return _run(store, "memop_table", run_ids=_ids(run_ids))


def run_shapes(store, run_ids) -> pd.DataFrame:
    """run_id, variant, batch, heads, seq_len, head_dim, dtype, causal, cold, gpu_name."""
    return _run(store, "run_shapes", run_ids=_ids(run_ids))


def cpu_op_delta(store, run_a: str, run_b: str) -> pd.DataFrame:
    """CPU ops per iteration, by name: calls_a/b/delta, self_us_a/b/delta, presence."""
    _check_pair(run_a, run_b)
    return _run(store, "cpu_op_delta", run_a=run_a, run_b=run_b)
