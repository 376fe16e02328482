"""Timeline: the selected runs on one time axis, aligned at the start of an iteration; the GPU
lanes of all runs first, next to each other, then each run's CPU lanes. Each run draws only the
events of the step it is captioned with, or (``span=trace``) its whole trace, steps marked.

CPU rows show ops by nesting depth (or one row per thread, on request) and the runtime/driver API
calls of each thread; GPU rows show kernels and copies per stream. Only the chosen window is read
from the store, and events shorter than a pixel are merged there, so traces with millions of
events stay quick. The window (wheel zoom, pan, buttons) and the dragged range live in the URL.
"""
import streamlit as st

from profiler.analysis.reads import run_queries, timeline_queries, units
from profiler.present import (charts, markup, narrative, timeline_steps, timeline_view,
                              timeline_window, ui)

SCALES = {"shared": "Shared time scale", "independent": "Each run its own scale"}
SPANS = {"step": "One step", "trace": "Whole trace"}


def controls(store, state, runs):
    """Span, iteration, scale, search, CPU lanes and window (ns from the iteration's start, or
    the trace's), all kept in the URL; None for the iteration of the whole trace; the extent (ns)."""
    span_col, left, mid, right, far = st.columns([1, 1, 1.3, 1.3, 1.2])
    whole = span_col.segmented_control(
        "Span", list(SPANS), format_func=SPANS.get, required=True,
        default="trace" if state.filter("span") == "trace" else "step") == "trace"
    if whole != (state.filter("span") == "trace"):  # another span: its window and range mean other times
        state = state.with_(window_ns=None).with_filter("range", None)
    iteration = int(left.number_input("Iteration (0 = first ProfilerStep of each run)",
                                      min_value=0, value=state.iteration or 0, step=1, disabled=whole))
    asked = state.filter("scale", "shared")
    scale = mid.segmented_control("Time scale", list(SCALES), format_func=SCALES.get,
                                  default=asked if asked in SCALES else "shared", required=True)
    found = right.text_input("Find events", value=state.filter("find", ""),
                             placeholder="part of a name, e.g. flash, Memcpy, aten::mm")
    collapse = far.toggle("One CPU lane per thread", value=state.filter("cpu") == "one",
                          help="All nesting depths of a thread's ops in one lane, inner ops on top.")
    extent = int(timeline_queries.trace_extent_ns(store, runs) if whole
                 else timeline_queries.timeline_extent_ns(store, runs, iteration))
    window = state.window_ns or (0, extent)
    window = timeline_window.zoom_window(window, extent, 1.0) if window[1] > window[0] else (0, extent)
    window = window_buttons(window, extent, whole)
    full = window == (0, extent)
    # the iteration stays in the URL with the whole trace: back to one step, it is the one shown before
    new = state.with_(iteration=iteration if iteration or not whole else None, window_ns=None if full else window)
    new = new.with_filter("scale", None if scale == "shared" else scale).with_filter("find", found)
    new = new.with_filter("cpu", "one" if collapse else None).with_filter("span", "trace" if whole else None)
    if new != state:
        ui.set_view(new)
    return new, None if whole else iteration, window, scale == "shared", found, collapse, extent


def window_buttons(window, extent, whole: bool):
    """Zoom and pan buttons (Nsight-style); the chart itself zooms with Ctrl/Shift + wheel."""
    cols = st.columns([1, 1, 1, 1, 1.3, 4])
    moves = {"Zoom in": lambda w: timeline_window.zoom_window(w, extent, 0.5),
             "Zoom out": lambda w: timeline_window.zoom_window(w, extent, 2.0),
             "◀ Earlier": lambda w: timeline_window.pan_window(w, extent, -0.5),
             "Later ▶": lambda w: timeline_window.pan_window(w, extent, 0.5),
             "Whole trace" if whole else "Whole iteration": lambda w: (0, extent)}
    for col, (label, move) in zip(cols, moves.items()):
        if col.button(markup.md(label), width="stretch"):
            window = move(window)
    cols[-1].caption(markup.fmt("Window {} – {} of {}", units.duration(window[0] / 1e3),
                                units.duration(window[1] / 1e3), units.duration(extent / 1e3)))
    return window


def range_section(store, runs, labels, iteration, picked, state) -> None:
    """Perfetto's area selection: what ran inside the dragged range, per run and name."""
    st.subheader(markup.fmt("Selected range {} – {}", units.duration(picked[0] / 1e3),
                            units.duration(picked[1] / 1e3)), divider="gray")
    if st.button("Zoom to the selected range"):
        ui.set_view(state.with_(window_ns=picked))
        st.rerun()
    stats = timeline_window.range_table(timeline_queries.timeline_range_stats(store, runs, iteration, picked),
                                      labels)
    ui.table(stats, column_config=ui.RANGE_COLUMNS, column_order=list(ui.RANGE_COLUMNS),
                 hide_index=True, width="stretch", height=320)
    ui.csv_download(stats, "timeline-range")


st.title("Timeline")
state = ui.view_state("timeline")
runs = ui.require_runs(state)
st.caption("GPU lanes of every run first, next to each other; then each run's CPU lanes: ops by "
           "nesting depth (or one lane per thread) and runtime/driver API calls. Each run draws "
           "only the step in its caption; a dashed line marks where that step ends. **Whole "
           "trace** draws every step, each marked by name. The mouse "
           "wheel scrolls the page; **Ctrl/⌘/Shift + wheel** zooms, **Shift + drag** pans (all "
           "runs together on a shared scale), a **drag** selects a range, marks it in every run "
           "and lists what ran in it; the link keeps the range and, on a shared scale, the zoom and "
           "pan. Hover or click an event for its "
           "flow: CPU op → launch → kernel. Grey bars merge events shorter than a pixel.")

with ui.guard(), ui.get_store().session() as store:
    labels = charts.label_map(run_queries.run_labels(store, runs))
    state, iteration, window, shared, found, collapse, extent = controls(store, state, runs)
    picked, linked = ui.linked_range(state), ui.linked_event(state)
    panels = (timeline_queries.trace_panels(store, runs, window, shared) if iteration is None
              else timeline_queries.timeline_panels(store, runs, iteration, window, shared))
    if shared and (ratio := timeline_steps.scale_hint(panels)):
        st.info(f"These {'traces' if iteration is None else 'iterations'} differ {ratio:,.0f}× in length: "
                "on the shared scale the short "
                "ones are slivers. Pick **Each run its own scale** to see each in full.")
    drawn = [p for p in panels if not p.marks.empty or p.lanes is not None]  # a whole trace: always
    for p in (p for p in panels if p.marks.empty and p.lanes is None):
        st.text(markup.printable(timeline_window.empty_note(labels.get(p.run_id, p.run_id), p)))
    if drawn:
        spec = timeline_view.timeline_spec(
            drawn, [labels.get(p.run_id, p.run_id) for p in drawn],
            [narrative.panel_caption(p, found) for p in drawn], shared, found,
            collapse, None if picked is None else (picked[0] / 1e3, picked[1] / 1e3),
            None if linked is None else timeline_view.event_link(drawn, *linked))
        key = f"timeline-{len(drawn)}-{shared}-{iteration is None}"
        event = st.vega_lite_chart(spec, on_select="rerun", key=key,
                                   selection_mode=["brush", "zoom"] if shared else ["brush"])
        if (moved := ui.chart_move(state, key, dict(event.selection or {}) if event else {},
                                  extent)) is not None:
            ui.set_view(moved)
            st.rerun()
        if picked:
            range_section(store, runs, labels, iteration, picked, state)
    ui.copy_link(state)
