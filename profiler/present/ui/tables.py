"""Tables, downloads and charts as every page shows them (part of the app glue,
`profiler.present.ui`): cells made safe, run labels in full, charts built once per selection."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import pandas as pd
import streamlit as st

from profiler.analysis.reads import kept
from profiler.present import markup
from profiler.storage.session import StoreHandle

Col = st.column_config
RUN_COLUMN_PX = 470  # a run label in full: 'variant dtype L=… (cold) · id', or an upload's file name


def run_column(title: str = "run"):
    """The column of run labels in every table, wide enough that a label is not cut at 1600 px."""
    return st.column_config.TextColumn(markup.md(title), width=RUN_COLUMN_PX)


# the runs page's catalog, in display order: the run as every page labels it and what tells runs
# apart (the workload, column by column), the numbers next, provenance last
CATALOG_COLUMNS = {
    "label": run_column("run"),
    "sweep": Col.TextColumn("sweep", width="medium", help="The variant, mode and what the sweep keeps fixed "
                            "(batch, heads, head dim, lengths, window, dtype, causal, warm or cold), then the "
                            "one axis its runs vary (as on the Sweep page); a run in no sweep: its whole shape."),
    "swept": Col.NumberColumn("swept value", help="This run's value on the axis its sweep varies "
                              "(named at the end of the sweep column)."),
    "mode": Col.TextColumn("mode", width="small", help="prefill, decode (one or a few new queries against a "
                           "KV cache) or train (forward and backward)."),
    "batch": Col.NumberColumn("B", width="small", help="batch"),
    "heads": Col.NumberColumn("H", width="small", help="query heads"),
    "kv_heads": Col.NumberColumn("K/V H", width="small", help="K/V heads: fewer than the query heads is GQA / MQA (the label says GQA H/K)."),
    "seq_len": Col.NumberColumn("Q len", width="small", help="queries per sequence (packed: their sum); decode: the new queries."),
    "kv_len": Col.NumberColumn("KV len", width="small", help="keys per sequence: the KV cache in decode; the query length otherwise."),
    "head_dim": Col.NumberColumn("D", width="small", help="head dim"),
    "window": Col.NumberColumn("window", width="small", help="sliding window in keys; 0: none."),
    "varlen": Col.TextColumn("packed lengths", help="Packed sequence lengths (varlen); empty: not packed."),
    "dtype": Col.TextColumn("dtype", width="small"),
    "cold": Col.CheckboxColumn("cold", help="First call of a fresh shape, before any warm-up."),
    "repeat": Col.NumberColumn("repeat", width="small", help="Which repeat of its variant and shape the capture is (1, 2, 3)."),
    "completeness": Col.TextColumn("trace", help="Whether the trace is whole: 'incomplete: N' when records "
                                   "were dropped or are malformed (N reasons; `summary --json` lists them), "
                                   "'complete, limits' when an option was off (no shapes, no memory)."),
    "kernels_per_iter": Col.NumberColumn("kernels / iter", format="%.1f"),
    "gpu_work_us_per_iter": Col.NumberColumn(
        "GPU work µs / iter", format="%.1f",
        help="The GPU work (kernels, copies, sets) the iteration launched, overlapping streams "
             "counted once, wherever it ran: what one step needs of the GPU."),
    "gpu_busy_us_per_iter": Col.NumberColumn(
        "GPU own busy µs / iter", format="%.1f",
        help="Time the GPU ran the iteration's own kernels, copies or sets (overlapping streams "
             "count once; work launched before the iteration began is carried, left out)."),
    "gpu_busy_pct": Col.NumberColumn("GPU own busy % of iteration", format="%.1f",
                                     help="GPU own busy time as a share of the iteration's wall time."),
    "cpu_busy_us_per_iter": Col.NumberColumn(
        "CPU µs / iter", format="%.1f",
        help="Wall time the launching thread spent in recorded CPU ops and runtime / driver calls "
             "(user annotations are labels, not counted)."),
    "bound": Col.TextColumn("bound", help="gpu: the GPU runs work at least 85 % of the iteration; "
                            "otherwise what the host did during most of the GPU's idle time (sync, "
                            "collective, input, launch, cpu, annotation; unrecorded: no verdict)."),
    "wall_us_per_call": Col.NumberColumn("wall µs / call", format="%.1f",
                                         help="CUDA events around N back-to-back calls outside the profiler, "
                                              "divided by N (wall calls). A cold run: its one first call."),
    "wall_calls": Col.NumberColumn("wall calls", help="N, the calls timed back to back (1 for a cold run)."),
    "graph_us_per_call": Col.NumberColumn("graph µs / call", format="%.1f",
                                          help="Replay of a CUDA graph of one call (host dispatch removed); "
                                               "empty where the variant cannot be captured in a graph."),
    "peak_allocated_mib": Col.NumberColumn("peak MiB", format="%.1f",
                                           help="Peak allocated GPU memory while recording (profile_memory)."),
    "iterations": Col.NumberColumn("iters", help="ProfilerStep windows in the trace; with none, "
                                   "the whole trace counts as one iteration."),
    "gpu_name": Col.TextColumn("GPU"),
    "causal": Col.CheckboxColumn("causal"),
    "versions": Col.TextColumn("versions"),
    "events": Col.NumberColumn("events", format="localized"),
    "name": Col.TextColumn("name", width=540, help="The trace's file name (uploads) or the capture's run name."),
    "variant": Col.TextColumn("variant", help="Attention implementation (captured runs)."),
    "run_id": Col.TextColumn("run id", help="Content hash of the trace: the same file is the same run "
                             "everywhere, so shared links name runs by it."),
    "captured": Col.TextColumn("captured", width=100, help="The capture's date (UTC), from its sweep "
                               "id; empty for captures outside a sweep and uploads."),
    "source": Col.TextColumn("source"),
    "added_at": Col.DatetimeColumn("added (UTC)", format="YYYY-MM-DD HH:mm"),
}



def csv_download(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    """A button that downloads ``df`` as ``name.csv`` (no rerun on click; the CSV is written when
    the button is clicked, not on every script run)."""
    st.download_button(
        markup.md(label), lambda: markup.to_csv(df), file_name=download_name(name, ".csv"), mime="text/csv",
        key=f"csv-{name}", on_click="ignore", icon=":material/download:",
    )


def download_name(stem: str, suffix: str) -> str:
    """A download's file name from trace or user text (a job or file name): no control characters,
    slashes or quotes, at most 120 characters before the suffix."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f/\\\"'<>:|?*]+", "_", str(stem))[:120] + suffix


def table(data, **dataframe_kwargs):
    """``st.dataframe`` of ``data`` with its text cells made safe (``markup.csv_cells``): the
    table's own toolbar downloads the cells as they are handed over, so no cell may start a
    formula or hold a line break. Pages show tables only through this (or ``pick_rows``)."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    return st.dataframe(markup.csv_cells(frame), **dataframe_kwargs)


def pick_rows(df: pd.DataFrame, key: str, selected: tuple[str, ...], id_col: str = "run_id",
              **dataframe_kwargs) -> tuple[str, ...]:
    """A row-selectable table pre-selected from ``selected``; the ids of the selected rows."""
    ids = list(df[id_col])
    default = {"selection": {"rows": [ids.index(r) for r in selected if r in ids]}}
    # the key follows the rows, so a stored selection never points at rows that moved
    event = table(df, key=f"{key}-{hash(tuple(ids))}", on_select="rerun",
                         selection_mode="multi-row", selection_default=default,
                         **dataframe_kwargs)
    picked = tuple(ids[i] for i in event.selection.rows if i < len(ids))
    kept = tuple(r for r in selected if r in picked or r not in ids)
    return kept if set(kept) == set(picked) else kept + tuple(r for r in picked if r not in kept)


def pick_row(df: pd.DataFrame, key: str, **dataframe_kwargs) -> int | None:
    """A table whose rows can be picked one at a time (sorting by a header keeps the pick on its
    row); the position in ``df`` of the picked row, or None."""
    event = table(df, key=key, on_select="rerun", selection_mode="single-row", **dataframe_kwargs)
    rows = [i for i in event.selection.rows if i < len(df)]
    return rows[0] if rows else None


_RANK_COLUMNS = {
    "rank": st.column_config.NumberColumn("#", width="small", help="Tied groups share a rank."),
    "label": st.column_config.TextColumn("variant (runs)", width="medium"),
    "us_per_call": st.column_config.NumberColumn(
        "µs / call", format="%.1f", help="The median over the group's repeats of the time of one call: the GPU "
        "time of one iteration (kernels, copies and sets, overlapping streams counted once; one call each), or "
        "for a run recorded on the CPU its attention call's CPU time. What the ranking sorts by."),
    "interval": st.column_config.TextColumn("interval", help="The repeats' least to most (outliers set aside)."),
    "repeats": st.column_config.NumberColumn("repeats", help="Runs the figure uses (outliers set aside)."),
    "times_fastest": st.column_config.NumberColumn("× fastest", format="%.2f"),
    "versus": st.column_config.TextColumn("tie / same kernels", width="medium"),
    "run_id": st.column_config.TextColumn("run id", help="The repeat nearest the median."),
    "rate": st.column_config.TextColumn("TFLOP/s or TB/s", help="TFLOP/s when the op model puts the run "
                                        "under the compute roof, TB/s under the memory roof."),
    "pct_of_roof": st.column_config.NumberColumn("% of roof", format="%.1f"),
    "roof_bound": st.column_config.TextColumn("roof"),
    "peak_allocated_mib": st.column_config.NumberColumn("peak MiB", format="%.1f"),
    "cold_first_call": st.column_config.TextColumn(
        "cold first call", help="The first call of this workload (mode, heads, K/V heads, lengths, window, "
        "packed lengths, dtype, causal, device) in its cold run, in the unit that reads best (µs, ms, s)."),
    "bound": st.column_config.TextColumn("bound", help="The iterations' verdict (metrics layer)."),
    "outliers": st.column_config.TextColumn("outliers", help="Repeats far from the group's median, set aside."),
}


def ranked_runs(store: StoreHandle, run_ids, title: str) -> None:
    """The selected runs grouped into repeats and ranked by time per call within each workload and
    state, under the heading `title` (how runs are grouped and ranked in its help): per workload
    its title, the sentence (winner, margin within the noise, or a tie; cause), the table; then
    the workloads where one variant was selected alone."""
    from profiler.analysis.findings import ranking
    from profiler.present import rank_view

    ranked, alone = ranking.rank_sets(store, run_ids)
    st.subheader(markup.md(title), divider="gray", help=rank_view.SHAPE_NOTE)
    for n, one in enumerate(ranked):
        st.markdown(markup.fmt("**{}** · {} runs", one.title, int(one.table["runs"].sum())))
        st.markdown(markup.md(one.sentence))
        table(rank_view.display(one.table), column_config=_RANK_COLUMNS, column_order=list(_RANK_COLUMNS),
              hide_index=True, placeholder="—", key=f"rank-{n}-{one.title}")
    note = rank_view.alone_note(alone)
    if note:
        st.caption(markup.md(note))


@contextmanager
def folded(label: str, key: str, expanded: bool = False, **kwargs) -> Iterator[bool]:
    """A section folded under ``label`` (``st.expander``) whose block runs inside it and is told
    whether it is open: the page computes and sends what it holds only then (a closed Roofline and
    kernel table had cost a cold Kernels page's script 0.1-0.2 s). Opening or closing it runs the
    page again (its reads kept). ``key`` names it; its state lasts while its label stays the same,
    so a label holds no count that a filter changes. The label is text, shown as written
    (`markup.md`); ``kwargs`` go to ``st.expander`` (icon, ...)."""
    with st.expander(markup.md(label), expanded=expanded, key=key, on_change="rerun", **kwargs) as box:
        yield bool(box.open)


def kept_chart(store: StoreHandle, key: tuple, run_ids: Iterable[str], build, **kwargs) -> None:
    """Draw the Altair chart `build()` makes, built and turned into its Vega-Lite spec once: the
    spec is kept with the runs' results (`kept.value`, keyed by `key` and the stamps of `run_ids`,
    so a run ingested again, renamed or given counters is drawn afresh). Building a chart (layers,
    encodings, copies) took a page 0.1-0.3 s a chart, and turning it into a spec (Altair checks the
    whole spec against the Vega-Lite schema, the data goes to Arrow) 20-60 ms more, on every visit.
    `key` names the chart and every input besides the runs' rows (a filter's text, a log axis, the
    app's URL); `kwargs` go to `st.vega_lite_chart` (width, ...)."""
    spec = kept.value(store, ("chart", *key), list(run_ids), lambda: vega_lite_spec(build()))
    st.vega_lite_chart(spec=dict(spec), **kwargs)  # the element st.altair_chart sends for the chart


def vega_lite_spec(chart) -> dict:
    """The spec `st.altair_chart` would send for an Altair chart: its data as Arrow datasets,
    Streamlit's own theme applied by the browser. Streamlit's conversion (the version pinned in
    requirements.txt) does it; the spec is only read afterwards (`st.vega_lite_chart` copies it)."""
    from streamlit.elements import vega_charts

    return vega_charts._convert_altair_to_vega_lite_spec(chart)
