"""Kernels: what ran on the GPU in each selected run, per iteration, side by side."""
import streamlit as st

from profiler import charts, queries, roofline, ui

Col = st.column_config
COLUMNS = {  # what a kernel engineer reads first (time, math engine, occupancy), launch shape after
    "run": Col.TextColumn("run", width="medium"),
    "name": Col.TextColumn("kernel", width="medium", help="Short name; the full one is the last column."),
    "calls_per_iter": Col.NumberColumn("calls / iter", format="%.1f"),
    "us_per_iter": Col.NumberColumn("µs / iter", format="%.1f"),
    "gpu_time_share_pct": Col.NumberColumn("share of the run's GPU time", format="%.1f %%"),
    "tc_engine": Col.TextColumn("math", help="Tensor cores or CUDA cores, read from the name."),
    "tc_precision": Col.TextColumn("precision"),
    "est_occupancy_pct": Col.NumberColumn(
        "reported occ. %", format="%.0f",
        help="Kineto's static estimate. It reads 0 for kernels that opt into more than 48 KB of "
             "shared memory (cuDNN, cuBLAS nvjet, flash), however they really run."),
    "theory_occupancy_pct": Col.NumberColumn(
        "theoretical occ. %", format="%.1f",
        help="CUDA occupancy calculator with opt-in shared memory, capped by the grid size."),
    "reads_zero_but_ran": Col.CheckboxColumn(
        "0 % but ran", help="The trace reports 0 % occupancy, yet the kernel ran: see the "
                            "theoretical value and what limits it."),
    "occupancy_limiter": Col.TextColumn("limited by"),
    "grid": Col.TextColumn("grid"),
    "block": Col.TextColumn("block"),
    "registers_per_thread": Col.NumberColumn("regs / thread"),
    "shared_mem_bytes": Col.NumberColumn("shared mem (B)", format="localized"),
    "mean_us": Col.NumberColumn("mean µs", format="%.2f"),
    "calls": Col.NumberColumn("calls (all iters)"),
    "total_us": Col.NumberColumn("µs (all iters)", format="%.1f"),
    "kernel": Col.TextColumn("full name (select a cell and copy)", width="large"),
}

ROOF_COLUMNS = {
    "variant": Col.TextColumn("variant"),
    "achieved_tflops": Col.NumberColumn("achieved TFLOP/s", format="%.2f"),
    "bound_tflops": Col.NumberColumn("roof TFLOP/s", format="%.1f"),
    "pct_of_bound": Col.NumberColumn("% of roof", format="%.1f"),
    "bound": Col.TextColumn("bound by", help="compute or memory, at this arithmetic intensity"),
    "achieved_gbps": Col.NumberColumn("GB/s (minimum bytes)", format="%.0f"),
    "intensity_flop_per_byte": Col.NumberColumn("FLOP / byte", format="%.1f"),
    "precision": Col.TextColumn("precision"),
    "peak_source": Col.TextColumn("peaks from"),
}


def roofline_section(store, runs, labels) -> None:
    st.subheader("Roofline", divider="gray")
    roof = charts.roofline_usable(roofline.roofline_table(store, runs))
    if roof.empty:
        st.info("No roofline: none of the selected runs carries an attention shape (captured "
                "runs do; uploaded traces do not).")
        return
    st.caption("Attention FLOPs (causal: the lower triangle) and the minimum bytes (Q, K, V read "
               "and O written once) from each captured run's shape, over its GPU time per "
               "iteration, against the GPU's datasheet peaks.")
    st.altair_chart(charts.roofline_chart(roof, labels), width="stretch")
    st.dataframe(roof, column_config=ROOF_COLUMNS, column_order=list(ROOF_COLUMNS),
                 hide_index=True)


st.title("Kernels")
state = ui.view_state("kernels")
runs = ui.require_runs(state)
st.caption("GPU kernels of each selected run grouped by name. Per-iteration numbers divide by the "
           "run's ProfilerStep count (a run without steps counts as one iteration). Click a column "
           "header to sort.")

with ui.guard(), queries.session(ui.get_store()) as store:
    labels = charts.label_map(queries.run_labels(store, runs))
    found = st.text_input("Search kernels", value=state.filter("q", ""),
                          placeholder="part of a kernel name, e.g. flash, gemm, Memcpy")
    if found != (state.filter("q") or ""):
        state = ui.update_view(state, filters=state.with_filter("q", found).filters)
    table = charts.search(queries.kernel_details(store, runs), "kernel", found)
    if table.empty:
        st.info("No kernels match." if found else "The selected runs recorded no GPU kernels.")
    else:
        st.altair_chart(charts.kernel_time_chart(table, labels), width="stretch")
        rows = charts.with_runs(table, labels)
        st.caption(f"{len(rows)} kernel names over {len(runs)} run(s), heaviest first per run")
        st.dataframe(rows, column_config=COLUMNS, column_order=list(COLUMNS), hide_index=True,
                     width="stretch", height=min(36 + 35 * len(rows), 420), placeholder="—")
        ui.csv_download(rows, "kernels")
    roofline_section(store, runs, labels)
    ui.copy_link(state)
