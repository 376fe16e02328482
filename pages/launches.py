"""Launches: the runtime and driver API calls of each selected run, what they launched, and how
long the GPU took to start the work (launch latency)."""
import streamlit as st

from profiler.analysis.reads import queries, run_queries
from profiler.present import charts, ui

Col = st.column_config
RUN = {"run": ui.run_column()}
API_COLUMNS = {
    **RUN,
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
    **RUN,
    "api": Col.TextColumn("API"),
    "target_kind": Col.TextColumn("launched"),
    "target_name": Col.TextColumn("kernel / copy", width="large"),
    "launches_per_iter": Col.NumberColumn("per iter", format="%.1f"),
    "mean_target_us": Col.NumberColumn("mean GPU µs", format="%.2f"),
}
LATENCY_COLUMNS = {
    **RUN,
    "api": Col.TextColumn("API"),
    "launches": Col.NumberColumn("launches"),
    "p50_us": Col.NumberColumn("p50 µs", format="%.1f"),
    "p90_us": Col.NumberColumn("p90 µs", format="%.1f"),
    "p99_us": Col.NumberColumn("p99 µs", format="%.1f"),
    "max_us": Col.NumberColumn("max µs", format="%.1f"),
}


def table(df, columns, name: str) -> None:
    ui.table(df, column_config=columns, column_order=list(columns), hide_index=True,
                 width="stretch", height=min(36 + 35 * len(df), 380), placeholder="—")
    ui.csv_download(df, name)


st.title("Launches")
state = ui.view_state("launches")
runs = ui.require_runs(state)
st.caption("Every CUDA/HIP runtime and driver API call, grouped by API. Launch APIs differ by "
           "library: PyTorch's own kernels use cudaLaunchKernel, cuDNN and newer cuBLAS the driver's "
           "cuLaunchKernel(Ex). Launch latency is how long a kernel waited after its launch call "
           "started: microseconds when the GPU is idle, much longer when work is queued ahead.")

with ui.guard(), ui.get_store().session() as store:
    labels = charts.label_map(run_queries.run_labels(store, runs))
    apis = queries.launch_api_table(store, runs)
    if apis.empty:
        st.info("The selected runs recorded no runtime or driver API calls.")
    else:
        state, log = ui.log_axis(state)
        ui.kept_chart(store, ("launch_api", log), runs, lambda: charts.launch_api_chart(apis, labels, log=log),
                        width="stretch")
        with ui.folded("Launch latency distribution", "launches-latency-histogram", expanded=len(runs) <= 2) as open_:
            if open_:
                hist = queries.launch_latency_histogram(store, runs)
                if hist.empty:
                    st.caption("No launch call of the selected runs is linked to a kernel (by correlation id).")
                else:
                    ui.kept_chart(store, ("latency_histogram",), runs,
                                  lambda: charts.latency_histogram_chart(hist, labels))
        table(charts.with_runs(apis, labels), API_COLUMNS, "launch-apis")
        with ui.folded("Which kernels each API launched (linked by correlation id)", "launches-targets") as open_:
            if open_:
                table(charts.with_runs(queries.launch_targets_table(store, runs), labels),
                      TARGET_COLUMNS, "launch-targets")
        with ui.folded("Launch latency percentiles (API call start → kernel start)", "launches-latency") as open_:
            if open_:
                table(charts.with_runs(queries.launch_latency_stats(store, runs), labels),
                      LATENCY_COLUMNS, "launch-latency")
    ui.copy_link(state)
