"""CPU cost: how much CPU each selected run spends to keep the GPU busy, per iteration, and why."""
import streamlit as st

from profiler.analysis.reads import queries, run_queries
from profiler.present import charts, narrative, ui

Col = st.column_config
SUMMARY_COLUMNS = {
    "label": ui.run_column(),
    "cold": Col.CheckboxColumn("cold", help="First call of a fresh shape, before any warm-up."),
    "iterations": Col.NumberColumn("iters"),
    "cpu_busy_us": Col.NumberColumn("CPU µs / iter", format="%.1f",
                                    help="Wall time the launching thread spent in recorded CPU "
                                         "ops and API calls, mean per iteration."),
    "cpu_op_self_us": Col.NumberColumn("CPU ops self µs / iter", format="%.1f",
                                       help="Self time of CPU ops, all threads, mean per iteration."),
    "first_iter_cpu_us": Col.NumberColumn("CPU ops µs, 1st iter", format="%.1f"),
    "later_iter_cpu_us": Col.NumberColumn("CPU ops µs, later iters", format="%.1f"),
    "launch_api_us": Col.NumberColumn("launch µs / iter", format="%.1f",
                                      help="Time inside kernel and copy launch calls."),
    "sync_us": Col.NumberColumn("sync µs / iter", format="%.1f",
                                help="Time inside synchronize calls: waiting for the GPU, "
                                     "not launch overhead."),
    "gpu_busy_us": Col.NumberColumn("GPU busy µs / iter", format="%.1f",
                                    help="Kernels + copies, overlapping streams counted once."),
    "gpu_idle_pct": Col.NumberColumn("GPU idle %", format="%.1f"),
    "bound": Col.TextColumn("bound", help="gpu: the GPU idles under 10 % of the iteration; cpu: "
                            "the launching thread was working while the GPU idled; sync: it was "
                            "waiting in a synchronize call when the GPU ran dry."),
}
OP_COLUMNS = {
    "run": ui.run_column(),
    "op": Col.TextColumn("op", width="large"),
    "calls_per_iter": Col.NumberColumn("calls / iter", format="%.1f"),
    "self_us_per_iter": Col.NumberColumn("self µs / iter", format="%.1f"),
    "total_us_per_iter": Col.NumberColumn("incl. children µs / iter", format="%.1f"),
    "self_share_pct": Col.ProgressColumn("share of CPU self time", format="%.1f%%",
                                         min_value=0, max_value=100),
}

COLD_WARM_COLUMNS = {
    "cold_cpu_op_self_us": Col.NumberColumn("cold CPU µs / iter", format="%.1f"),
    "warm_cpu_op_self_us": Col.NumberColumn("warm CPU µs / iter", format="%.1f"),
    "cpu_cold_over_warm": Col.NumberColumn("cold ÷ warm CPU", format="%.1f×"),
    "cold_gpu_kernel_us": Col.NumberColumn("cold GPU µs / iter", format="%.1f"),
    "warm_gpu_kernel_us": Col.NumberColumn("warm GPU µs / iter", format="%.1f"),
}

st.title("CPU cost")
state = ui.view_state("cpu-cost")
runs = ui.require_runs(state)
st.caption("CPU µs is the wall time of the thread that launches the GPU work; CPU ops self "
           "time (time not spent in child ops) is summed over threads, the ProfilerStep "
           "annotation left out. GPU busy time counts overlapping streams once.")

with ui.guard(), ui.get_store().session() as store:
    labels = charts.label_map(run_queries.run_labels(store, runs))
    per_iter = queries.iteration_cpu_gpu(store, runs)
    summary = queries.run_cpu_summary(store, runs, per_iter)
    st.subheader("Is it CPU-bound?", divider="gray")
    ui.table(summary, column_config=SUMMARY_COLUMNS, column_order=list(SUMMARY_COLUMNS),
                 hide_index=True, placeholder="—")
    ui.csv_download(summary, "cpu-summary")
    story = narrative.cudnn_story(queries.cudnn_op_time(store, runs),
                                  queries.run_shapes(store, runs), labels)
    if story:  # only runs whose cuDNN attention calls launched cuDNN kernels have one
        st.subheader("The cuDNN story", divider="gray")
        for paragraph in story:
            st.markdown(paragraph)
    with ui.folded("CPU vs GPU time of every iteration", "cpu-cost-iterations", expanded=len(runs) <= 2) as open_:
        if open_:
            ui.kept_chart(store, ("cpu_gpu",), runs, lambda: charts.cpu_gpu_chart(per_iter, labels))
    st.subheader("Cold vs warm", divider="gray")
    state, log = ui.log_axis(state)
    if not summary.empty:
        ui.kept_chart(store, ("cold_warm", log), runs, lambda: charts.cold_warm_chart(summary, log=log),
                        width="stretch")
    pairs = queries.cold_warm_table(store, runs, per_iter)
    if pairs.empty:
        st.caption("No cold/warm pair among the selected runs (the same variant and shape captured "
                   "once cold, once warm); the chart above still compares first and later "
                   "iterations within each run.")
    else:
        ui.table(pairs, column_config=COLD_WARM_COLUMNS, hide_index=True, placeholder="—")
    st.subheader("Self CPU time by op", divider="gray")
    ops = queries.op_self_time(store, runs)
    if ops.empty:
        st.info("The selected runs recorded no CPU ops.")
    else:
        ui.kept_chart(store, ("op_self_time", log), runs, lambda: charts.op_self_time_chart(ops, labels, log=log),
                        width="stretch")
        with ui.folded("Op table", "cpu-cost-ops") as open_:
            if open_:
                rows = charts.with_runs(ops, labels)
                ui.table(rows, column_config=OP_COLUMNS, column_order=list(OP_COLUMNS), hide_index=True,
                         width="stretch", height=min(36 + 35 * len(rows), 420), placeholder="—")
                ui.csv_download(rows, "cpu-ops")
    ui.copy_link(state)
