"""The runs page's run finder (part of the app glue, `profiler.present.ui`): the filter widgets,
their values read from and written to the share URL, and the one-run-per-variant pick. What the
filters mean, and the rows they keep, is `profiler.present.run_filters`'s.
"""
from __future__ import annotations

import streamlit as st

from profiler.analysis.findings import repeats
from profiler.present import markup, run_filters
from profiler.present.ui.view import update_view

# filter widgets whose label is not their URL key; the first row's filters (and their widths in
# px), the rest folded under "More filters"
LABELS = {"len": "query length", "kv": "KV length", "kvh": "K/V heads", "temp": "warm / cold", "dim": "head dim",
          "device": "GPU", "date": "captured"}
FIRST = {"variant": 380, "mode": 150, "len": 140, "kv": 140, "kvh": 120, "temp": 130}
GENERATION = "catalog-generation"  # session key: bumped when a pick replaces the table's selection


def _pick(name, now, offered, width) -> tuple:
    return tuple(st.multiselect(markup.md(LABELS.get(name, name)), offered[name], placeholder="all", width=width,
                                default=[v for v in getattr(now, name) if v in offered[name]]))


def run_finder(state, runs):
    """The filter widgets (values from the share URL) ▶ (the state with them, the rows they keep)."""
    now, offered = run_filters.from_params(state.filter), run_filters.choices(runs)
    with st.container(horizontal=True, gap="small"):
        picked = {name: _pick(name, now, offered, width) for name, width in FIRST.items()}
        text = st.text_input("search words (as labels read)", value=now.text, max_chars=200, width=300,
                             placeholder="e.g. decode KV=32768 GQA 32/8")
        asked = state.filter("sort", "newest")
        order = st.selectbox("sort", list(run_filters.SORTS), format_func=run_filters.SORTS.get, width=230,
                             index=list(run_filters.SORTS).index(asked) if asked in run_filters.SORTS else 0)
        sweeps = st.toggle("group sweeps", value=state.filter("sweeps") == "1")
    more = [n for n in run_filters.COLUMN if n not in FIRST]
    with st.expander("More filters: batch, heads, head dim, window, packed, repeat, dtype, GPU, captured, source"):
        with st.container(horizontal=True, gap="small"):
            picked |= {name: _pick(name, now, offered, 170) for name in more}
    chosen = run_filters.RunFilter(**picked, text=text)
    new = state.with_filter("sweeps", "1" if sweeps else None).with_filter("sort", None if order == "newest" else order)
    for key, value in run_filters.to_params(chosen).items():
        new = new.with_filter(key, value)
    shown = run_filters.sort_rows(run_filters.apply(runs, chosen), order)
    return new, run_filters.with_sweeps(shown) if sweeps else shown


def one_per_variant(state, shown) -> None:
    """Select, among the rows shown, one run per variant and shape: the median repeat."""
    if st.button("Select one run per variant (the median repeat)", icon=":material/done_all:",
                 help="Among the runs shown: per variant and shape (warm or cold, per GPU), the repeat whose "
                      "GPU time per call is nearest their median. Replaces the selection."):
        st.session_state[GENERATION] = st.session_state.get(GENERATION, 0) + 1
        update_view(state, runs=tuple(repeats.median_repeats(shown)))
        st.rerun()


def catalog_key() -> str:
    """The runs table's widget key: a new one once `one_per_variant` has picked, so the table shows
    the new selection instead of keeping the one its rows were ticked with."""
    return f"catalog-{st.session_state.get(GENERATION, 0)}"
