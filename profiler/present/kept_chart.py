"""A chart drawn from the runs' stored rows, built once: `draw(store, key, run_ids, build)` is
`st.altair_chart(build())`, the Altair chart kept with the runs' results (`kept.value`: keyed by
`key` and the runs' stamps, so a run ingested again, renamed or given counters is drawn afresh).
Building a chart (its layers, encodings and copies) took a page 0.1-0.3 s a chart on every visit;
a later visit of the same selection now only turns it into its spec. `key` names the chart and
every input besides the runs' rows: a filter's text, a log axis, the app's URL."""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

import streamlit as st

from profiler.analysis import kept


def draw(store, key: tuple[Hashable, ...], run_ids: Iterable[str], build: Callable[[], object], **kwargs) -> None:
    """Draw the chart `build()` makes (kept under `key` and the stamps of `run_ids`); `kwargs` go
    to `st.altair_chart` (width, ...)."""
    st.altair_chart(kept.value(store, ("chart", *key), list(run_ids), build), **kwargs)
