"""App glue: the one backend module that imports streamlit. Pages use only this API.

Store
    ``get_store() -> Store``: the store at ``PROFILER_DB`` (default ``data/traces.duckdb``),
    cached per process with ``st.cache_resource``; an empty store is seeded once from
    ``data/samples/`` (``profiler.samples.seed_if_empty``). Safe to share across sessions: the
    Store opens a short-lived connection per call.

View state (the URL is the source of truth; see ``profiler.share``)
    ``view_state(page) -> ViewState``: the view described by ``st.query_params`` for ``page``
    (one of ``share.PAGES``). A bad parameter shows an ``st.warning`` and is dropped. When the URL
    names no runs (e.g. after clicking the sidebar), the session's last selection is used and
    written back to the URL so it can be shared.
    ``set_view(state)``: write ``state`` to the URL (and remember its runs for this session).
    ``update_view(state, **changes) -> ViewState``: ``set_view(state.with_(**changes))``.
    ``select_runs(run_ids)``: make ``run_ids`` the selection (URL + session).

Empty states and errors
    ``require_runs(state, minimum=1, purpose=...) -> tuple[str, ...]``: the selected runs, or
    an ``st.info`` "No runs selected: pick runs on the runs page" with a page link, then
    ``st.stop()``.
    ``show_error(err)``: ``st.error`` with the project's own message (``TraceError``,
    ``StoreError``, ``ShareError``).
    ``with guard(): ...``: run a block, showing those errors with ``st.error`` instead of a
    traceback; returns normally afterwards (the rest of the page still renders).

Sharing and downloads
    ``copy_link(state)``: a "Share this view" popover holding the full URL (copy button).
    ``csv_download(df, name, label=...)``: a download button for ``df`` as ``name.csv``.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import streamlit as st

from profiler.errors import StoreError, TraceError
from profiler.share import PAGES, ShareError, ViewState, decode, encode, share_url
from profiler.store import Store, default_db_path

PROJECT_ERRORS = (TraceError, StoreError, ShareError)
_RUNS_KEY = "_selected_runs"
_SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"


@st.cache_resource(show_spinner="Opening the trace store…")
def _store_at(path: str) -> Store:
    store = Store(path)
    _seed(store)
    return store


def _seed(store: Store) -> None:
    try:
        from profiler.samples import seed_if_empty
    except ModuleNotFoundError:
        return
    seed_if_empty(store)


def db_path() -> str:
    """The store path this process uses (``PROFILER_DB`` or the default)."""
    return str(Path(os.environ.get("PROFILER_DB") or default_db_path()).resolve())


def get_store() -> Store:
    """The cached store for ``db_path()``."""
    return _store_at(db_path())


def _session_runs() -> tuple[str, ...]:
    return tuple(st.session_state.get(_RUNS_KEY, ()))


def view_state(page: str) -> ViewState:
    """The view the URL describes for ``page``, falling back to the session's selected runs."""
    params = st.query_params.to_dict()
    try:
        state = decode(params, page)
    except ShareError as err:
        st.warning(f"This link has a parameter the dashboard cannot use ({err}); it is ignored.")
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


def require_runs(state: ViewState, minimum: int = 1, purpose: str = "this page") -> tuple[str, ...]:
    """The selected runs, or an empty state with a link to the runs page (then stop)."""
    if len(state.runs) >= minimum:
        return state.runs
    if state.runs:
        st.info(f"{purpose.capitalize()} needs {minimum} runs; {len(state.runs)} selected. "
                "Pick more on the runs page.")
    else:
        st.info("No runs selected: pick runs on the runs page.")
    st.page_link("pages/runs.py", label="Go to the runs page", icon=":material/list:")
    st.stop()


def show_error(err: Exception) -> None:
    """Show one of the project's errors as a sentence, not a traceback."""
    st.error(str(err), icon=":material/error:")


@contextmanager
def guard() -> Iterator[None]:
    """Run a block; the project's errors become ``st.error`` messages."""
    try:
        yield
    except PROJECT_ERRORS as err:
        show_error(err)


def _base_url() -> str:
    url = st.context.url or ""
    for page in PAGES:
        if url.rstrip("/").endswith("/" + page):
            return url.rstrip("/")[: -len(page) - 1]
    return url.rstrip("/")


def copy_link(state: ViewState) -> str:
    """A popover with the URL of this view; returns the URL."""
    url = share_url(state, base=_base_url())
    with st.popover("Share this view", icon=":material/link:"):
        st.caption("Anyone with access to this dashboard sees the same runs and view:")
        st.code(url, language=None, wrap_lines=True)
    return url


def csv_download(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    """A button that downloads ``df`` as ``name.csv`` (no rerun on click)."""
    st.download_button(
        label, df.to_csv(index=False).encode(), file_name=f"{name}.csv", mime="text/csv",
        key=f"csv-{name}", on_click="ignore", icon=":material/download:",
    )
