"""The view in the URL, links between pages and errors as sentences (part of the app glue,
`profiler.present.ui`)."""
from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import streamlit as st
from streamlit import config as st_config
from streamlit import delta_generator
from streamlit.runtime.pages_manager import PagesManager

from profiler.errors import StoreError
from profiler.present import markup, share, sitemap
from profiler.present.share import ShareError, ViewState, app_root, decode, encode, share_url
from profiler.present.ui.session import PROJECT_ERRORS, get_store, page_viewed

PAGE_FILES = {page.url_path: page.file for page in sitemap.SITE}  # read from the one list of pages
PAGE_ICONS = {page.url_path: page.icon for page in sitemap.SITE}
_RUNS_KEY = "_selected_runs"


def _session_runs() -> tuple[str, ...]:
    return tuple(st.session_state.get(_RUNS_KEY, ()))


_ENTRY = threading.local()  # set by app.py in each script run that goes through st.navigation


def entered_through_app() -> None:
    """Called by app.py before ``st.navigation``: this script run is the real app, served.

    So Streamlit need not ask, at the first element a server process draws, whether it runs in a
    Python REPL (to print a hint there): it asks by reading the source file of every frame on the
    stack (`inspect.stack()`), 0.14-0.15 s of a fresh server's first script run on 2 cores
    (bench/RESULTS.md, "A fresh server's first script run"). The question is
    marked as asked (a Streamlit without that flag just carries one attribute more)."""
    _ENTRY.app = True
    delta_generator._use_warning_has_been_displayed = True


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
    page_viewed()
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
    from profiler.analysis.reads import run_queries  # pandas: not before a page with runs needs it (first paint)

    try:
        known = set(run_queries.run_labels(get_store(), runs)["run_id"])
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


def log_axis(state: ViewState, key: str = "log", default: bool = False, label: str = "Log axis",
             help: str | None = None) -> tuple[ViewState, bool]:
    """A "log axis" toggle for a page's charts, `default` when the URL does not say (kept in the
    URL as ``key=1`` or ``key=0`` when it differs from the default): the view (updated when it
    changed) and whether to draw a log axis."""
    stored = state.filter(key)
    now = default if stored not in ("0", "1") else stored == "1"
    on = st.toggle(markup.md(label), value=now, key=f"log-axis-{key}",
                   help=markup.md(help) if help else "Bars on a logarithmic axis (labelled so): small values "
                   "become visible, but lengths no longer compare. Linear by default.")
    if on != now:
        state = update_view(state, filters=state.with_filter(key, None if on == default else str(int(on))).filters)
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
    """Run a block whose result the page can do without (off the page, on a helper thread, or a
    line drawn early); the project's errors are dropped: the code that needs the result computes
    it again and shows the error there."""
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


def chart_move(state: ViewState, key: str, selection: dict, extent: int) -> ViewState | None:
    """The Timeline's view after a wheel zoom, pan or drag on its chart (`key`), or None when
    nothing new happened there. Streamlit keeps reporting a chart's last selection (and an empty
    one at first), so each is taken once: only a change from the last one seen moves the view."""
    from profiler.present import timeline_window  # pandas: the Timeline page's, not the first page's

    new = state
    for name in ("zoom", "brush"):
        if name not in selection:
            continue
        seen, now = f"{key}-{name}", timeline_window.brushed_ns(selection, name)
        first = seen not in st.session_state
        if first or st.session_state[seen] == now:
            st.session_state[seen] = now
            continue
        st.session_state[seen] = now
        if name == "zoom" and now:
            new = new.with_(window_ns=timeline_window.zoom_window(now, extent, 1.0))
        elif name == "brush":
            new = share.with_span(new, "range", now)
    return None if new == state else new


def linked_range(state: ViewState) -> tuple[int, int] | None:
    """The Timeline's dragged range the URL keeps (None, with a warning, when it is not a range)."""
    try:
        return share.span_ns(state, "range")
    except ShareError as err:
        st.warning(f"The link's range is ignored: {markup.md(err)}")
        return None


def linked_event(state: ViewState) -> tuple[str, int] | None:
    """The event a link picks on the Timeline (the Events page's rows): (run id, external id),
    or None (with a warning when the link's is not one)."""
    try:
        return share.picked_event(state)
    except ShareError as err:
        st.warning(f"The link's event is ignored: {markup.md(err)}")
        return None
