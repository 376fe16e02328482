"""Memory: allocated bytes over time for the selected runs, peak per iteration, and the largest
blocks live at each run's peak with the CPU op that made them (profile_memory traces)."""
import streamlit as st

from profiler.analysis.findings import memory
from profiler.analysis.reads import run_queries
from profiler.present import charts, markup, memory_charts, ui

Col = st.column_config
MIB = memory.MIB
SUMMARY_COLUMNS = {
    "run": ui.run_column(),
    "peak_allocated_mib": Col.NumberColumn("peak allocated MiB", format="%.1f",
                                           help="Highest 'Total Allocated' the allocator reported on "
                                                "the run's GPU while recording (includes what was held before)."),
    "held_at_start_mib": Col.NumberColumn("held before MiB", format="%.1f",
                                          help="Allocated before the recording began: inputs, workspaces."),
    "peak_reserved_mib": Col.NumberColumn("peak reserved MiB", format="%.1f",
                                          help="Highest 'Total Reserved': the caching allocator's segments."),
    "peak_iteration": Col.NumberColumn("peak in iteration"),
    "events": Col.NumberColumn("memory events"),
}
ITER_COLUMNS = {
    "run": ui.run_column(),
    "iteration": Col.NumberColumn("iteration"),
    "peak_allocated_mib": Col.NumberColumn("peak MiB", format="%.1f"),
    "peak_above_start_mib": Col.NumberColumn("peak above its start MiB", format="%.1f",
                                             help="The iteration's peak minus what was allocated when it began."),
}
LIVE_COLUMNS = {
    "size_mib": Col.NumberColumn("MiB", format="%.2f"),
    "op_name": Col.TextColumn("made by (CPU op)", width="medium"),
    "op_input_dims": Col.TextColumn("its input shapes", width="large"),
    "iteration": Col.NumberColumn("iteration"),
}


def summary_table(summary, labels):
    table = summary.assign(run=summary["run_id"].map(lambda r: labels.get(r, r)))
    for column in ("peak_allocated", "held_at_start", "peak_reserved"):
        table[f"{column}_mib"] = table[f"{column}_bytes"] / MIB
    return table


st.title("Memory")
state = ui.view_state("memory")
runs = ui.require_runs(state)
st.caption("From the trace's [memory] events (captured with profile_memory=True): each allocation "
           "and free on the GPU with the allocator's running totals. Time runs from each run's "
           "first iteration start, so runs share one axis; dashed rules mark iteration starts.")

with ui.guard(), ui.get_store().session() as store:
    labels = charts.label_map(run_queries.run_labels(store, runs))
    summary = memory.memory_summary(store, runs)
    missing = memory.runs_without_memory(store, runs)
    for run in missing:
        st.info(f"{markup.md(labels.get(run, run))} {memory.NO_EVENTS}.", icon=":material/info:")
    if summary.empty:
        st.stop()
    st.subheader("What stands out", divider="gray")
    for finding in memory.memory_findings(store, [r for r in runs if r not in missing]):
        st.text(markup.printable(finding.text))
    st.subheader("Allocated over time", divider="gray")
    timeline = memory.memory_timeline(store, summary["run_id"])
    starts = memory_charts.iteration_starts(run_queries.run_iterations(store, summary["run_id"]), timeline, labels)
    ui.kept_chart(store, ("allocated_over_time",), runs,
                    lambda: memory_charts.allocated_over_time_chart(timeline, starts, labels), width="stretch")
    table = summary_table(summary, labels)
    ui.table(table, column_config=SUMMARY_COLUMNS, column_order=list(SUMMARY_COLUMNS), hide_index=True)
    ui.csv_download(summary, "memory-summary")
    st.subheader("Peak per iteration", divider="gray")
    peaks = memory.iteration_peaks(store, summary["run_id"])
    peaks = peaks.assign(run=peaks["run_id"].map(lambda r: labels.get(r, r)),
                         peak_allocated_mib=peaks["peak_allocated_bytes"] / MIB,
                         peak_above_start_mib=peaks["peak_above_start_bytes"] / MIB)
    ui.table(peaks, column_config=ITER_COLUMNS, column_order=list(ITER_COLUMNS), hide_index=True)
    ui.csv_download(peaks, "memory-iteration-peaks")
    st.subheader("Largest blocks live at the peak", divider="gray")
    for run in summary["run_id"]:
        live = memory.live_at_peak(store, run)
        with st.expander(markup.fmt("{}: {:,} block(s) allocated during the recording and live at the peak",
                                    labels.get(run, run), len(live)), expanded=len(summary) <= 2):
            live = live.assign(size_mib=live["size_bytes"] / MIB)
            ui.table(live, column_config=LIVE_COLUMNS, column_order=list(LIVE_COLUMNS), hide_index=True)
            ui.csv_download(live, f"memory-live-{run}")
    ui.copy_link(state)
