"""Runs: every captured and uploaded run in the store; pick the runs to compare, rename, delete.

The first page a new server draws: its title, and the samples' progress line while they are
seeded or else how many runs the store holds (a session's first visit) with an empty table under
it, go out before the modules of its table (pandas, Altair: ~1 s of imports) are loaded below them;
the browser loads its table grid meanwhile.
"""
import streamlit as st

from profiler.present import markup, ui  # light: ui loads each of its modules when first read

st.title("Runs")
state = ui.view_state("runs")
loading = False
early = st.empty()  # a session's first visit: what the store holds, said before the table's modules load
with ui.guard():
    loading = ui.seeding_progress()
    if loading:  # the progress line is out: the samples start landing while the modules below load
        ui.seeding().page_drawn()
if not loading and "runs-table-drawn" not in st.session_state:
    with ui.guard_quietly():  # a store that cannot be read is said once, by the table below
        if count := ui.get_store().run_count():
            with early.container():
                st.caption(markup.fmt("{} runs in the store; their table is on its way…", f"{count:,}"))
                # an empty table now: the browser loads its grid while the modules below load, so
                # the rows are drawn as they arrive (0.3-0.5 s sooner on 2 cores; bench/RESULTS.md,
                # "Kept per run: many runs read straight")
                ui.table({"run": []}, height=80, hide_index=True)

from profiler.analysis.reads import completeness, run_queries  # noqa: E402
from profiler.analysis.findings import timings  # noqa: E402
from profiler.present import run_filters, style  # noqa: E402

MAX_HIGHLIGHTED = 4  # runs whose findings are listed (each costs a few queries)


def ranking(state, store) -> None:
    """The selected runs ranked (one table per shape), the winner and why on top."""
    if len(state.runs) < 2:
        return
    ui.ranked_runs(store, state.runs, "Which run wins, and why")


def highlights(state, store) -> None:
    """What stands out in each selected run, in plain words with its numbers."""
    if not state.runs:
        return
    # on request: each run's findings cost a few queries the ranking above does not need
    if st.toggle("What stands out in each selected run", value=state.filter("findings") == "1"):
        ui.set_view(state.with_filter("findings", "1"))
        findings_of(state, store)
    elif state.filter("findings"):
        ui.set_view(state.with_filter("findings", None))


def findings_of(state, store) -> None:
    from profiler.analysis.findings import findings  # asked for by a toggle: not before the table (~60 ms)

    for run in state.runs[:MAX_HIGHLIGHTED]:
        for finding in findings.run_findings(store, run):
            st.markdown(f"- {markup.md(finding.text)}")
    if len(state.runs) > MAX_HIGHLIGHTED:
        st.caption(f"Findings for the first {MAX_HIGHLIGHTED} selected runs; compare any two on the "
                   "compare page.")


with ui.guard():
    with ui.get_store().session() as store:  # one connection for the page's reads
        runs = run_queries.run_catalog(store)
        if runs.empty and loading:
            ui.seeding().page_drawn()
            st.stop()
        if runs.empty:
            ui.empty_store()
        runs = completeness.with_badge(store, timings.catalog_with_timings(store, runs))
        labels = style.run_labels(run_queries.run_labels(store, list(runs["run_id"])))
        runs = run_filters.finder_columns(runs, labels)
        early.empty()
        st.session_state["runs-table-drawn"] = True
        filtered, shown = ui.run_finder(state, runs)
        ui.one_per_variant(filtered, shown)
        st.caption(f"{len(shown)} of {len(runs)} runs in the store shown. Per-iteration numbers divide by "
                   "the run's ProfilerStep count. Tick runs (left column) to rank and compare them; "
                   "filtered-out runs stay selected.")
        picked = ui.pick_rows(shown, ui.catalog_key(), state.runs, column_config=ui.CATALOG_COLUMNS,
                              column_order=[c for c in ui.CATALOG_COLUMNS if c not in ("sweep", "swept") or c in shown],
                              row_height=40,
                              hide_index=True, placeholder="—")
        if picked != state.runs or filtered != state:
            state = ui.update_view(filtered, runs=picked)
        ui.open_selection(state)
        ranking(state, store)
        highlights(state, store)
        ui.how_measured(state, store)
    ui.csv_download(runs, "runs", label="Download the catalog as CSV")
    ui.rename_or_delete(state)
ui.seeding().page_drawn()
