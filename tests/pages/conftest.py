"""AppTest helpers for the page tests: a real store built from fixture traces, and `open_page`.

`page_store` is a fresh copy (per test) of a DuckDB store holding the hand-written runs in
`tests/fixtures/pages/` (captured-style, with `attention_run` metadata) and, when the third-party
traces are present (tests/conftest.py), one real ROCm trace; `run_ids` maps each fixture file name to its run id; `empty_store` is
an empty one (samples seeding off). The `pages` fixture drives the app:

    at = pages.open("kernels", runs="id1,id2", iter="1")   # as a shared link opens it
    pages.assert_clean(at)                                 # no exception, no st.error
    assert "flash" in pages.texts(at)                      # all markdown/caption/info/... text

Note: AppTest (Streamlit 1.67) resets its pages-directory flag before every run, so while a
`pages/` folder exists it runs a non-default page's script directly, without app.py (the root
URL, the runs page, does go through app.py). tests/test_browser.py covers app.py's navigation
for every page on a real server.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import os
import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from streamlit.components.v2 import manifest_scanner

from profiler.errors import ProfilerError
from profiler.present.sitemap import SITE
from profiler.present.ui.session import OWN_CALLS_PAGES
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.conftest import HAVE_SHARED, SHARED_TRACES, held_open
from tests.crafted_jobs import rank_trace, write_ranks
from tests.conftest import ingest_all

ROOT = Path(__file__).resolve().parents[2]
PAGE_FIXTURES = ROOT / "tests" / "fixtures" / "pages"
ROCM_TRACE = SHARED_TRACES / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
PAGE_FILE = {page.url_path: page.file for page in SITE}
TIMEOUT_S = 60
FLASH, NAIVE = "sdpa_flash_small.json", "naive_small.json"  # fixture runs in tests/fixtures/pages
ROCM = ROCM_TRACE.name


def folded_keys() -> tuple[str, ...]:
    """The key of every folded section (`ui.folded(label, key, ...)`) of the pages, read from their
    source: page tests open them all unless a test says otherwise, so that every page test reads
    and checks what a folded section shows, as a user who opens it sees it."""
    keys = []
    for page in SITE:
        for node in ast.walk(ast.parse((ROOT / page.file).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "folded":
                key = node.args[1] if len(node.args) > 1 else next(k.value for k in node.keywords if k.arg == "key")
                assert isinstance(key, ast.Constant), f"{page.file}:{node.lineno}: a folded section's key must be a literal"
                keys.append(key.value)
    return tuple(keys)


FOLDS = folded_keys()


def scan_installed_components_once() -> None:
    """Each new AppTest scans every installed distribution's metadata for Streamlit components
    (0.4-0.5 s on 2 cores, before its script runs; a server does it once at start). The installed
    packages do not change during a test run, so the scan's result is kept for the process."""
    scan = manifest_scanner.scan_component_manifests
    if not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(scan)


scan_installed_components_once()


def tables_with(at: AppTest, column: str) -> list:
    """The DataFrames on the page that have `column`."""
    return [df.value for df in at.dataframe if column in df.value.columns]


def param(at: AppTest, key: str) -> list[str]:
    """A query parameter of the page's URL, as a list (one value or several)."""
    value = at.query_params[key]
    return value if isinstance(value, list) else [value]


def fixture_traces() -> list[Path]:
    """The page fixtures, plus the ROCm trace where the third-party traces are present (tests
    that open it are marked `third_party`)."""
    return sorted(PAGE_FIXTURES.glob("*.json")) + ([ROCM_TRACE] if HAVE_SHARED else [])


@pytest.fixture(scope="session")
def page_store_template(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A store file with every fixture trace, built once; returns (path, {file name: run id})."""
    path = tmp_path_factory.mktemp("page-store") / "template.duckdb"
    store = Store(path)
    files = list(fixture_traces())
    ids = {p.name: r for p, r in zip(files, ingest_all(store, files))}
    return path, ids


@pytest.fixture
def page_store(page_store_template, tmp_path, monkeypatch) -> Store:
    """A private copy of the template store; PROFILER_DB points at it for the app."""
    template, _ = page_store_template
    path = tmp_path / "store.duckdb"
    shutil.copyfile(template, path)
    monkeypatch.setenv("PROFILER_DB", str(path))
    return Store(path)


@pytest.fixture(scope="session")
def with_jobs(page_store_template, tmp_path_factory):
    """A folder holding `store.duckdb` (the page store with two jobs of two ranks, 'good' and
    'bad') and its job files `store-jobs/`, built once per test process: tests copy both."""
    folder = tmp_path_factory.mktemp("pages-jobs")
    shutil.copyfile(page_store_template[0], folder / "store.duckdb")
    store = Store(folder / "store.duckdb")
    for job, world in (("good", 2), ("bad", 4)):
        files = write_ranks(folder / job, {f"{job}{r}.json": rank_trace(r, world, 30 + 3 * r) for r in range(2)})
        job_ingest.ingest_job(store, files, job, engine="in-process")
    return folder


@pytest.fixture
def run_ids(page_store_template) -> dict[str, str]:
    """{fixture file name: run id} of the runs in `page_store`."""
    return dict(page_store_template[1])


@pytest.fixture
def empty_store(tmp_path, monkeypatch) -> Store:
    """An empty store (PROFILER_DB points at it; seeding from data/samples is off)."""
    path = tmp_path / "empty.duckdb"
    monkeypatch.setenv("PROFILER_DB", str(path))
    monkeypatch.setenv("PROFILER_SEED", "0")
    return Store(path)


@contextlib.contextmanager
def held_as_served(page: str):
    """The store at $PROFILER_DB held open while the block runs, where app.py's `page_run` holds
    it: not on the pages that make their own calls (`OWN_CALLS_PAGES`), and only for a store file
    that exists (a test's missing file stays missing) and opens at once (a locked or damaged one is
    left to the page, which says why)."""
    path = os.environ.get("PROFILER_DB")
    with contextlib.ExitStack() as stack:
        if path and page not in OWN_CALLS_PAGES and Path(path).is_file():
            try:
                stack.enter_context(held_open(Store(path, lock_timeout_s=0)))
            except ProfilerError:
                pass
        yield


class PageDriver:
    """Open pages of the real app with AppTest and check what they show."""

    @staticmethod
    def open(page: str, opened: tuple[str, ...] = FOLDS, closed: tuple[str, ...] = (), **params: str) -> AppTest:
        """Open `page` (a url path such as "kernels") with these query parameters and the folded
        sections (`ui.folded`) keyed `opened` open (by default every one: `FOLDS`; `opened=()`
        leaves each as the page first shows it) and `closed` closed, as a user who unfolded or
        folded them sees it; its first script run reads over one open database, as app.py's
        `page_run` holds it on a server (`held_as_served`: AppTest runs a page other than the runs
        page without app.py)."""
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT_S)
        for key, value in params.items():
            at.query_params[key] = value
        for key in opened:
            at.session_state[key] = True
        for key in closed:
            at.session_state[key] = False
        if page != "runs":
            at.switch_page(PAGE_FILE[page])
        with held_as_served(page):
            return at.run()

    @staticmethod
    def assert_clean(at: AppTest) -> None:
        """No uncaught exception and no st.error on the page."""
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, [e.value for e in at.error]

    @staticmethod
    def texts(at: AppTest) -> str:
        """Every title, markdown, caption, info, warning and success text on the page, joined."""
        kinds = ("title", "markdown", "caption", "info", "warning", "success")
        return "\n".join(shown(e.value) for kind in kinds for e in getattr(at, kind))


_ESCAPE_OR_SPAN = re.compile(r"\\([!-/:-@\[-`{-~])|(?<!`)(`+)(?!`)(.+?)(?<!`)\2(?!`)")


def shown(markdown: object) -> str:
    """Markdown source as a reader sees it: backslash escapes and code-span fences
    (profiler.present.markup.md) removed."""
    def _one(m: re.Match) -> str:
        if m.group(1):
            return m.group(1)
        inner = m.group(3)
        return inner[1:-1] if len(inner) > 2 and inner[0] == inner[-1] == " " else inner
    return _ESCAPE_OR_SPAN.sub(_one, str(markdown))


@pytest.fixture
def pages() -> PageDriver:
    return PageDriver()
