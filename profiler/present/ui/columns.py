"""The columns (labels, units, help), in display order, of the Kernels page's tables, the
Timeline's selected range, the Events page's two lists, the runs page's measurement records and Compare's tables."""
from __future__ import annotations

import streamlit as st

from profiler.present.ui.tables import run_column

Col = st.column_config
KERNEL_COLUMNS = {  # what a kernel engineer reads first (time, math engine, occupancy), launch shape after
    "run": run_column(),
    "name": Col.TextColumn("kernel", width="medium", help="Short name; the full one is the last column."),
    "calls_per_iter": Col.NumberColumn("calls / iter", format="%.1f"),
    "us_per_iter": Col.NumberColumn("µs / iter", format="%.1f"),
    "gpu_time_share_pct": Col.NumberColumn("% of summed kernel time", format="%.1f %%",
                                           help="This kernel's time over the run's summed kernel time "
                                                "(the Attention page's denominator)."),
    "tc_engine": Col.TextColumn("engine", help="Tensor / matrix cores, CUDA cores / vector ALUs, "
                                "communication or unknown, read from the name (never guessed)."),
    "tc_precision": Col.TextColumn("precision"),
    "est_occupancy_pct": Col.NumberColumn(
        "reported occ. %", format="%.1f",
        help="Kineto's static estimate, time-weighted over the launches. It reads 0 for kernels "
             "that opt into more than 48 KiB of shared memory (cuDNN, cuBLAS nvjet, flash), "
             "however they really run."),
    "theory_occupancy_pct": Col.NumberColumn(
        "theoretical occ. %", format="%.1f",
        help="CUDA occupancy calculator per launch (opt-in shared memory), per SM from the limiter "
             "as Nsight Compute defines it (a small grid lowers the GPU's average, not this), "
             "time-weighted over the launches like the reported value."),
    "occupancy_achieved_pct": Col.NumberColumn(
        "achieved occ. % (ncu)", format="%.1f",
        help="Warps active per cycle over the SM's maximum, measured by Nsight Compute's hardware "
             "counters on one counted warm call (sm__warps_active): what the kernel really kept "
             "resident, against the theoretical value. Empty without counters."),
    "reads_zero_but_ran": Col.CheckboxColumn(
        "0 % but ran", help="The trace reports 0 % occupancy, yet the kernel ran: see the "
                            "theoretical value and what limits it."),
    "occupancy_limiter": Col.TextColumn("limited by"),
    "ncu_limiter_text": Col.TextColumn("limited by (ncu)", help="The resources Nsight Compute says "
                                       "allow the fewest blocks per SM (launch__occupancy_limit_*)."),
    "sm_throughput_pct": Col.NumberColumn("SM throughput % (ncu)", format="%.1f"),
    "dram_throughput_pct": Col.NumberColumn("DRAM throughput % (ncu)", format="%.1f"),
    "l2_throughput_pct": Col.NumberColumn("L2 throughput % (ncu)", format="%.1f"),
    "tensor_pipe_active_pct": Col.NumberColumn("tensor pipes active % (ncu)", format="%.1f",
                                               help="Share of active cycles the tensor pipes were busy."),
    "local_memory_instructions": Col.NumberColumn(
        "local-memory instr. (ncu)", format="%d",
        help="Local-memory load and store instructions (warp level) of the counted launch: register "
             "spills, or arrays the compiler placed in local memory. 0 means no spills."),
    "grid": Col.TextColumn("grid", help="Grid, block, registers and shared memory: the launch configuration "
                                        "most calls used (all four from the same launches)."),
    "block": Col.TextColumn("block"),
    "registers_per_thread": Col.NumberColumn("regs / thread"),
    "shared_mem_kib": Col.NumberColumn("shared mem (KiB)", format="%.1f"),
    "launch_configs": Col.NumberColumn("launch configs", help="Distinct grid / block / registers "
                                       "/ shared memory combinations; listed when several."),
    "launch_config_list": Col.TextColumn("configs (calls)", width="large"),
    "mean_us": Col.NumberColumn("mean µs", format="%.2f"),
    "calls": Col.NumberColumn("calls (all iters)"),
    "total_us": Col.NumberColumn("µs (all iters)", format="%.1f"),
    "kernel": Col.TextColumn("full name (select a cell and copy)", width="large"),
}

BREAKDOWN_COLUMNS = {  # the metrics layer's per-iteration figures (profiler/storage/sql/metrics.sql)
    "label": run_column(),
    "wall_us_per_iter": Col.NumberColumn("iteration µs", format="%.1f"),
    "gpu_work_us_per_iter": Col.NumberColumn("GPU work µs / iter", format="%.1f",
                                             help="Kernels, copies and sets launched in the iteration, "
                                                  "overlapping streams counted once, wherever they ran."),
    "gpu_busy_us_per_iter": Col.NumberColumn("GPU own busy µs / iter", format="%.1f",
                                             help="The part of that inside the iteration."),
    "gpu_busy_pct": Col.NumberColumn("own busy % of iteration", format="%.1f"),
    "gpu_idle_pct": Col.NumberColumn("idle % of iteration", format="%.1f", help="No GPU work at all."),
    "carried_pct": Col.NumberColumn("carried % of iteration", format="%.1f",
                                    help="The GPU ran only work launched before the iteration began "
                                         "(in an earlier one, or before profiling started)."),
    "span_busy_pct": Col.NumberColumn("busy % first to last GPU event", format="%.1f",
                                      help="TraceLens's busy share: all GPU work (own or carried) over "
                                           "the time from the first GPU event to the last."),
    "kernel_us_per_iter": Col.NumberColumn("kernels µs / iter", format="%.1f"),
    "comm_us_per_iter": Col.NumberColumn("communication µs / iter", format="%.1f"),
    "exposed_copy_us_per_iter": Col.NumberColumn("copies alone µs / iter", format="%.1f",
                                                 help="Copy or set time with no kernel running."),
    "bound": Col.TextColumn("bound"),
}

ROOF_COLUMNS = {
    "run": run_column(),
    "tflops": Col.NumberColumn("achieved TFLOP/s", format="%.2f"),
    "roof_tflops": Col.NumberColumn("roof TFLOP/s", format="%.1f"),
    "pct_of_roof": Col.NumberColumn("% of roof", format="%.1f"),
    "bound": Col.TextColumn("bound by", help="memory below the ridge point, compute above it"),
    "bytes_per_iter": Col.NumberColumn("bytes / iter", format="%.3e", help="Read + written by the modelled ops."),
    "flops_per_iter": Col.NumberColumn("FLOPs / iter", format="%.3e"),
    "tbps": Col.NumberColumn("TB/s", format="%.2f"),
    "intensity": Col.NumberColumn("FLOP / byte", format="%.1f"),
    "engine": Col.TextColumn("engine"), "dtype": Col.TextColumn("dtype"),
    "peak_source": Col.TextColumn("peaks from"),
    "suspect": Col.TextColumn("share above 100 %", width="medium",
                              help="Never shown: the model (FLOPs / bytes) or the peak (SKU) is wrong; this says which."),
}

RANGE_COLUMNS = {  # the Timeline's selected range: what ran in it, per run and name
    "run": Col.TextColumn("run"), "kind": Col.TextColumn("kind"),
    "name": Col.TextColumn("name", width="large", help="The full name as the trace wrote it."),
    "events": Col.NumberColumn("count"), "total": Col.TextColumn("total (in range)"),
    "self_time": Col.TextColumn("self", help="Ops: their own time, without the ops inside them."),
}

KERNEL_EVENT_COLUMNS = {  # the Events page: one kernel launch a row; what launched it before the run
    "name": Col.TextColumn("kernel", width=560, help="The kernel's full name (hover a cell to read "
                           "all of it; copying a cell copies it whole)."),
    "dur_us": Col.NumberColumn("µs", format="%.2f", help="This launch's duration on the GPU."),
    "launch_op": Col.TextColumn("launching op", width="medium",
                                help="The innermost CPU op whose call launched it (External id)."),
    "api": Col.TextColumn("API", help="The runtime / driver call that launched it (correlation id)."),
    "run": run_column(),
    "step": Col.NumberColumn("step", help="Its iteration (0 = the first ProfilerStep)."),
    "start_in_step_us": Col.NumberColumn("start µs in step", format="%.1f"),
    "start_ms": Col.NumberColumn("start ms in trace", format="%.3f"),
    "stream": Col.NumberColumn("stream"),
    "grid": Col.TextColumn("grid"),
    "block": Col.TextColumn("block"),
    "device": Col.NumberColumn("device"),
    "correlation": Col.NumberColumn("correlation"),
}
OP_EVENT_COLUMNS = {  # the Events page: one CPU op call a row
    "name": Col.TextColumn("op", width=360),
    "dur_us": Col.NumberColumn("µs", format="%.2f"),
    "self_us": Col.NumberColumn("self µs", format="%.2f", help="Its time minus its children's."),
    "kernels": Col.NumberColumn("kernels launched", help="Kernels its own launch calls started."),
    "parent": Col.TextColumn("inside", width="medium"),
    "run": run_column(),
    "depth": Col.NumberColumn("depth"),
    "step": Col.NumberColumn("step"),
    "start_in_step_us": Col.NumberColumn("start µs in step", format="%.1f"),
    "start_ms": Col.NumberColumn("start ms in trace", format="%.3f"),
    "thread": Col.TextColumn("pid/tid"),
    "cat": Col.TextColumn("category"),
    "input_dims": Col.TextColumn("input dims", width="medium"),
}
RECORD_COLUMNS = {  # the runs page: how each selected run was measured (conditions.record_table)
    "run_id": None, "label": "run", "sampled": "sampled", "sm_clock_mhz": "SM MHz", "mem_clock_mhz": "memory MHz",
    "power_w": "power W", "temp_c": "°C", "throttled": "throttled", "throttle_reasons": "throttle reasons",
    "clocks_locked": "clocks locked", "l2_flushed": "L2 flushed", "l2_cold_check": "cold run's first kernel",
    "other_processes": "other GPU processes", "versions": "versions", "kernel_vs_wall_pct": "kernel vs loop %",
    "kernel_vs_graph_pct": "kernel vs graph %",
}
ALIGN_COLUMNS = {  # Compare: one iteration's kernel sequences of runs a and b, slot by slot
    "status": Col.TextColumn("status"),
    "name_a": Col.TextColumn("kernel in a", width="large"),
    "dur_us_a": Col.NumberColumn("µs (a)", format="%.2f"),
    "name_b": Col.TextColumn("kernel in b", width="large"),
    "dur_us_b": Col.NumberColumn("µs (b)", format="%.2f"),
    "family": Col.TextColumn("job (kernel family)"),
}
DELTA_COLUMNS = {  # Compare: each kernel's calls and time per iteration, b - a
    "kernel": Col.TextColumn("kernel / copy", width="large"),
    "presence": Col.TextColumn("in"),
    "calls_a": Col.NumberColumn("calls / iter (a)", format="%.1f"),
    "calls_b": Col.NumberColumn("calls / iter (b)", format="%.1f"),
    "calls_delta": Col.NumberColumn("Δ calls", format="%+.1f"),
    "us_a": Col.NumberColumn("µs / iter (a)", format="%.1f"),
    "us_b": Col.NumberColumn("µs / iter (b)", format="%.1f"),
    "us_delta": Col.NumberColumn("Δ µs", format="%+.1f"),
}
BASELINE_COLUMNS = {  # Compare: the metrics layer's per-iteration figures against the baseline, as on the runs and kernels pages
    "side": run_column(),
    "times_baseline": Col.NumberColumn("µs / call × baseline", format="%.2f", help="Time per call over the "
                                       "baseline's (runs of the baseline's shape only)."),
    "gpu_work_us_per_iter": Col.NumberColumn("GPU work µs / iter", format="%.1f",
                                             help="The GPU work one iteration launched, wherever it ran."),
    "gpu_busy_us_per_iter": Col.NumberColumn("GPU own busy µs / iter", format="%.1f"),
    "gpu_busy_pct": Col.NumberColumn("own busy % of iteration", format="%.1f"),
    "carried_pct": Col.NumberColumn("carried % of iteration", format="%.1f",
                                    help="GPU work launched before the iteration began (earlier, or before profiling)."),
    "gpu_idle_pct": Col.NumberColumn("idle % of iteration", format="%.1f"),
    "kernel_us_per_iter": Col.NumberColumn("kernels µs / iter", format="%.1f"),
    "cpu_busy_us_per_iter": Col.NumberColumn("CPU µs / iter", format="%.1f"),
    "sync_us_per_iter": Col.NumberColumn("sync µs / iter", format="%.1f"),
    "bound": Col.TextColumn("bound"),
}
API_DELTA_COLUMNS = {  # Compare: each launch API's calls and CPU time per iteration, b - a
    "api": Col.TextColumn("API"), "api_kind": Col.TextColumn("kind"),
    "presence": Col.TextColumn("in"),
    "calls_a": Col.NumberColumn("calls / iter (a)", format="%.1f"),
    "calls_b": Col.NumberColumn("calls / iter (b)", format="%.1f"),
    "calls_delta": Col.NumberColumn("Δ calls", format="%+.1f"),
    "cpu_us_delta": Col.NumberColumn("Δ CPU µs / iter", format="%+.1f"),
}
