"""Events: every kernel launch and every CPU op call of the selected runs, one row each (the
Kernels and CPU cost pages sum them per name), longest first; a picked row opens the Timeline at
that event with its flow drawn."""
import streamlit as st

from profiler.analysis.reads import event_queries, run_queries
from profiler.present import charts, event_rows, markup, ui

KINDS = {"kernels": "Kernel launches", "ops": "CPU ops"}
COLUMNS = {"kernels": ui.KERNEL_EVENT_COLUMNS, "ops": ui.OP_EVENT_COLUMNS}
SEARCH_HINT = {"kernels": "part of a kernel, launching op or API name, e.g. softmax, aten::bmm",
               "ops": "part of an op name, e.g. aten::bmm, attention"}


def controls(state):
    """Which events, and the name filter, both kept in the URL."""
    left, right = st.columns([1, 2])
    asked = state.filter("events", "kernels")
    kind = left.segmented_control("Events", list(KINDS), format_func=KINDS.get, required=True,
                                  default=asked if asked in KINDS else "kernels")
    found = right.text_input("Filter by name", value=state.filter("q", ""), placeholder=SEARCH_HINT[kind])
    new = state.with_filter("events", None if kind == "kernels" else kind).with_filter("q", found)
    if new != state:
        ui.set_view(new)
    return new, kind, found


st.title("Events")
state = ui.view_state("events")
runs = ui.require_runs(state)
st.caption("Every kernel launch or CPU op call of the selected runs, one row each, the longest first "
           "(click a column header to sort by it). Pick a row to open the Timeline at that event, "
           "its flow (CPU op → launch → kernel) drawn.")

with ui.guard(), ui.get_store().session() as store:
    labels = charts.label_map(run_queries.run_labels(store, runs))
    state, kind, found = controls(state)
    read = event_queries.kernel_instances if kind == "kernels" else event_queries.op_instances
    rows = event_rows.event_table(read(store, runs, found), labels)
    if rows.empty:
        st.info("No events match." if found else "The selected runs recorded none of these events.")
    else:
        total = int(rows["matching"].iloc[0])
        noun = "kernel launches" if kind == "kernels" else "CPU op calls"
        st.caption(f"{len(rows):,} of {total:,} {noun}, the longest first")
        columns = COLUMNS[kind]
        picked = ui.pick_row(rows, f"events-{kind}", column_config=columns, column_order=list(columns),
                             hide_index=True, width="stretch", height=min(38 + 35 * len(rows), 460),
                             placeholder="—")
        if picked is None:
            st.caption("Pick a row (the box at its left) to open it on the Timeline.")
        elif (view := event_rows.timeline_view_of(rows.iloc[picked])) is None:
            st.caption("This event lies outside every step: the Timeline draws steps only.")
        else:
            # names in code spans: shown and copied exactly as the trace writes them
            w = event_rows.picked_fields(rows.iloc[picked], kind)
            if kind == "kernels":
                st.markdown(f"Picked: `{markup.code(w[0])}` · {markup.md(w[1])} · launched by `{markup.code(w[2])}` "
                            f"through `{markup.code(w[3])}` · step {markup.md(w[4])}")
            else:
                st.markdown(f"Picked: `{markup.code(w[0])}` · {markup.md(w[1])} (self {markup.md(w[2])}) · "
                            f"inside `{markup.code(w[3])}` · step {markup.md(w[4])}")
            ui.link_to("timeline", view, label="Open it on the Timeline, its flow drawn")
        ui.csv_download(rows.drop(columns=["matching"]), f"events-{kind}")
    ui.copy_link(state)
