"""Sweep: GPU and CPU time per iteration against sequence length, one line per variant."""
import streamlit as st

from profiler.analysis import findings, memory, queries, roofline
from profiler.present import curve_charts, markup, memory_charts, ui

Col = st.column_config
COLUMNS = {
    "series": Col.TextColumn("variant"),
    "seq_len": Col.NumberColumn("seq len"),
    "gpu_busy_us_per_iter": Col.NumberColumn(
        "GPU busy µs / iter", format="%.1f",
        help="Time the GPU ran the iteration's kernels, copies or sets (as on the runs page)."),
    "cpu_busy_us_per_iter": Col.NumberColumn(
        "CPU µs / iter", format="%.1f",
        help="Wall time the launching thread spent in recorded CPU ops and API calls."),
    "runs": Col.NumberColumn("runs", help="Warm captured runs averaged into this point."),
    "dtype": Col.TextColumn("dtype"),
    "batch": Col.NumberColumn("batch"), "heads": Col.NumberColumn("heads"),
    "head_dim": Col.NumberColumn("head dim"),
}


def no_sweep() -> None:
    st.info("No sweep here: a sweep is a variant captured warm at two or more sequence lengths "
            "with the same batch, heads, head dim and dtype. Capture one on the profile page "
            "(pick several sequence lengths), or select such runs on the runs page.")
    st.page_link(ui.PAGE_FILES["profile"], label="Profile a sweep", icon=ui.PAGE_ICONS["profile"])
    st.stop()


st.title("Sweep")
state = ui.view_state("sweep")
with ui.guard(), queries.session(ui.get_store()) as store:
    every = list(queries.run_catalog(store)["run_id"])
    runs = roofline.sweep_runs(store, state.runs, every) if state.runs else every
    series = curve_charts.sweep_series(roofline.sweep_table(store, runs))
    if series.empty:
        no_sweep()
    source = (f"the variants of the {len(state.runs)} selected runs, at every length captured"
              if state.runs else "every captured run in the store")
    st.caption(f"Warm runs of {source}: GPU and CPU time per iteration on logarithmic scales, "
               "the lines through the mean of each variant and sequence length, the bars from "
               "the fastest to the slowest iteration of all its captures (a tick at the median). "
               "Where two GPU lines cross, the faster variant changes (dotted rules). What bounds "
               "each run (GPU, CPU or synchronisation) is on the runs page.")
    crossings = findings.sweep_findings(store, runs)
    spread = curve_charts.sweep_spread(roofline.sweep_iterations(store, runs))
    gpu_tab, cpu_tab = st.tabs([markup.md(curve_charts.SWEEP_METRICS["gpu_busy_us_per_iter"]),
                               markup.md(curve_charts.SWEEP_METRICS["cpu_busy_us_per_iter"])])
    with gpu_tab:
        st.altair_chart(curve_charts.sweep_chart(series, spread, [f.evidence for f in crossings],
                                                 "gpu_busy_us_per_iter"), width="stretch")
    with cpu_tab:
        st.altair_chart(curve_charts.sweep_chart(series, spread, [], "cpu_busy_us_per_iter"),
                        width="stretch")
    st.subheader("Crossovers", divider="gray")
    for finding in crossings:
        st.markdown(f"- {markup.md(finding.text)}")
    if not crossings:
        st.markdown("No two variants swap places in GPU time over these lengths.")
    ui.table(series, column_config=COLUMNS, column_order=list(COLUMNS), hide_index=True, placeholder="—")
    ui.csv_download(series, "sweep")
    st.subheader("Peak memory against sequence length", divider="gray")
    shapes = queries.run_shapes(store, runs)
    shapes = shapes[(shapes["cold"] == False) & shapes["seq_len"].notna() & shapes["variant"].isin(series["variant"])]  # noqa: E712
    points = shapes.merge(memory.memory_summary(store, shapes["run_id"]), on="run_id")
    if points.empty:
        st.caption("None of these runs recorded memory events (profile_memory=True).")
    else:
        st.caption("Peak allocated GPU memory of each warm run (dots) and the median per length (lines), "
                   "log-log: a slope of 2 is memory that grows as L² (the score matrix), 1 as L.")
        st.altair_chart(memory_charts.peak_vs_length_chart(points), width="stretch")
