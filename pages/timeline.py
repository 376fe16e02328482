"""Timeline: one panel per selected run, stacked and aligned at the start of one iteration.

CPU rows show ops by nesting depth and the runtime/driver API calls of each thread; GPU rows show
kernels and copies per stream. Only the chosen window is read from the store, and events shorter
than a pixel are merged there, so traces with millions of events stay quick.
"""
import streamlit as st

from profiler import charts, markup, narrative, queries, ui

SCALES = {"shared": "Shared time scale", "independent": "Each run its own scale"}


def controls(store, state, runs):
    """Iteration, scale and window (µs from the iteration start); all kept in the URL."""
    left, right = st.columns([1, 2])
    with left:
        iteration = int(st.number_input("Iteration (0 = first ProfilerStep of each run)",
                                        min_value=0, value=state.iteration or 0, step=1))
    with right:
        asked = state.filter("scale", "shared")
        scale = st.segmented_control("Time scale", list(SCALES), format_func=SCALES.get,
                                     default=asked if asked in SCALES else "shared", required=True)
    extent_us = queries.timeline_extent_ns(store, runs, iteration) / 1e3
    start_ns, end_ns = state.window_ns or (0, int(extent_us * 1e3))
    window_us = st.slider("Window (µs from the iteration start)", 0.0, extent_us,
                          (min(start_ns / 1e3, extent_us), min(end_ns / 1e3, extent_us)),
                          step=max(extent_us / 1000, 0.001), format="%.1f")
    window_ns = (int(window_us[0] * 1e3), int(window_us[1] * 1e3))
    if window_ns[1] <= window_ns[0]:
        window_ns = (window_ns[0], window_ns[0] + 1000)
    full = window_ns == (0, int(extent_us * 1e3))
    new = state.with_(iteration=iteration, window_ns=None if full else window_ns)
    new = new.with_filter("scale", None if scale == "shared" else scale)
    if new != state:
        ui.set_view(new)
    return new, iteration, window_ns, scale == "shared"


st.title("Timeline")
state = ui.view_state("timeline")
runs = ui.require_runs(state)
st.caption("Rows from top: CPU ops by nesting depth, runtime/driver API calls, GPU streams. "
           "Hover a bar for its name and duration (kernels: grid, block, registers, shared "
           "memory, occupancy, launch API). Merged bars stand for many events shorter than a pixel.")

with ui.guard(), queries.session(ui.get_store()) as store:
    labels = charts.label_map(queries.run_labels(store, runs))
    state, iteration, window_ns, shared = controls(store, state, runs)
    for run, step, domain, marks in queries.timeline_panels(store, runs, iteration, window_ns,
                                                            shared):
        st.subheader(markup.md(labels.get(run, run)), divider="gray")
        st.caption(narrative.timeline_caption(marks, step))
        if not marks.empty:
            st.altair_chart(charts.timeline_chart(marks, step, domain), width="stretch",
                            key=f"timeline-{run}")
    ui.copy_link(state)
