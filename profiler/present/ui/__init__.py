"""App glue: the one backend package that imports streamlit. Pages use only this API, as ``ui.<name>``.

Its modules: ``session`` (the store, seeding, page runs, the preload), ``view`` (the URL's view,
links, errors, the Timeline chart's moves), ``tables`` (tables, downloads, charts), ``columns``
(the columns of the Kernels page's tables, the Timeline's range, how runs were measured, Compare's tables),
``finder`` (the runs page's filters), ``selection`` (the runs page's actions on the selected
runs), ``work`` (uploads, jobs, captures); ``serve`` starts the
server (`python -m profiler app`), loading the pages' modules.

Store: ``get_store() -> Store`` is the store at ``PROFILER_DB`` (default ``data/traces.duckdb``),
cached per process, seeded from ``data/samples/`` on a background thread when empty (unless
``PROFILER_SEED=0``; ``seeding()`` tells how far it got, ``seeding_progress()`` draws it for the
runs page); safe to share, it opens a short
connection per call. ``traces_dir()``: kept original traces.

View state (the URL is the source of truth; ``profiler.present.share``):
    ``view_state(page) -> ViewState``  the URL's view for ``page`` (a url path, ``share.PAGES``);
        a bad parameter becomes an ``st.warning``; with no ``runs`` in the URL (after a sidebar
        click) the session's last selection is used and written back to the URL.
    ``set_view(state)`` / ``update_view(state, **changes) -> ViewState``  write to the URL.
    ``select_runs(run_ids)``  make ``run_ids`` the selection (URL + session).
    ``link_to(page, state, label=None)``  ``st.page_link`` that carries the state.
    ``copy_link(state) -> str``  a "Share this view" popover with the full URL (copy button).
    ``chart_move(state, key, selection, extent)``  the Timeline's view after a zoom, pan or drag
        on its chart, or None (each chart selection is taken once).

Empty states and errors:
    ``require_runs(state, minimum=1, purpose=...) -> tuple[str, ...]``  the selected runs that
        exist (warns about unknown ones), else "No runs selected: pick runs on the runs page"
        with a page link, then ``st.stop()``.
    ``show_error(err)``, ``with guard(): ...``  the project's errors (``ProfilerError``,
        ``ShareError``) as ``st.error`` sentences instead of tracebacks.

Tables, files, captures:
    ``CATALOG_COLUMNS``  the runs table's columns (labels, units, help), in display order;
        ``KERNEL_COLUMNS``, ``BREAKDOWN_COLUMNS``, ``ROOF_COLUMNS`` the Kernels page's,
        ``RANGE_COLUMNS`` the Timeline's selected range, ``KERNEL_EVENT_COLUMNS`` and
        ``OP_EVENT_COLUMNS`` the Events page's, ``BASELINE_COLUMNS``, ``ALIGN_COLUMNS``,
        ``DELTA_COLUMNS`` and ``API_DELTA_COLUMNS`` Compare's.
    ``RECORD_COLUMNS``  the runs page's "how the selected runs were measured" table.
    ``run_finder(state, runs) -> (state, rows)``  the runs page's filter widgets (values from and to
        the share URL) and the catalog rows they keep (``profiler.present.run_filters``);
        ``one_per_variant(state, rows)`` its button that selects the median repeat per variant;
        ``catalog_key()`` the runs table's widget key (new after that pick).
    ``empty_store()``, ``open_selection(state)``, ``how_measured(state, store)``,
        ``rename_or_delete(state)``  the runs page's empty state (then ``st.stop()``), the links that
        open the selected runs, how they were measured, and their rename and delete.
    ``pick_row(df, key, **kw) -> int | None``  a table whose rows are picked one at a time (the
        Events page); the picked row's position.
    ``pick_rows(df, key, selected, id_col="run_id", **kw) -> tuple[str, ...]``  row-selectable
        ``st.dataframe`` pre-selected from ``selected``; the selected ids (selected ids that are
        not rows of ``df``, e.g. filtered out, stay selected).
    ``ranked_runs(store, run_ids, title)``  one ranked table per shape group, its sentence on top
        (``profiler.analysis.findings.ranking``); the runs page and compare show the same.
    ``table(df, **kw)``  ``st.dataframe`` with safe cells (no formula, no line break: its
        toolbar downloads them); pages show every table through it.
    ``csv_download(df, name, label=...)``  ``name.csv`` download button (cells made safe alike).
    ``with folded(label, key, expanded=False) as open_:``  an expander whose block is told whether
        it is open, so a closed one reads and sends nothing (opening it runs the page again).
    ``ingest_files(files) -> list[IngestResult]``  one progress bar per upload, errors per file.
    ``ingest_graph_pair(files, asked) -> (handled, IngestResult | None)``  a graph replay and its
        capture (files chosen together or a zip; asked, or found among several files) stored as
        one joined run (``profiler.storage.graph_pair``).
    ``upload_limit_mb() -> int``  the server's per-file upload limit.
    ``rename_run(run_id, name)``, ``delete_runs(run_ids) -> int``, ``RUN_NAME_MAX_CHARS``  the runs
        page's changes to the store (``profiler.storage.catalog``), kept traces deleted with runs.
    ``trace_download(run_id)``  download the run's original ``.json.gz`` (for Perfetto).
    ``capture_layer() -> bool``  the profile page's door to torch: a "Set up a capture" button,
        then the capture layer loads under a progress message (True once loaded in this server).
    ``capture_runs(config) -> (results, skipped outcomes)``  a ``profiler.capture.recorder`` capture with
        a live bar per variant, then ingest; one capture per server at a time (others wait).
"""
import importlib

# each name ▶ the module that defines it, imported on first use (PEP 562): a page pays only for the
# modules it reads, and the first page's title draws before pandas and Altair are loaded
_HOME = {
    **dict.fromkeys(("ALIGN_COLUMNS", "API_DELTA_COLUMNS", "BASELINE_COLUMNS", "BREAKDOWN_COLUMNS", "DELTA_COLUMNS", "KERNEL_COLUMNS", "KERNEL_EVENT_COLUMNS", "OP_EVENT_COLUMNS", "RANGE_COLUMNS",
                     "RECORD_COLUMNS", "ROOF_COLUMNS"), "columns"),
    **dict.fromkeys(("catalog_key", "one_per_variant", "run_finder"), "finder"),
    **dict.fromkeys(("empty_store", "how_measured", "open_selection", "rename_or_delete"), "selection"),
    **dict.fromkeys(("PROJECT_ERRORS", "WRITING_PAGES", "db_path", "get_store", "page_run", "preload", "seeding",
                     "seeding_progress", "traces_dir"), "session"),
    **dict.fromkeys(("CATALOG_COLUMNS", "RUN_COLUMN_PX", "csv_download", "folded", "kept_chart", "pick_row", "pick_rows",
                     "ranked_runs", "run_column", "table"), "tables"),
    **dict.fromkeys(("PAGE_FILES", "PAGE_ICONS", "app_base", "chart_move", "copy_link", "entered_through_app", "guard",
                     "guard_quietly", "link_to", "linked_event", "linked_range", "log_axis", "require_runs", "select_runs", "set_view", "show_error",
                     "update_view", "view_state"), "view"),
    **dict.fromkeys(("RUN_NAME_MAX_CHARS", "capture_layer", "capture_runs", "delete_runs", "ingest_files",
                     "ingest_graph_pair", "ingest_job_upload", "rename_run", "trace_download", "upload_limit_mb"), "work"),
}
__all__ = sorted(_HOME)
MODULES = tuple(dict.fromkeys(_HOME.values()))  # the glue's modules (`serve` loads them before a first page)


def __getattr__(name: str):
    if name in _HOME.values():  # a module of the package itself (ui.session, as tests reach into it)
        return importlib.import_module(f"{__name__}.{name}")
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
