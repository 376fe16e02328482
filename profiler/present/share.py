"""View state <-> URL: every shareable URL of the dashboard is built and parsed here.

A ``ViewState`` is the whole view a teammate should see when opening a copied link: the page
(the URL path, e.g. ``/timeline``), the selected run ids, the iteration, a time window in
nanoseconds and free-form filters. It travels as query parameters:

    /timeline?runs=3f2a9c0d11e2b4a7,9be1c07fa1d2e3f4&iter=2&window=1000,250000&q=flash

``encode(state)`` gives the query parameters (the page is the URL path, not a parameter);
``decode(params, page)`` reverses it, so ``decode(encode(s), s.page) == s`` for every valid
state. ``share_url`` / ``parse_url`` do the same for a whole URL. Bad parameters raise
``ShareError`` with a sentence naming the parameter and the problem.

The pages themselves are listed in ``sitemap.py``. Imports only the standard library and that
list (presentation layer; no streamlit here).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl, urlencode, urlsplit

from profiler.errors import ShareError
from profiler.present import sitemap

PAGES = tuple(sitemap.BY_PATH)  # the URL paths, in sidebar order
DEFAULT_PAGE = sitemap.DEFAULT_PAGE
RESERVED = frozenset({"runs", "iter", "window"})
_RUN_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_FILTER_KEY = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_INT = re.compile(r"^-?[0-9]{1,19}$")
# URL numbers stay where a browser's numbers are exact and widgets accept them
MAX_ITERATION = 1_000_000
MAX_TIME_NS = 2**53 - 1
MAX_RUNS = 500
MAX_FILTER_CHARS = 500
LONG_FILTERS = {"sql": 4_000}  # filters that may be longer: the SQL page's query (storage/console.py's cap)


@dataclass(frozen=True)
class ViewState:
    """What a shared link restores. Build with keyword arguments; it validates itself."""

    page: str = DEFAULT_PAGE
    runs: tuple[str, ...] = ()
    iteration: int | None = None
    window_ns: tuple[int, int] | None = None
    filters: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "runs", tuple(self.runs))
        object.__setattr__(self, "filters", tuple(sorted(dict(self.filters).items())))
        _check_page(self.page)
        _check_runs(self.runs)
        _check_iteration(self.iteration)
        _check_window(self.window_ns)
        _check_filters(self.filters)

    def filter(self, key: str, default: str | None = None) -> str | None:
        """The value of one filter, or ``default`` when the URL does not set it."""
        return dict(self.filters).get(key, default)

    def with_filter(self, key: str, value: str | None) -> "ViewState":
        """A copy with one filter set (``value=None`` or ``""`` removes it)."""
        items = {k: v for k, v in self.filters if k != key}
        if value not in (None, ""):
            items[key] = value
        return replace(self, filters=tuple(items.items()))

    def with_(self, **changes) -> "ViewState":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


def _check_page(page: str) -> None:
    if page not in PAGES:
        raise ShareError(f"unknown page {page!r}: expected one of {', '.join(PAGES)}")


def _check_runs(runs: tuple[str, ...]) -> None:
    for run in runs:
        if not isinstance(run, str) or not _RUN_ID.match(run):
            raise ShareError(f"runs: {run!r} is not a run id (letters, digits, '_', '-', '.')")
    if len(runs) > MAX_RUNS:
        raise ShareError(f"runs: {len(runs)} runs are more than a link can name ({MAX_RUNS})")
    if len(set(runs)) != len(runs):
        raise ShareError("runs: the same run id is listed twice")


def _check_iteration(iteration: int | None) -> None:
    if iteration is not None and (not isinstance(iteration, int) or not 0 <= iteration <= MAX_ITERATION):
        raise ShareError(f"iter: {iteration!r} is not an iteration number (0, 1, 2, ... {MAX_ITERATION:,})")


def _check_window(window: tuple[int, int] | None) -> None:
    if window is None:
        return
    if len(window) != 2 or not all(isinstance(t, int) for t in window):
        raise ShareError(f"window: {window!r} is not two integer nanosecond times")
    if not all(0 <= t <= MAX_TIME_NS for t in window):
        raise ShareError(f"window: times must be between 0 and {MAX_TIME_NS} ns")
    if window[0] >= window[1]:
        raise ShareError(f"window: start {window[0]} ns must be before end {window[1]} ns")


def _check_filters(filters: tuple[tuple[str, str], ...]) -> None:
    for key, value in filters:
        if key in RESERVED or not _FILTER_KEY.match(key):
            raise ShareError(f"filter name {key!r} is reserved or not lower_snake_case")
        if not isinstance(value, str) or not value:
            raise ShareError(f"filter {key}: value must be a non-empty string")
        limit = LONG_FILTERS.get(key, MAX_FILTER_CHARS)
        if len(value) > limit:
            raise ShareError(f"filter {key}: value is longer than {limit} characters")


def encode(state: ViewState) -> dict[str, str]:
    """Query parameters for ``state`` (page excluded: it is the URL path)."""
    params: dict[str, str] = {}
    if state.runs:
        params["runs"] = ",".join(state.runs)
    if state.iteration is not None:
        params["iter"] = str(state.iteration)
    if state.window_ns is not None:
        params["window"] = f"{state.window_ns[0]},{state.window_ns[1]}"
    params.update(state.filters)
    return params


def _parse_int(name: str, text: str) -> int:
    if not _INT.match(text.strip()):
        raise ShareError(f"{name}: {text!r} is not an integer")
    return int(text)


def _parse_window(text: str, name: str = "window") -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2:
        raise ShareError(f"{name}: {text!r} should be 'start_ns,end_ns'")
    return (_parse_int(name, parts[0]), _parse_int(name, parts[1]))


EVENT_PAD_NS = 20_000   # the least time shown either side of an event the Timeline opens at


def event_view(run_id: str, step: int, start_ns: int, dur_ns: int, external_id: int) -> ViewState:
    """The Timeline at one event of one run (the Events page's rows): its step, a window from a
    little before it starts to a little after it ends (at least twice its length either side),
    and the event picked (filter ``event``: ``run_id:external_id``), so its flow is drawn."""
    pad = max(2 * int(dur_ns), EVENT_PAD_NS)
    start = max(0, int(start_ns) - pad)
    window = (start, min(max(int(start_ns) + int(dur_ns) + pad, start + 1), MAX_TIME_NS))
    return ViewState(page="timeline", runs=(run_id,), iteration=int(step), window_ns=window,
                     filters=(("event", f"{run_id}:{int(external_id)}"),))


def picked_event(state: ViewState) -> tuple[str, int] | None:
    """The event a link asks the Timeline to pick: (run id, external id), or None; raises
    ``ShareError`` on a malformed one."""
    text = state.filter("event")
    if text is None:
        return None
    run, _, ext = text.rpartition(":")
    _check_runs((run,))
    return run, _parse_int("event", ext)


def span_ns(state: ViewState, key: str) -> tuple[int, int] | None:
    """A time span kept in a filter as ``start_ns,end_ns`` (the timeline's dragged ``range``),
    or None when the URL has none; raises ``ShareError`` on a bad one."""
    text = state.filter(key)
    if text is None:
        return None
    span = _parse_window(text, key)
    try:
        _check_window(span)
    except ShareError as err:
        raise ShareError(str(err).replace("window:", f"{key}:", 1)) from None
    return span


def with_span(state: ViewState, key: str, span: tuple[int, int] | None) -> ViewState:
    """``state`` with a time span filter set (None removes it)."""
    return state.with_filter(key, None if span is None else f"{int(span[0])},{int(span[1])}")


def decode(params: Mapping[str, str], page: str = DEFAULT_PAGE) -> ViewState:
    """The view described by query parameters; raises ``ShareError`` on a bad value."""
    runs_text = params.get("runs", "")
    runs = tuple(r for r in runs_text.split(",") if r) if runs_text else ()
    iteration = _parse_int("iter", params["iter"]) if params.get("iter") else None
    window = _parse_window(params["window"]) if params.get("window") else None
    filters = tuple((k, v) for k, v in params.items() if k not in RESERVED and v != "")
    return ViewState(page=page, runs=runs, iteration=iteration, window_ns=window, filters=filters)


def share_url(state: ViewState, base: str = "") -> str:
    """``base`` (e.g. ``http://host:8501``) + ``/page`` + ``?query`` for ``state``.

    The default page (runs) is the app's root URL, as Streamlit serves it.
    """
    query = urlencode(encode(state), safe=",")
    path = "" if state.page == DEFAULT_PAGE else state.page  # the default page is the root URL
    return f"{base.rstrip('/')}/{path}" + (f"?{query}" if query else "")


def app_root(url: str) -> str:
    """The app's root URL from the URL of one of its pages (query already removed), e.g.
    ``https://x.hf.space/kernels`` -> ``https://x.hf.space``; the root itself stays as it is."""
    trimmed = url.rstrip("/")
    for page in PAGES:
        if trimmed.endswith("/" + page):
            return trimmed[: -len(page) - 1]
    return trimmed


def parse_url(url: str) -> ViewState:
    """The view a shared URL describes (its last path segment is the page; empty means runs)."""
    parts = urlsplit(url)
    page = parts.path.rstrip("/").rsplit("/", 1)[-1] or DEFAULT_PAGE
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    return decode(params, page)
