"""App glue: the one backend module that imports streamlit. Pages use only this API.

(Over 300 lines for one reason: it is the one module allowed to import streamlit, which
tests/test_import_hygiene.py and tests/markup_scan.py hold it to.)

Store: ``get_store() -> Store`` is the store at ``PROFILER_DB`` (default ``data/traces.duckdb``),
cached per process, seeded from ``data/samples/`` on a background thread when empty (unless
``PROFILER_SEED=0``; ``seeding()`` tells how far it got); safe to share, it opens a short
connection per call. ``traces_dir()``: kept original traces.

View state (the URL is the source of truth; ``profiler.present.share``):
    ``view_state(page) -> ViewState``  the URL's view for ``page`` (a url path, ``share.PAGES``);
        a bad parameter becomes an ``st.warning``; with no ``runs`` in the URL (after a sidebar
        click) the session's last selection is used and written back to the URL.
    ``set_view(state)`` / ``update_view(state, **changes) -> ViewState``  write to the URL.
    ``select_runs(run_ids)``  make ``run_ids`` the selection (URL + session).
    ``link_to(page, state, label=None)``  ``st.page_link`` that carries the state.
    ``copy_link(state) -> str``  a "Share this view" popover with the full URL (copy button).

Empty states and errors:
    ``require_runs(state, minimum=1, purpose=...) -> tuple[str, ...]``  the selected runs that
        exist (warns about unknown ones), else "No runs selected: pick runs on the runs page"
        with a page link, then ``st.stop()``.
    ``show_error(err)``, ``with guard(): ...``  the project's errors (``ProfilerError``,
        ``ShareError``) as ``st.error`` sentences instead of tracebacks.

Tables, files, captures:
    ``pick_rows(df, key, selected, id_col="run_id", **kw) -> tuple[str, ...]``  row-selectable
        ``st.dataframe`` pre-selected from ``selected``; the selected ids (selected ids that are
        not rows of ``df``, e.g. filtered out, stay selected).
    ``ranked_runs(store, run_ids)``  one ranked table per shape group, its sentence on top
        (``profiler.analysis.ranking``); the runs page and compare show the same.
    ``table(df, **kw)``  ``st.dataframe`` with safe cells (no formula, no line break: its
        toolbar downloads them); pages show every table through it.
    ``csv_download(df, name, label=...)``  ``name.csv`` download button (cells made safe alike).
    ``ingest_files(files) -> list[IngestResult]``  one progress bar per upload, errors per file.
    ``upload_limit_mb() -> int``  the server's per-file upload limit.
    ``trace_download(run_id)``  download the run's original ``.json.gz`` (for Perfetto).
    ``capture_runs(config) -> (results, skipped outcomes)``  a ``profiler.capture.recorder`` capture with
        a live bar per variant, then ingest; one capture per server at a time (others wait).
"""
from __future__ import annotations

import gc
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path

import pandas as pd
import streamlit as st
from streamlit import config as st_config
from streamlit.runtime.pages_manager import PagesManager

from profiler.analysis import job_queries, kept, queries, timings
from profiler.capture.samples import Seeding, seed_in_background
from profiler.errors import ProfilerError, StoreError, TraceError
from profiler.present import markup, sitemap
from profiler.present.share import ShareError, ViewState, app_root, decode, encode, share_url
from profiler.storage import catalog
from profiler.storage.store import Store, default_db_path

PROJECT_ERRORS = (ProfilerError, ShareError)  # TraceError, StoreError, ... all derive from it
PAGE_FILES = {page.url_path: page.file for page in sitemap.SITE}  # read from the one list of pages
PAGE_ICONS = {page.url_path: page.icon for page in sitemap.SITE}
_RUNS_KEY = "_selected_runs"
_CAPTURE_LOCK = threading.Lock()  # torch.profiler is process-wide, and timings need the GPU alone
WRITING_PAGES = ("profile", "upload")  # page_run leaves these pages' store calls their own
QUIET_S = 3.0  # the preload waits until no page has been drawn for this long (it would slow that page)
_PAGES = {"running": 0, "last": time.monotonic()}  # page script runs in flight (page_run), and when one last began or ended
_PAGES_LOCK = threading.Lock()


@st.cache_resource(show_spinner="Opening the trace store…")
def _store_at(path: str) -> tuple[Store, Seeding]:
    store = Store(path)
    if os.environ.get("PROFILER_SEED", "1") == "0":
        return store, Seeding()
    return store, seed_in_background(store)


def db_path() -> str:
    """The store path this process uses (``PROFILER_DB`` or the default)."""
    return str(Path(os.environ.get("PROFILER_DB") or default_db_path()).resolve())


def get_store() -> Store:
    """The cached store for ``db_path()``."""
    return _store_at(db_path())[0]


@contextmanager
def page_run(page: str) -> Iterator[None]:
    """One script run of ``page`` (a url path; app.py, around the page): counted as a page being
    drawn (the preload waits for none to be), with the store's database held open, so that the
    page's reads share one open database instead of opening the file (and closing it, which
    writes a checkpoint) for each: ~40-80 ms a page. Not held on the pages that capture or
    ingest (`WRITING_PAGES`): they run for minutes, and other processes (the command line) get
    the file between their calls. A store that cannot be opened is left to the page, whose
    reads say why."""
    _page_started()
    try:
        with ExitStack() as stack:
            if page not in WRITING_PAGES:
                try:
                    stack.enter_context(get_store().connect())
                except PROJECT_ERRORS:
                    pass
            yield
    finally:
        with _PAGES_LOCK:
            _PAGES["running"] -= 1
            _PAGES["last"] = time.monotonic()


def _page_started() -> None:
    with _PAGES_LOCK:
        _PAGES["running"] += 1
        _PAGES["last"] = time.monotonic()


def seeding() -> Seeding:
    """The background seeding of the store from the shipped samples (``running`` while it lasts)."""
    return _store_at(db_path())[1]


def traces_dir() -> Path:
    """Where the original trace files live: ``traces/`` next to the store file."""
    return Path(db_path()).parent / "traces"


def _session_runs() -> tuple[str, ...]:
    return tuple(st.session_state.get(_RUNS_KEY, ()))


_ENTRY = threading.local()  # set by app.py in each script run that goes through st.navigation


def entered_through_app() -> None:
    """Called by app.py before ``st.navigation``: this script run is the real app."""
    _ENTRY.app = True


def _leave_pages_directory_mode() -> None:
    """Streamlit 1.67 runs the first session after a server start that opens a deep link (e.g.
    a shared /kernels?runs=...) as an old-style pages/ directory app, without app.py: no wide
    layout, file names in the sidebar. Rerun it through app.py (same url path, same page).
    AppTest resets that flag before every run, where a rerun would drop widget triggers, so
    there the page runs as is (the browser test covers the real server)."""
    through_app, _ENTRY.app = getattr(_ENTRY, "app", False), False
    if st_config.get_option("global.appTest"):  # AppTest patches this module's get_option
        return
    if not through_app and PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def view_state(page: str) -> ViewState:
    """The view the URL describes for ``page``, falling back to the session's selected runs."""
    with _PAGES_LOCK:  # a page run without app.py (AppTest) counts from here
        _PAGES["last"] = time.monotonic()
    _leave_pages_directory_mode()
    params = st.query_params.to_dict()
    try:
        state = decode(params, page)
    except ShareError as err:
        st.warning(f"This link has a parameter the dashboard cannot use ({markup.md(err)}); it is ignored.")
        state = ViewState(page=page)
        st.query_params.clear()
    if "runs" not in params and _session_runs():
        state = state.with_(runs=_session_runs())
        set_view(state)
    st.session_state[_RUNS_KEY] = state.runs
    return state


def set_view(state: ViewState) -> None:
    """Write ``state`` to the URL (only when it changed) and remember its runs."""
    params = encode(state)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    st.session_state[_RUNS_KEY] = state.runs


def update_view(state: ViewState, **changes) -> ViewState:
    """``state`` with ``changes``, written to the URL."""
    new = state.with_(**changes)
    set_view(new)
    return new


def select_runs(run_ids: Iterable[str]) -> None:
    """Make ``run_ids`` the selection for this session (and the URL of the current page)."""
    runs = tuple(dict.fromkeys(run_ids))
    st.session_state[_RUNS_KEY] = runs
    params = st.query_params.to_dict()
    if runs:
        params["runs"] = ",".join(runs)
    else:
        params.pop("runs", None)
    st.query_params.from_dict(params)


def _known(runs: tuple[str, ...]) -> tuple[str, ...]:
    """``runs`` that are in the store; warns about the others (deleted, or another deployment)."""
    if not runs:
        return runs
    try:
        known = set(queries.run_labels(get_store(), runs)["run_id"])
    except StoreError as err:  # e.g. the store file is locked by a long command-line ingest
        show_error(err)
        st.stop()
    missing = [r for r in runs if r not in known]
    if missing:
        st.warning(f"Not in this store (deleted, or shared from another deployment): "
                   f"{markup.md(', '.join(missing))}. Showing the other selected runs.")
    return tuple(r for r in runs if r in known)


def require_runs(state: ViewState, minimum: int = 1, purpose: str = "this page") -> tuple[str, ...]:
    """The selected runs that exist, or an empty state with a link to the runs page (then stop)."""
    runs = _known(state.runs)
    if len(runs) >= minimum:
        return runs
    if runs:
        st.info(markup.fmt("{} needs {} runs; {} selected. Pick more on the runs page.",
                           purpose[0].upper() + purpose[1:], minimum, len(runs)))
    else:
        st.info("No runs selected: pick runs on the runs page.")
    st.page_link(PAGE_FILES["runs"], label="Go to the runs page", icon=PAGE_ICONS["runs"])
    st.stop()


RUN_COLUMN_PX = 470  # a run label in full: 'variant dtype L=… (cold) · id', or an upload's file name


def run_column(title: str = "run"):
    """The column of run labels in every table, wide enough that a label is not cut at 1600 px."""
    return st.column_config.TextColumn(markup.md(title), width=RUN_COLUMN_PX)


def log_axis(state: ViewState, key: str = "log") -> tuple[ViewState, bool]:
    """A "log axis" toggle for a page's bar charts (off by default, kept in the URL as ``key=1``):
    the view (updated when it changed) and whether to draw a log axis."""
    on = st.toggle("Log axis", value=state.filter(key) == "1", key=f"log-axis-{key}",
                   help="Bars on a logarithmic axis (labelled so): small values become visible, "
                        "but lengths no longer compare. Linear by default.")
    if on != (state.filter(key) == "1"):
        state = update_view(state, filters=state.with_filter(key, "1" if on else None).filters)
    return state, on


def link_to(page: str, state: ViewState, label: str | None = None, icon: str | None = None) -> None:
    """A link to another page that keeps the runs, iteration, window and filters of ``state``."""
    st.page_link(PAGE_FILES[page], label=None if label is None else markup.md(label), icon=icon or PAGE_ICONS[page],
                 query_params=encode(state))


def show_error(err: Exception) -> None:
    """Show one of the project's errors as a sentence, not a traceback."""
    st.error(markup.md(err), icon=":material/error:")


@contextmanager
def guard() -> Iterator[None]:
    """Run a block; the project's errors become ``st.error`` messages."""
    try:
        yield
    except PROJECT_ERRORS as err:
        show_error(err)


@contextmanager
def guard_quietly() -> Iterator[None]:
    """Run a block off the page (a helper thread); the project's errors are dropped: the page that
    needs the result computes it again and shows the error there."""
    try:
        yield
    except PROJECT_ERRORS:
        pass


def app_base() -> str:
    """The app's root URL as the browser reached it (links between pages start from it)."""
    return app_root(st.context.url or "")


def copy_link(state: ViewState) -> str:
    """A popover with the URL of this view; returns the URL."""
    url = share_url(state, base=app_root(st.context.url or ""))
    with st.popover("Share this view", icon=":material/link:"):
        st.caption("Anyone with access to this dashboard sees the same runs and view:")
        st.code(url, language=None, wrap_lines=True)
    return url


def csv_download(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    """A button that downloads ``df`` as ``name.csv`` (no rerun on click; the CSV is written when
    the button is clicked, not on every script run)."""
    st.download_button(
        markup.md(label), lambda: markup.to_csv(df), file_name=_file_name(name, ".csv"), mime="text/csv",
        key=f"csv-{name}", on_click="ignore", icon=":material/download:",
    )


def _file_name(stem: str, suffix: str) -> str:
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


_RANK_COLUMNS = {
    "rank": st.column_config.NumberColumn("#", width="small"),
    "label": st.column_config.TextColumn("run", width="medium"),
    "gpu_us_per_call": st.column_config.NumberColumn(
        "µs / call", format="%.1f", help="GPU time of one call (per iteration: one call each): its "
        "kernels, copies and sets, overlapping streams counted once; what the ranking sorts by."),
    "times_fastest": st.column_config.NumberColumn("× fastest", format="%.2f"),
    "rate": st.column_config.TextColumn("TFLOP/s or TB/s", help="TFLOP/s when the op model puts the run "
                                        "under the compute roof, TB/s under the memory roof."),
    "pct_of_roof": st.column_config.NumberColumn("% of roof", format="%.1f"),
    "roof_bound": st.column_config.TextColumn("roof"),
    "peak_allocated_mib": st.column_config.NumberColumn("peak MiB", format="%.1f"),
    "cold_us": st.column_config.NumberColumn("cold first call µs", format="%.0f",
                                             help="The first call of this variant and shape in its cold run."),
    "bound": st.column_config.TextColumn("bound", help="The iterations' verdict (metrics layer)."),
    "run_id": st.column_config.TextColumn("run id"),
}


def ranked_runs(store, run_ids) -> None:
    """The selected runs ranked by time per call within each shape group: the group's shape, the
    sentence (winner, margin, cause), the table; then the runs no other run shares a shape with."""
    from profiler.analysis import ranking
    from profiler.present import rank_view

    groups, alone = ranking.rank_groups(store, run_ids)
    st.caption(rank_view.SHAPE_NOTE)
    for ranked in groups:
        st.markdown(markup.fmt("**{}** · {} runs", ranked.group.title, len(ranked.group.run_ids)))
        st.markdown(markup.md(ranked.sentence))
        table(rank_view.display(ranked.table), column_config=_RANK_COLUMNS, column_order=list(_RANK_COLUMNS),
              hide_index=True, placeholder="—", key=f"rank-{ranked.group.title}-{len(ranked.group.run_ids)}")
    note = rank_view.alone_note([g.title if g.shape else ", ".join(g.run_ids) for g in alone])
    if note:
        st.caption(markup.md(note))


def upload_limit_mb() -> int:
    """The server's per-file upload limit in MB (``server.maxUploadSize``)."""
    return int(st.get_option("server.maxUploadSize"))


def ingest_files(files, source: str = "uploaded") -> list:
    """Ingest each file with its own progress bar; each succeeds or fails on its own (errors are
    shown per file, naming it, never raised), and a summary follows when some failed."""
    from profiler.storage import isolated

    results, failed = [], 0
    for f in files:
        bar = st.progress(0.0, text=markup.fmt("{}: reading…", f.name))
        def report(done: float, bar=bar, file=f.name) -> None:
            bar.progress(min(max(done, 0.0), 1.0), text=markup.fmt("{}: {:.0%}", file, done))
        try:
            result = isolated.ingest_upload(f, db_path(), source=source, progress=report)
        except PROJECT_ERRORS as err:
            bar.empty()
            show_error(err if isinstance(err, TraceError) else StoreError(f"{f.name}: {err}"))
            failed += 1
            continue
        bar.progress(1.0, text=markup.fmt("{}: {:,} events, {:,} kernels in {:.1f} s", f.name, result.events,
                                          result.kernels, result.seconds) + " (already in the store)" * result.duplicate)
        for note in result.notes:
            st.caption(markup.fmt("{}: {}", f.name, note))
        catalog.keep_trace(f, traces_dir(), result.run_id)
        results.append(result)
    if failed:
        st.warning(f"{len(files) - failed:,} of {len(files):,} files added; {failed:,} failed (see above).")
    return results


def ingest_job_upload(files, job: str, skip_bad: bool = False):
    """Store uploaded rank traces (several files, or zips of them) as one job, with one progress
    bar; parsed in this process. Returns the JobResult, or None after showing the error."""
    from profiler.storage import job_ingest, jobs

    bar = st.progress(0.0, text=markup.fmt("job {}: reading {} file(s)…", job, len(files)))
    with tempfile.TemporaryDirectory(prefix="job-upload-") as folder:
        try:
            paths = jobs.save_uploads(files, folder)
            result = job_ingest.ingest_job(get_store(), paths, job, skip_bad=skip_bad, engine="in-process",
                                     progress=lambda done: bar.progress(min(max(done, 0.0), 1.0),
                                                                        text=markup.fmt("job {}: {:.0%}", job, done)))
            job_queries.keep_summary(get_store(), result.job, result.ranks)
        except PROJECT_ERRORS as err:
            bar.empty()
            show_error(err)
            return None
    bar.progress(1.0, text=markup.fmt("job {}: {} of {} ranks in {:.1f} s", job, len(result.ranks),
                                      result.world_size, result.seconds))
    return result


def trace_download(run_id: str) -> None:
    """Download button for a run's original trace, or a note that this server lacks it."""
    path = catalog.trace_path(traces_dir(), run_id)
    if path is None:
        st.caption("This server has no copy of this run's original trace (only runs uploaded "
                   "or captured in the dashboard keep one).")
        return
    name = queries.run_labels(get_store(), [run_id])["name"].iloc[0]
    stem = name.removesuffix(".gz").removesuffix(".json")
    st.download_button("Download the trace (.json.gz, opens in ui.perfetto.dev)",
                       data=path.read_bytes, file_name=_file_name(stem, ".json.gz"),
                       mime="application/gzip", key=f"trace-{run_id}", on_click="ignore",
                       icon=":material/download:")


class _VariantBars:
    """One progress bar per variant, fed by ``capture``'s (variant, fraction, message) reports."""

    def __init__(self, names: Iterable[str], runs_each: int):
        self.bars = {n: st.progress(0.0, text=markup.fmt("{}: waiting", n)) for n in names}
        self.done = dict.fromkeys(self.bars, 0)
        self.runs_each, self.seen = runs_each, 0

    def __call__(self, variant: str, fraction: float, message: str) -> None:
        finished = round(fraction * self.runs_each * len(self.bars))
        if variant in self.bars:  # runs finished since the last report are this variant's
            self.done[variant] += max(0, finished - self.seen)
            share = min(1.0, self.done[variant] / self.runs_each)
            self.bars[variant].progress(share, text=markup.fmt("{}: {}", variant, message))
        self.seen = max(self.seen, finished)


def _wait_until_quiet() -> None:
    """Until no page is being drawn and none has begun or ended for `QUIET_S` seconds."""
    while True:
        with _PAGES_LOCK:
            left = QUIET_S if _PAGES["running"] else _PAGES["last"] + QUIET_S - time.monotonic()
        if left <= 0:
            return
        time.sleep(left)


@st.cache_resource
def preload_capture() -> threading.Thread:
    """Import the chart modules (Altair) once the first page is drawn (on a new store, once the
    samples are in). Then import the capture
    layer (torch, and the compiler probe behind the variants' availability:
    seconds of CPU, most of it holding the interpreter's lock) on a helper thread once per server,
    so the profile page's first visitor does not wait for it. Before that, the runs page's figures
    of every run are computed once (kept per run, profiler/analysis/kept.py), so that its first
    visit reads them. Each step waits for the first page to be drawn, for the samples of a new
    store to be in, and then until no page has been drawn for `QUIET_S` seconds: run while pages
    were drawn, it took the cores and the interpreter's lock from them.
    Then the objects alive (the imported modules: ~0.5 M with torch) are frozen out of the garbage
    collector, whose full collections otherwise walked them all, pausing a page for ~0.3 s now
    and then (bench/RESULTS.md, "Pages")."""
    def load() -> None:
        seeding().wait_first_page()
        seeding().wait()  # a new store: its first runs come first (no chart page has runs before)
        # the chart modules: Altair's import loads jsonschema's IRI grammar (rfc3987_syntax: ~1.5 s
        # of a loaded machine), which the first page with a chart waited for; now the runs page
        # is on screen while it loads
        from profiler.present import charts, curve_charts, memory_charts, timeline_view  # noqa: F401

        _wait_until_quiet()
        with guard_quietly():  # the runs page's per-run figures, kept per run: its first visit reads them
            timings.catalog_with_timings(get_store(), queries.run_catalog(get_store()))
        _wait_until_quiet()
        from profiler.capture import variants

        variants.availability(variants.Setting(device=variants.default_device()))
        gc.freeze()

    thread = threading.Thread(target=load, name="preload-capture", daemon=True)
    thread.start()
    return thread


def capture_runs(config) -> tuple[list, list]:
    """Capture ``config`` (a ``capture.CaptureConfig``) with live bars, then ingest the traces."""
    from profiler.capture import recorder as capture  # torch loads only when someone captures

    if not _CAPTURE_LOCK.acquire(blocking=False):
        with st.spinner("Another session is capturing on this machine; waiting for it to finish…"):
            _CAPTURE_LOCK.acquire()
    try:
        config = replace(config, out_dir=traces_dir())
        bars = _VariantBars(config.variants, capture.runs_per_variant(config))
        outcomes = capture.capture(config, progress=bars)
        with st.spinner("Adding the traces to the store…"):
            results = capture.ingest_outcomes(get_store(), outcomes)
        profiled = [o for o in outcomes if o.path is not None]
        for outcome, result in zip(profiled, results):  # same order: ingest_outcomes' contract
            catalog.adopt_trace(outcome.path, traces_dir(), result.run_id)
    except capture.CaptureError as err:
        show_error(err)
        return [], []
    finally:
        _CAPTURE_LOCK.release()
    return results, [o for o in outcomes if o.skipped]


def kept_chart(store, key: tuple, run_ids: Iterable[str], build, **kwargs) -> None:
    """Draw the Altair chart `build()` makes, built once: kept with the runs' results
    (`kept.value`, keyed by `key` and the stamps of `run_ids`, so a run ingested again, renamed or
    given counters is drawn afresh). Building a chart (layers, encodings, copies) took a page
    0.1-0.3 s a chart on every visit; a later visit of the same selection only turns it into its
    spec. `key` names the chart and every input besides the runs' rows (a filter's text, a log
    axis, the app's URL); `kwargs` go to `st.altair_chart` (width, ...)."""
    st.altair_chart(kept.value(store, ("chart", *key), list(run_ids), build), **kwargs)
