"""Kernels: what ran on the GPU in each selected run, per iteration, side by side."""
import streamlit as st

from profiler.analysis.model import counters
from profiler.analysis.reads import kernel_queries, roofline, run_queries, unmodelled
from profiler.analysis.findings import verdict
from profiler.present import charts, curve_charts, markup, ui

def breakdown_section(store, runs, labels) -> None:
    """Where each run's iteration goes on the GPU, and what bounds it."""
    st.subheader("GPU time per iteration", divider="gray")
    metrics = run_queries.run_metrics(store, runs)
    metrics = metrics.assign(label=metrics["run_id"].map(labels).fillna(metrics["run_id"]))
    ui.table(metrics, column_config=ui.BREAKDOWN_COLUMNS, column_order=list(ui.BREAKDOWN_COLUMNS),
                 hide_index=True, placeholder="—")
    for row in metrics.itertuples():
        st.text(markup.printable(verdict.bound_sentence(row._asdict(), row.label)))


def roofline_section(store, runs, labels) -> None:
    """The roofline of the Attention page (the same chart), folded: detail below the kernels."""
    with ui.folded("Roofline: achieved TFLOP/s under the GPU's roofs", "kernels-roofline",
                   expanded=len(runs) <= 1) as open_:
        if not open_:
            return
        roof = curve_charts.roofline_usable(roofline.roofline_table(store, runs))
        if roof.empty:
            st.info("No roofline: no modelled op of the selected runs launched GPU work. "
                    + markup.md(" ".join(f"{labels.get(r, r)}: {unmodelled.sentence(store, r)}" for r in runs)))
            return
        st.caption("FLOPs and bytes moved per iteration by the attention, GEMM and memory-bound ops "
                   "(from their recorded shapes), over their kernel time, under the GPU's datasheet "
                   "roofs: the memory slope and one ceiling per engine. Per op: the Attention page.")
        ui.kept_chart(store, ("roofline", False), runs,
                        lambda: curve_charts.roofline_chart(roof, roofline.ceilings(roof), labels), width="stretch")
        ui.table(charts.with_runs(roof, labels), column_config=ui.ROOF_COLUMNS, column_order=list(ui.ROOF_COLUMNS),
                 hide_index=True, placeholder="—")


st.title("Kernels")
state = ui.view_state("kernels")
runs = ui.require_runs(state)
st.caption("GPU kernels of each selected run grouped by name. Per-iteration numbers divide by the "
           "run's ProfilerStep count (a run without steps counts as one iteration). Click a column "
           "header to sort.")

with ui.guard(), ui.get_store().session() as store:
    labels = charts.label_map(run_queries.run_labels(store, runs))
    found = st.text_input("Search kernels", value=state.filter("q", ""),
                          placeholder="part of a kernel name, e.g. flash, gemm, Memcpy")
    if found != (state.filter("q") or ""):
        state = ui.update_view(state, filters=state.with_filter("q", found).filters)
    breakdown_section(store, runs, labels)
    table = charts.search(kernel_queries.kernel_details(store, runs), "kernel", found)
    table = counters.with_limiter_text(table.assign(shared_mem_kib=table["shared_mem_bytes"] / 1024))
    counted = counters.counted_kernels(table)
    if table.empty:
        st.info("No kernels match." if found else "The selected runs recorded no GPU kernels.")
    else:
        state, log = ui.log_axis(state)
        ui.kept_chart(store, ("kernel_time", found, log), runs, lambda: charts.kernel_time_chart(table, labels, log=log),
                        width="stretch")
        rows = charts.with_runs(table, labels)
        st.caption(f"{len(rows)} kernel names over {len(runs)} run(s), heaviest first per run")
        if counted:
            st.caption(markup.fmt("Hardware counters (Nsight Compute, one warm call counted; its time under "
                                  "ncu is not in any timing) for {} of these kernels: columns marked (ncu).",
                                  counted))
        shown = [c for c in ui.KERNEL_COLUMNS if counted or c not in counters.SHOWN_ON_KERNELS]
        with ui.folded("Kernel table: occupancy, launch shapes, full names",
                       "kernels-table", expanded=len(runs) <= 1) as open_:
            if open_:
                ui.table(rows, column_config=ui.KERNEL_COLUMNS, column_order=shown, hide_index=True,
                         width="stretch", height=min(36 + 35 * len(rows), 420), placeholder="—")
                ui.csv_download(rows, "kernels")
    roofline_section(store, runs, labels)
    ui.copy_link(state)
