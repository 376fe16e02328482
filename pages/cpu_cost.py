"""CPU cost: how much CPU each selected run spends to keep the GPU busy, per iteration, and why."""
import streamlit as st

from profiler import charts, narrative, queries, ui

Col = st.column_config
SUMMARY_COLUMNS = {
    "label": Col.TextColumn("run", width="medium"),
    "cold": Col.CheckboxColumn("cold", help="First call of a fresh shape, before any warm-up."),
    "iterations": Col.NumberColumn("iters"),
    "cpu_op_self_us": Col.NumberColumn("CPU ops µs / iter", format="%.1f",
                                       help="Self time of CPU ops, all threads, mean per iteration."),
    "first_iter_cpu_us": Col.NumberColumn("CPU µs, 1st iter", format="%.1f"),
    "later_iter_cpu_us": Col.NumberColumn("CPU µs, later iters", format="%.1f"),
    "launch_api_us": Col.NumberColumn("launch/API µs / iter", format="%.1f",
                                      help="Time inside runtime/driver calls: launch overhead."),
    "gpu_us": Col.NumberColumn("GPU µs / iter", format="%.1f", help="Kernels + copies."),
    "cpu_gpu_ratio": Col.NumberColumn("CPU ÷ GPU time", format="%.2f",
                                      help="CPU op time over GPU time per iteration: above 1 "
                                           "the GPU waits for the CPU."),
    "bound": Col.TextColumn("verdict", width="medium"),
}
OP_COLUMNS = {
    "run": Col.TextColumn("run", width="medium"),
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
st.caption("CPU time is the self time of CPU ops (time not spent in child ops), summed over "
           "threads; the ProfilerStep annotation itself is left out. GPU time sums kernel "
           "durations (overlapping streams count twice).")

with ui.guard(), queries.session(ui.get_store()) as store:
    labels = charts.label_map(queries.run_labels(store, runs))
    per_iter = queries.iteration_cpu_gpu(store, runs)
    summary = queries.run_cpu_summary(store, runs, per_iter)
    st.subheader("Is it CPU-bound?", divider="gray")
    st.dataframe(summary, column_config=SUMMARY_COLUMNS, column_order=list(SUMMARY_COLUMNS),
                 hide_index=True)
    ui.csv_download(summary, "cpu-summary")
    st.subheader("The cuDNN story", divider="gray")
    story = narrative.cudnn_story(queries.cudnn_op_time(store, runs),
                               queries.run_shapes(store, runs), labels)
    for paragraph in story:
        st.markdown(paragraph)
    with st.expander("CPU vs GPU time of every iteration", expanded=len(runs) <= 2):
        st.altair_chart(charts.cpu_gpu_chart(per_iter, labels))
    st.subheader("Cold vs warm", divider="gray")
    if not summary.empty:
        st.altair_chart(charts.cold_warm_chart(summary), width="stretch")
    pairs = queries.cold_warm_table(store, runs, per_iter)
    if pairs.empty:
        st.caption("No cold/warm pair among the selected runs (the same variant and shape captured "
                   "once cold, once warm); the chart above still compares first and later "
                   "iterations within each run.")
    else:
        st.dataframe(pairs, column_config=COLD_WARM_COLUMNS, hide_index=True)
    st.subheader("Self CPU time by op", divider="gray")
    ops = queries.op_self_time(store, runs)
    if ops.empty:
        st.info("The selected runs recorded no CPU ops.")
    else:
        st.altair_chart(charts.op_self_time_chart(ops, labels), width="stretch")
        with st.expander("Op table"):
            rows = charts.with_runs(ops, labels)
            st.dataframe(rows, column_config=OP_COLUMNS, column_order=list(OP_COLUMNS),
                         hide_index=True, width="stretch", height=min(36 + 35 * len(rows), 420))
            ui.csv_download(rows, "cpu-ops")
    ui.copy_link(state)
