"""Job: the ranks of one distributed run side by side: where each rank's step goes, the straggler
(the rank the others wait for) and the longest step per iteration, how long collectives wait for
the last rank; and two jobs compared."""
import streamlit as st

from profiler.analysis.findings import job_queries
from profiler.present import job_charts, markup, ui

Col = st.column_config
RANK_COLUMNS = {
    "rank": Col.NumberColumn("rank"), "iteration": Col.NumberColumn("iteration"),
    "iteration_name": Col.TextColumn("window"),
    "step_us": Col.NumberColumn("step µs", format="%.1f"),
    "gpu_work_us": Col.NumberColumn("GPU work µs", format="%.1f",
                                    help="The GPU work the step launched, as a union, wherever it ran (the one "
                                         "step-GPU-work figure of every page): it can exceed the step when work spills out."),
    "gpu_busy_us": Col.NumberColumn("GPU own busy µs", format="%.1f",
                                    help="The part of the step's GPU work inside its window."),
    "carried_us": Col.NumberColumn("carried-in µs", format="%.1f",
                                   help="Time only GPU work launched before the window (or before profiling) ran."),
    "gpu_idle_us": Col.NumberColumn("GPU idle µs", format="%.1f",
                                    help="No GPU work at all: step minus busy minus carried-in time."),
    "collective_us": Col.NumberColumn("collective µs", format="%.1f",
                                      help="Union of the communication kernels (NCCL/RCCL, multimem)."),
    "longest_step_rank": Col.NumberColumn("longest step", help="The rank whose step lasted longest (often one "
                                          "that waited for the straggler, not the straggler)."),
}
WAIT_COLUMNS = {
    "rank": Col.NumberColumn("rank"), "iteration": Col.NumberColumn("iteration"),
    "collectives": Col.NumberColumn("collectives"),
    "arrived_last": Col.NumberColumn("arrived last", help="Collectives this rank started last."),
    "wait_us": Col.NumberColumn("waited µs", format="%.1f", help="Time it waited for the last rank, summed."),
    "late_us": Col.NumberColumn("late µs", format="%.1f", help="How long after the first rank it arrived, summed."),
    "caused_wait_us": Col.NumberColumn("others waited µs", format="%.1f",
                                       help="Time the other ranks waited for it, at the collectives it started last."),
    "flag": Col.TextColumn("flag", help="Why this wait cannot be right (longer than the step or than the "
                                        "rank's own collective time): not a finding."),
}
CLOCK_COLUMNS = {
    "rank": Col.NumberColumn("rank"), "matched": Col.NumberColumn("collectives used"),
    "offset_us": Col.NumberColumn("clock offset µs", format="%+.1f", help="Its clock minus the ranks' consensus."),
    "uncertainty_us": Col.NumberColumn("± µs", format="%.1f", help="Spread of the estimate over its collectives."),
    "applied_us": Col.NumberColumn("taken off µs", format="%+.1f", help="Applied when above 3 × the uncertainty."),
    "impossible": Col.NumberColumn("impossible waits", help="Collectives where, corrected, it would wait longer "
                                                            "than its kernel ran: the estimate does not hold."),
}
COLLECTIVE_COLUMNS = {
    "iteration": Col.NumberColumn("iteration"),
    "seq": Col.NumberColumn("n-th", help="The n-th kernel of this name in the iteration, on every rank."),
    "ranks": Col.NumberColumn("ranks"),
    "skew_us": Col.NumberColumn("start skew µs", format="%.1f", help="Last rank's start minus first rank's."),
    "wait_us": Col.NumberColumn("mean wait µs", format="%.1f", help="How long a rank waits for the last one, on average."),
    "last_rank": Col.NumberColumn("last to start"),
    "mean_dur_us": Col.NumberColumn("mean kernel µs", format="%.1f"),
    "collective": Col.TextColumn("collective", help="As the trace names it (record_param_comms or nccl:* annotation)."),
    "bytes": Col.NumberColumn("bytes", help="The whole buffer: elements × element size; '—' where the trace gives no size."),
    "algbw_gbps": Col.NumberColumn("algbw GB/s", format="%.3f",
                                   help="Bytes / mean kernel time. Early ranks wait inside their kernel, so this is a lower bound."),
    "busbw_gbps": Col.NumberColumn("busbw GB/s", format="%.3f",
                                   help="algbw × the NCCL bus factor: all-reduce 2(n-1)/n, all-gather, reduce-scatter, "
                                        "all-to-all (n-1)/n, broadcast/reduce 1 (n: group size, else world size)."),
    "name": Col.TextColumn("collective kernel"),  # last: long names would push the figures out of view
}

st.title("Job")
state = ui.view_state("job")
# one connection for the page's reads (a damaged or locked store says so here, as on every other
# page); the report and the tables below read the same rows, answered once per script run
with ui.guard(), ui.get_store().session() as store:
    listed = job_queries.job_list(store)
    for row in listed[listed["damaged"] != ""].itertuples():
        st.warning(markup.fmt("Job {} cannot be read and is left out: {}", row.job, row.damaged))
    listed = listed[listed["damaged"] == ""]
    if listed.empty:
        st.info("No job in the store yet. A job is the rank traces of one distributed run: upload "
                "them together (several files or one zip) on the upload page, or run "
                "`python -m profiler ingest DIR --job NAME`.")
        st.page_link(ui.PAGE_FILES["upload"], label="Upload a job", icon=ui.PAGE_ICONS["upload"])
        st.stop()
    names = listed["job"].tolist()
    chosen = state.filter("job") if state.filter("job") in names else names[0]
    job = st.selectbox("Job", names, index=names.index(chosen))
    if job != state.filter("job"):
        state = ui.update_view(state, filters=state.with_filter("job", job).filters)
    report = job_queries.job_report(store, job)
    with st.container(horizontal=True):
        st.metric("world size", markup.md(report["world_size"]))
        st.metric("ranks present", len(report["ranks_present"]))
        st.metric("ranks missing", markup.md(job_queries.missing_text(report["ranks_missing"])))
        st.metric("backend", markup.md(report["backend"] or "not given"))
    per_rank = job_queries.rank_iterations(store, job)
    if per_rank.empty:
        st.warning("These traces have no iteration windows to compare.")
        st.stop()
    st.subheader("Where each rank's step goes", divider="gray")
    st.altair_chart(job_charts.rank_chart(per_rank))
    for line in job_queries.straggler_sentences(report):  # rank waits included: text from traces, escaped
        st.markdown(markup.fmt("- {}", line))
    ui.table(per_rank, column_config=RANK_COLUMNS, column_order=list(RANK_COLUMNS), hide_index=True)
    ui.csv_download(per_rank, f"job-{job}-ranks")
    st.subheader("Collectives across ranks", divider="gray")
    collectives = job_queries.collectives(store, job)
    ui.table(collectives, column_config=COLLECTIVE_COLUMNS, column_order=list(COLLECTIVE_COLUMNS),
                 hide_index=True)
    st.subheader("Who waits for whom", divider="gray")
    if report["waits_withheld"]:
        st.warning(markup.md(report["waits_withheld"]))
    ui.table(job_queries.stated_wait_table(report), column_config=WAIT_COLUMNS,
             column_order=list(WAIT_COLUMNS), hide_index=True)
    st.caption("Ranks' clocks: each one's offset from the consensus, estimated from the collectives' ends "
               "(they end together on every rank) and taken off before arrivals are compared.")
    ui.table(job_queries.clock(store, job), column_config=CLOCK_COLUMNS, column_order=list(CLOCK_COLUMNS),
             hide_index=True)
    st.subheader("Compare with another job", divider="gray")
    others = [n for n in names if n != job]
    other = st.selectbox("Other job", others, index=None, placeholder="pick a job") if others else None
    if other:
        ui.table(job_queries.compare(store, job, other), hide_index=True)
    elif not others:
        st.caption("Only one job in the store.")
