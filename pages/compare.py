"""Compare: any number of runs ranked (within each shape), each against a chosen baseline; then the
baseline and one other run side by side — one iteration's kernel sequences aligned, what only one
of them launches, and how counts, GPU time and launch APIs change from run a to run b."""
import streamlit as st

from profiler.analysis.reads import completeness, pair_queries, run_queries
from profiler.analysis.findings import findings, memory, timings
from profiler.present import charts, markup, memory_charts, narrative, rank_view, ui


def pick_pair(store, state, runs, labels):
    """The baseline, run a, and the run compared with it in detail, b (URL filters ``a`` / ``b``; by
    default the fastest selected run, and the first other one)."""
    left, right, third = st.columns([5, 5, 2])
    a_default = state.filter("a") if state.filter("a") in runs else timings.fastest_run(store, runs) or runs[0]
    with left:
        a = st.selectbox("Baseline (run a)", runs, index=runs.index(a_default), format_func=lambda r: labels.get(r, r))
    others = [r for r in runs if r != a]
    b_default = state.filter("b") if state.filter("b") in others else others[0]
    with right:
        b = st.selectbox("Compared in detail (run b)", others, index=others.index(b_default),
                         format_func=lambda r: labels.get(r, r))
    with third:
        iteration = st.number_input("Iteration", min_value=0, value=state.iteration or 0, step=1,
                                    help="0 is the first ProfilerStep in each run")
    new = state.with_filter("a", a).with_filter("b", b).with_(iteration=int(iteration))
    if new != state:
        ui.set_view(new)
    return new, a, b, int(iteration)


st.title("Compare")
state = ui.view_state("compare")
runs = list(ui.require_runs(state, minimum=2, purpose="comparing"))

with ui.guard(), ui.get_store().session() as store:
    labels = charts.label_map(run_queries.run_labels(store, runs))
    whole, said = completeness.compare_line(store, runs, labels)
    if whole:
        st.caption(markup.md(said))
    else:
        st.warning(markup.md(said))
    ui.ranked_runs(store, runs, f"{len(runs)} runs ranked")
    state, a, b, iteration = pick_pair(store, state, runs, labels)
    label_a, label_b = f"a: {labels.get(a, a)}", f"b: {labels.get(b, b)}"
    metrics = rank_view.against_baseline(store, runs, a)
    sides = {r: f"{'a' if r == a else 'b' if r == b else '·'}: {labels.get(r, r)}" for r in metrics["run_id"]}
    ui.table(metrics.assign(side=metrics["run_id"].map(sides)), column_config=ui.BASELINE_COLUMNS,
             column_order=list(ui.BASELINE_COLUMNS), hide_index=True, placeholder="—")
    st.subheader("Findings, b against a", divider="gray")
    found = findings.compare_findings(store, a, b)
    if found:  # one list: the findings read as one block
        st.markdown(markup.bullets(finding.text for finding in found))
    if any(f.evidence.get("page") == "attention" for f in found):  # the op-level cost model's evidence
        ui.link_to("attention", state, "Ops, kernels, FLOPs and bytes behind these findings")
    aligned = pair_queries.kernel_alignment(store, a, b, iteration)
    st.subheader("Kernel sequence of one iteration", divider="gray")
    st.markdown(narrative.alignment_summary(aligned, label_a, label_b))
    if not aligned.empty:
        ui.kept_chart(store, ("alignment", a, b, iteration), runs,
                        lambda: charts.alignment_chart(aligned, label_a, label_b), width="stretch")
        with st.expander("Aligned sequence, slot by slot"):
            ui.table(aligned, column_config=ui.ALIGN_COLUMNS, column_order=list(ui.ALIGN_COLUMNS),
                         hide_index=True, placeholder="—")
            ui.csv_download(aligned, f"aligned-{a}-{b}")
    st.subheader("Kernels per iteration, b − a", divider="gray")
    delta = pair_queries.kernel_delta(store, a, b)
    if not delta.empty:
        ui.kept_chart(store, ("kernel_delta", a, b), runs, lambda: charts.delta_chart(delta), width="stretch")
    with st.expander(f"Kernel table, b − a (kernels: {len(delta)})", expanded=delta.empty):
        ui.table(delta, column_config=ui.DELTA_COLUMNS, column_order=list(ui.DELTA_COLUMNS),
                 hide_index=True, placeholder="—")
        ui.csv_download(delta, f"kernel-delta-{a}-{b}")
    api_delta = pair_queries.launch_api_delta(store, a, b)
    with st.expander(f"Launch APIs per iteration, b − a (APIs: {len(api_delta)})"):
        ui.table(api_delta, column_config=ui.API_DELTA_COLUMNS, column_order=list(ui.API_DELTA_COLUMNS),
                 hide_index=True, placeholder="—")
        ui.csv_download(api_delta, f"api-delta-{a}-{b}")
    st.subheader("Memory", divider="gray")
    for finding in memory.memory_findings(store, [a, b]):
        st.text(markup.printable(finding.text))
    timeline = memory.memory_timeline(store, [a, b])
    if not timeline.empty:
        starts = memory_charts.iteration_starts(run_queries.run_iterations(store, [a, b]), timeline, labels)
        with st.expander("Allocated memory over time"):
            ui.kept_chart(store, ("allocated_over_time", a, b), runs,
                            lambda: memory_charts.allocated_over_time_chart(timeline, starts, labels), width="stretch")
        ui.link_to("memory", state.with_(page="memory"), label="Memory page: peaks and live blocks")
    ui.copy_link(state)
