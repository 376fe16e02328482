"""Launches: the runtime and driver API calls of each selected run, what they launched, and how
long the GPU took to start the work (launch latency)."""
import streamlit as st

from profiler import charts, markup, queries, ui

Col = st.column_config
API_COLUMNS = {
    "api": Col.TextColumn("API", width="medium"),
    "api_kind": Col.TextColumn("kind", help="runtime (cuda*/hip*) or driver (cu*) API"),
    "category": Col.TextColumn("category"),
    "calls_per_iter": Col.NumberColumn("calls / iter", format="%.1f"),
    "api_us_per_iter": Col.NumberColumn("µs in call / iter", format="%.1f"),
    "mean_us": Col.NumberColumn("mean µs / call", format="%.2f"),
    "kernels_launched_per_iter": Col.NumberColumn("kernels launched / iter", format="%.1f"),
    "memops_launched_per_iter": Col.NumberColumn("copies / sets launched / iter", format="%.1f"),
}
TARGET_COLUMNS = {
    "api": Col.TextColumn("API"),
    "target_kind": Col.TextColumn("launched"),
    "target_name": Col.TextColumn("kernel / copy", width="large"),
    "launches_per_iter": Col.NumberColumn("per iter", format="%.1f"),
    "mean_target_us": Col.NumberColumn("mean GPU µs", format="%.2f"),
}
LATENCY_COLUMNS = {
    "api": Col.TextColumn("API"),
    "launches": Col.NumberColumn("launches"),
    "p50_us": Col.NumberColumn("p50 µs", format="%.1f"),
    "p90_us": Col.NumberColumn("p90 µs", format="%.1f"),
    "p99_us": Col.NumberColumn("p99 µs", format="%.1f"),
    "max_us": Col.NumberColumn("max µs", format="%.1f"),
}


def run_tables(run: str, label: str, apis, targets, stats) -> None:
    st.subheader(markup.md(label), divider="gray")
    st.dataframe(apis, column_config=API_COLUMNS, column_order=list(API_COLUMNS),
                 hide_index=True, placeholder="—")
    ui.csv_download(apis, f"launch-apis-{run}")
    st.markdown("**Which kernels each API launched** (linked by correlation id)")
    st.dataframe(targets, column_config=TARGET_COLUMNS, column_order=list(TARGET_COLUMNS),
                 hide_index=True, placeholder="—")
    ui.csv_download(targets, f"launch-targets-{run}")
    st.markdown("**Launch latency** (API call start → kernel start)")
    st.dataframe(stats, column_config=LATENCY_COLUMNS, column_order=list(LATENCY_COLUMNS),
                 hide_index=True, placeholder="—")
    ui.csv_download(stats, f"launch-latency-{run}")


st.title("Launches")
state = ui.view_state("launches")
runs = ui.require_runs(state)
st.caption("Every CUDA/HIP runtime and driver API call, grouped by API. Launch APIs differ by "
           "library: PyTorch's own kernels use cudaLaunchKernel, cuDNN and newer cuBLAS the driver's "
           "cuLaunchKernel(Ex). Launch latency is how long a kernel waited after its launch call "
           "started: microseconds when the GPU is idle, much longer when work is queued ahead.")

with ui.guard(), queries.session(ui.get_store()) as store:
    labels = charts.label_map(queries.run_labels(store, runs))
    apis = queries.launch_api_table(store, runs)
    if apis.empty:
        st.info("The selected runs recorded no runtime or driver API calls.")
    else:
        st.altair_chart(charts.launch_api_chart(apis, labels), width="stretch")
        hist = queries.launch_latency_histogram(store, runs)
        if not hist.empty:
            st.altair_chart(charts.latency_histogram_chart(hist, labels), width="stretch")
        targets = charts.per_run(queries.launch_targets_table(store, runs), runs)
        stats = charts.per_run(queries.launch_latency_stats(store, runs), runs)
        for (run, api_rows), (_, target_rows), (_, stat_rows) in zip(
                charts.per_run(apis, runs), targets, stats):
            run_tables(run, labels.get(run, run), api_rows, target_rows, stat_rows)
    ui.copy_link(state)
