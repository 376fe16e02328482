"""Timeline: one panel per selected run, stacked on one time axis, aligned at the start of an
iteration; each panel draws only its own iteration.

CPU rows show ops by nesting depth and the runtime/driver API calls of each thread; GPU rows show
kernels and copies per stream. Only the chosen window is read from the store, and events shorter
than a pixel are merged there, so traces with millions of events stay quick.
"""
import streamlit as st

from profiler.analysis import queries
from profiler.present import charts, markup, narrative, style, timeline_view, ui

SCALES = {"shared": "Shared time scale", "independent": "Each run its own scale"}
Col = st.column_config
RANGE_COLUMNS = {
    "run": Col.TextColumn("run"), "kind": Col.TextColumn("kind"),
    "name": Col.TextColumn("name", width="large", help="The full name as the trace wrote it."),
    "events": Col.NumberColumn("count"), "total": Col.TextColumn("total (in range)"),
    "self_time": Col.TextColumn("self", help="Ops: their own time, without the ops inside them."),
}


def controls(store, state, runs):
    """Iteration, scale, search and window (ns from the iteration start); all kept in the URL."""
    left, mid, right = st.columns([1, 1.4, 1.4])
    iteration = int(left.number_input("Iteration (0 = first ProfilerStep of each run)",
                                      min_value=0, value=state.iteration or 0, step=1))
    asked = state.filter("scale", "shared")
    scale = mid.segmented_control("Time scale", list(SCALES), format_func=SCALES.get,
                                  default=asked if asked in SCALES else "shared", required=True)
    found = right.text_input("Find events", value=state.filter("find", ""),
                             placeholder="part of a name, e.g. flash, Memcpy, aten::mm")
    extent = int(queries.timeline_extent_ns(store, runs, iteration))
    window = state.window_ns or (0, extent)
    window = timeline_view.zoom_window(window, extent, 1.0) if window[1] > window[0] else (0, extent)
    window = window_buttons(window, extent)
    full = window == (0, extent)
    new = state.with_(iteration=iteration, window_ns=None if full else window)
    new = new.with_filter("scale", None if scale == "shared" else scale).with_filter("find", found)
    if new != state:
        ui.set_view(new)
    return new, iteration, window, scale == "shared", found


def window_buttons(window, extent):
    """Zoom and pan buttons (Nsight-style); the chart itself zooms with Ctrl/Shift + wheel."""
    cols = st.columns([1, 1, 1, 1, 1.3, 4])
    moves = {"Zoom in": lambda w: timeline_view.zoom_window(w, extent, 0.5),
             "Zoom out": lambda w: timeline_view.zoom_window(w, extent, 2.0),
             "◀ Earlier": lambda w: timeline_view.pan_window(w, extent, -0.5),
             "Later ▶": lambda w: timeline_view.pan_window(w, extent, 0.5),
             "Whole iteration": lambda w: (0, extent)}
    for col, (label, move) in zip(cols, moves.items()):
        if col.button(markup.md(label), width="stretch"):
            window = move(window)
    cols[-1].caption(markup.fmt("Window {} – {} of {}", style.duration(window[0] / 1e3),
                                style.duration(window[1] / 1e3), style.duration(extent / 1e3)))
    return window


def range_section(store, runs, labels, iteration, picked, state) -> None:
    """Perfetto's area selection: what ran inside the dragged range, per run and name."""
    st.subheader(markup.fmt("Selected range {} – {}", style.duration(picked[0] / 1e3),
                            style.duration(picked[1] / 1e3)), divider="gray")
    if st.button("Zoom to the selected range"):
        ui.set_view(state.with_(window_ns=picked))
        st.rerun()
    stats = timeline_view.range_table(queries.timeline_range_stats(store, runs, iteration, picked),
                                      labels)
    ui.table(stats, column_config=RANGE_COLUMNS, column_order=list(RANGE_COLUMNS),
                 hide_index=True, width="stretch", height=320)
    ui.csv_download(stats, "timeline-range")


st.title("Timeline")
state = ui.view_state("timeline")
runs = ui.require_runs(state)
st.caption("Rows: CPU ops by nesting depth, runtime/driver API calls, GPU streams. The mouse wheel "
           "scrolls the page; **Ctrl/⌘/Shift + wheel** zooms, **Shift + drag** pans (all panels "
           "together on a shared scale), a **drag** selects a range and lists what ran in it. "
           "Hover or click an event for its flow: CPU op → launch → kernel. Grey bars merge events "
           "shorter than a pixel.")

with ui.guard(), queries.session(ui.get_store()) as store:
    labels = charts.label_map(queries.run_labels(store, runs))
    state, iteration, window, shared, found = controls(store, state, runs)
    panels = queries.timeline_panels(store, runs, iteration, window, shared)
    if shared and (ratio := timeline_view.scale_hint(panels)):
        st.info(f"These iterations differ {ratio:,.0f}× in length: on the shared scale the short "
                "ones are slivers. Pick **Each run its own scale** to see each in full.")
    drawn = [p for p in panels if not p[3].empty]
    for run, step, _, marks in panels:
        if marks.empty:
            st.text(markup.printable(f"{labels.get(run, run)}: {step} has no events in this window."))
    if drawn:
        spec = timeline_view.timeline_spec(
            drawn, [labels.get(p[0], p[0]) for p in drawn],
            [narrative.timeline_caption(p[3], p[1], found) for p in drawn], shared, found)
        event = st.vega_lite_chart(spec, on_select="rerun", selection_mode=["brush"],
                                   key=f"timeline-{len(drawn)}-{shared}")
        if picked := timeline_view.brushed_ns(event.selection if event else None):
            range_section(store, runs, labels, iteration, picked, state)
    ui.copy_link(state)
