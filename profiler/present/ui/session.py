"""The app's store and the work around page runs (part of the app glue, `profiler.present.ui`).

``get_store()`` is the store at ``db_path()`` (``PROFILER_DB``, default ``data/traces.duckdb``),
cached per process. A store not made yet starts as the shipped samples, already ingested
(``unpack_samples``), or, when those do not match data/samples/, is seeded from there on a
background thread (neither with ``PROFILER_SEED=0``; ``seeding()`` tells how far it got).
``page_run(page)`` wraps one page's script run (app.py); ``preload()`` warms what later pages
need once the server is quiet.
"""
from __future__ import annotations

import atexit
import gc
import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import streamlit as st

from profiler.capture.samples import Seeding, seed_in_background, unpack_shipped
from profiler.errors import ProfilerError
from profiler.present import markup
from profiler.present.share import ShareError
from profiler.storage.store import Store, default_db_path

PROJECT_ERRORS = (ProfilerError, ShareError)  # TraceError, StoreError, ... all derive from it
WRITING_PAGES = ("profile", "upload")  # page_run leaves these pages' store calls their own
# and the SQL page's: its query runs in a child process that must open the file itself
OWN_CALLS_PAGES = (*WRITING_PAGES, "sql")
FIRST_RUNS_EVERY_S = 0.2  # an empty runs table looks for the first samples this often
TABLE_EVERY_S = 5.0  # while the samples land, the runs table is redrawn at most this often
QUIET_S = 3.0  # the preload waits until no page has been drawn for this long (it would slow that page)
_PAGES = {"running": 0, "last": time.monotonic()}  # page script runs in flight (page_run), and when one last began or ended
_PAGES_LOCK = threading.Lock()
PAGE_BEGUN = threading.Event()  # a page's script run has begun in this process (`serve`'s warm-up stops)


def seeding_on() -> bool:
    return os.environ.get("PROFILER_SEED", "1") != "0"


def unpack_samples(path: str) -> bool:
    """A store file not made yet at ``path`` made a copy of the shipped samples' store (~0.1 s;
    `samples.unpack_shipped`), when seeding is on; True when this call made it."""
    return seeding_on() and unpack_shipped(Path(path))  # (which never writes over a file)


@st.cache_resource(show_spinner="Opening the trace store…")
def _store_at(path: str) -> tuple[Store, Seeding]:
    store = Store(path)  # opens nothing yet
    if not seeding_on():
        return store, Seeding()
    unpack_shipped(Path(path))  # (or the server's warm-up did it already: serve.warm_up)
    try:  # a store file still not made is made by the seeding thread, after the first page's title
        return store, seed_in_background(store, new_file=not Path(path).exists())
    except ProfilerError:  # not a store (a SQLite file, a folder): each page says so in one sentence
        return store, Seeding()


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
    the file between their calls; nor on the SQL page, whose query runs in a process of its own
    (`OWN_CALLS_PAGES`); nor while the samples are seeded: the seeding thread holds it, and opens
    a new store's file itself (the runs page's title draws first). A store that cannot be opened
    is left to the page, whose reads say why."""
    _page_started()
    try:
        with ExitStack() as stack:
            if page not in OWN_CALLS_PAGES and not seeding().running:  # else the seeding thread holds it
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
    PAGE_BEGUN.set()
    with _PAGES_LOCK:
        _PAGES["running"] += 1
        _PAGES["last"] = time.monotonic()


def page_viewed() -> None:
    """A page's script run has begun (a run without app.py's `page_run`, as in AppTest, counts
    from here): the preload waits `QUIET_S` after it."""
    with _PAGES_LOCK:
        _PAGES["last"] = time.monotonic()


def seeding() -> Seeding:
    """The background seeding of the store from the shipped samples (``running`` while it lasts)."""
    return _store_at(db_path())[1]


def seeding_progress() -> bool:
    """For the runs page, while the shipped samples are still being loaded into a new store: the
    progress line (`_watch_seeding`). True while that lasts."""
    samples = seeding()
    if samples.error:
        st.warning(markup.fmt("The shipped samples could not all be loaded: {}", samples.error))
    if not samples.running:
        return False
    (_watch_first_runs if samples.done == 0 else _watch_seeding)(samples.done, time.monotonic())
    return True


def _progress(shown: int, drawn_at: float) -> None:
    """The progress line (redrawn alone, cheap: the seeding thread keeps the CPU). The whole page
    reruns, to show the runs that landed since it was drawn with `shown` of them at `drawn_at`,
    only when seeding has ended, when the first runs arrive in an empty table, or at most every
    `TABLE_EVERY_S` seconds: a rerun every second took the CPU from the seeding."""
    samples = seeding()
    landed = samples.done != shown
    if not samples.running or (landed and (shown == 0 or time.monotonic() - drawn_at >= TABLE_EVERY_S)):
        st.rerun(scope="app")
    st.progress(samples.done / max(samples.total, 1),
                text=f"Loading the shipped H200 sample runs: {samples.done:,} of {samples.total:,} in "
                     "the store. The table fills in as they land.")


@st.fragment(run_every=FIRST_RUNS_EVERY_S)
def _watch_first_runs(shown: int, drawn_at: float) -> None:
    """Before the first runs: looked at often (the first batch is small), so they show at once."""
    _progress(shown, drawn_at)


@st.fragment(run_every=1.0)
def _watch_seeding(shown: int, drawn_at: float) -> None:
    """Once the table has runs: every second."""
    _progress(shown, drawn_at)


def traces_dir() -> Path:
    """Where the original trace files live: ``traces/`` next to the store file."""
    return Path(db_path()).parent / "traces"


def _wait_until_quiet() -> None:
    """Until no page is being drawn and none has begun or ended for `QUIET_S` seconds."""
    while True:
        with _PAGES_LOCK:
            left = QUIET_S if _PAGES["running"] else _PAGES["last"] + QUIET_S - time.monotonic()
        if left <= 0:
            return
        time.sleep(left)


@st.cache_resource
def preload() -> threading.Thread:
    """Warm what the next pages read, on a helper thread once per server, after the first page:
    the chart modules (Altair and its schema: ~0.3 s), then the runs page's figures of every run
    (kept per run, profiler/analysis/reads/kept.py), so that its next visit reads them: in a store
    of at most `kept.SQL_BULK` runs (a larger store's are read afresh, which costs less than keeping
    them, so the preload leaves them). Each step waits
    for the first page to be drawn, for the samples of a new store to be in, and then until no
    page has been drawn for `QUIET_S` seconds: run while pages were drawn, it took the cores and
    the interpreter's lock from them. Then the objects alive (the imported modules) are frozen out
    of the garbage collector, whose full collections otherwise walked them all, pausing a page for
    ~0.3 s now and then (bench/RESULTS.md, "Pages"). torch is not among them: the capture layer
    loads when a capture starts (the profile page, `work.capture_runs`), nowhere else."""
    def load() -> None:
        seeding().wait_first_page()
        seeding().wait()  # a new store: its first runs come first (no chart page has runs before)
        from profiler.analysis.reads import kept, run_queries
        from profiler.analysis.findings import timings
        from profiler.present import charts, curve_charts, memory_charts, timeline_view  # noqa: F401

        _wait_until_quiet()
        with busy:  # the process does not end while the store is read here (see below)
            if exiting.is_set():
                return
            try:  # the runs page's per-run figures, kept per run; a larger store's would not be kept
                store = get_store()
                if store.run_count() <= kept.SQL_BULK:
                    timings.catalog_with_timings(store, run_queries.run_catalog(store))
            except PROJECT_ERRORS:  # the page computes them again and says why
                pass
        gc.freeze()

    # A daemon thread still inside DuckDB when the interpreter ends is unwound through DuckDB's
    # C++ frames, which aborts the process ("FATAL: exception not rethrown", exit -6, seen when a
    # server stopped during the preload): at exit, the read in flight ends first, none begins.
    busy, exiting = threading.Lock(), threading.Event()

    def at_exit() -> None:
        exiting.set()
        busy.acquire(timeout=60)

    atexit.register(at_exit)
    thread = threading.Thread(target=load, name="preload", daemon=True)
    thread.start()
    return thread
