"""The runs page's actions on the selected runs (part of the app glue, `profiler.present.ui`):
where to open them, how they were measured, rename and delete. What the filters keep and which
runs are ticked is `finder`'s and the table's.
"""
from __future__ import annotations

import streamlit as st

from profiler.analysis.findings import conditions
from profiler.analysis.reads import completeness, run_queries
from profiler.present import markup, sitemap
from profiler.present.ui.columns import RECORD_COLUMNS
from profiler.present.ui.tables import table
from profiler.present.ui.view import PAGE_FILES, PAGE_ICONS, copy_link, guard, link_to, select_runs
from profiler.present.ui.work import RUN_NAME_MAX_CHARS, delete_runs, rename_run, trace_download

ANALYSIS = ("timeline", "kernels", "events", "launches", "cpu-cost", "compare")  # titles: sitemap.SITE


def empty_store() -> None:
    """The runs page over a store with no runs: where runs come from, then the page stops."""
    st.info("The store has no runs yet. Capture some on the profile page, or upload a "
            "PyTorch profiler trace.")
    st.page_link(PAGE_FILES["profile"], label="Profile attention variants", icon=PAGE_ICONS["profile"])
    st.page_link(PAGE_FILES["upload"], label="Upload traces", icon=PAGE_ICONS["upload"])
    st.stop()


def open_selection(state) -> None:
    """How many runs are selected, a link to each analysis page with them, the share link (and the
    trace's download for one run)."""
    st.markdown(f"**{len(state.runs)} selected.** Open them in:" if state.runs else
                "Select rows (the checkbox column on the left) to compare runs.")
    if not state.runs:
        return
    with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
        for page in ANALYSIS:
            link_to(page, state.with_(page=page), label=sitemap.BY_PATH[page].title)
        copy_link(state)
    if len(state.runs) == 1:
        trace_download(state.runs[0])


def how_measured(state, store) -> None:
    """How each selected run was measured: clocks, power, throttling, versions, the timing check."""
    if not state.runs:
        return
    with st.expander("How the selected runs were measured", icon=":material/speed:"):
        labels = run_queries.run_labels(store, list(state.runs)).set_index("run_id")["label"].to_dict()
        for sentence in conditions.warnings(store, state.runs) + completeness.warnings(store, state.runs, labels):
            st.warning(markup.md(sentence))
        table(conditions.record_table(store, state.runs), hide_index=True, column_config=RECORD_COLUMNS,
              placeholder="—")
        st.caption("Clocks, power and temperature are means over the samples taken while the run was profiled "
                   "and timed. Timing check: the trace's kernel time per call against the event-timed loop and "
                   "the CUDA-graph replay (a launch-bound loop shows a large negative value against the loop).")


def rename_or_delete(state) -> None:
    """The selected run renamed (one run), the selected runs deleted (after a tick)."""
    with st.expander("Rename or delete the selected runs", icon=":material/settings:"):
        _rename(state)
        _delete(state)


def _rename(state) -> None:
    if len(state.runs) != 1:
        st.caption("Select exactly one run to rename it.")
        return
    with st.form("rename", border=False, clear_on_submit=True):
        name = st.text_input(f"New name for run {markup.md(state.runs[0])}", max_chars=RUN_NAME_MAX_CHARS,
                             key="rename_to")
        if st.form_submit_button("Rename", icon=":material/edit:"):
            with guard():
                rename_run(state.runs[0], name)
                st.rerun()


def _delete(state) -> None:
    if not state.runs:
        return
    sure = st.checkbox(f"Delete the {len(state.runs)} selected run(s) for everyone using this "
                       "store (cannot be undone)")
    if st.button("Delete", icon=":material/delete:", disabled=not sure):
        deleted = delete_runs(state.runs)
        select_runs(())
        st.toast(f"Deleted {deleted:,} run(s).")
        st.rerun()
