"""Shared test fixtures: paths to real traces and a fresh store per test.

Real third-party traces (other people's models, GPUs and profiler versions) are not part of the
repository. Tests that read them are marked `third_party` and take them from the folder named by
$PROFILER_TEST_TRACES (default: `../shared/traces` beside the clone, when it exists). Without that
folder they are skipped with one reason line each; `--require-traces` makes a missing folder an
error instead (our CI uses it so that every one of them runs).
"""
from __future__ import annotations

import contextlib
import gc
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "data" / "samples"
TRACES_ENV = "PROFILER_TEST_TRACES"
ARTIFACTS = ROOT / "test-artifacts"  # screenshots of the browser tests (look at them)
CHROMIUM = os.environ.get("PROFILER_CHROMIUM", "/usr/bin/chromium")
# --process-per-site: the pages of one site (every test server is http://127.0.0.1:PORT) share one
# renderer process, kept alive by `SharedContextBrowser`'s keeper page, so the app's front end is
# compiled once per test process, not once per page (a page load's Chromium CPU about halved:
# bench/RESULTS.md, "Tests: one renderer per test process, new stores copied").
# --js-flags=--no-opt --no-maglev: JavaScript runs in V8's interpreter and baseline compiler only; the
# optimizing compilers' work does not pay back within a test's page (its Chromium CPU -16 %:
# bench/RESULTS.md, "Tests: Chromium's share"). What the page does is the same; only how fast.
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--process-per-site",
                 "--js-flags=--no-opt --no-maglev"]
# where the keeper page stands: the test servers' site (a port nothing listens on; the page's
# one request is answered by the browser itself)
KEEPER_URL = "http://127.0.0.1:9/keeper"


def ingest_all(store, paths, source: str = "uploaded") -> list[str]:
    """The run ids of `paths`, in order, stored in one batch (`Store.ingest_many`: the same rows as
    one ingest per file, tests/test_samples.py; ~20x faster for many small files)."""
    return [r.run_id for r in store.ingest_many([(p, None) for p in paths], source=source)]


def _third_party_dir() -> Path:
    named = os.environ.get(TRACES_ENV)
    return Path(named).expanduser().resolve() if named else ROOT.parent / "shared" / "traces"


SHARED_TRACES = _third_party_dir()
HAVE_SHARED = SHARED_TRACES.is_dir() and any(SHARED_TRACES.glob("*.json*"))
MISSING_REASON = (f"needs the third-party traces: none in {SHARED_TRACES} "
                  f"(set {TRACES_ENV} to a folder of them)")


def real_traces() -> list[Path]:
    """The third-party trace files (empty when the folder is missing)."""
    if not HAVE_SHARED:
        return []
    return sorted(p for p in SHARED_TRACES.iterdir() if p.name.endswith((".json", ".json.gz")))


def trace_params(paths: list, ids=lambda p: Path(p).name[:40]) -> list:
    """`paths` as pytest params; with no third-party traces, one placeholder param marked
    `third_party` so the test reports one skip with the reason instead of vanishing."""
    if paths:
        return [pytest.param(p, id=ids(p)) for p in paths]
    return [pytest.param(None, id="no-third-party-traces", marks=pytest.mark.third_party)]


SLOW_LIST = Path(__file__).with_name("slow_tests.txt")
SLOW_S = 0.5  # a test that takes this long or longer (setup, call and teardown) is in the full tier only
SEPARATOR = "\n# ---\n"  # in slow_tests.txt: above, files listed whole (by hand); below, recorded tests
SLOW_FIXTURES = {"seeded_samples", "real_and_samples"}  # stores of every shipped sample: 10-20 s to build


def slow_list() -> set[str]:
    """The test ids `tests/slow_tests.txt` names (comment lines aside)."""
    if not SLOW_LIST.is_file():
        return set()
    lines = SLOW_LIST.read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line.strip() and not line.startswith("#")}


def pytest_addoption(parser):
    parser.addoption("--require-traces", action="store_true",
                     help=f"fail instead of skipping when ${TRACES_ENV} (or ../shared/traces) is missing")
    parser.addoption("--record-slow", action="store_true",
                     help=f"after the run, update {SLOW_LIST.name}: each test that ran is listed when it took "
                          f"{SLOW_S} s or more, and unlisted when it took less")


_durations: dict[str, float] = {}  # test id -> seconds (setup, call, teardown), for --record-slow


def pytest_runtest_logreport(report):
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    """--record-slow: the tests that ran update the recorded part of the slow list (below its
    `# ---` line), in the process that reports, not in each xdist worker; a test that did not run
    keeps its line, and the lines above (the files listed whole) stay as they are."""
    config = session.config
    if not config.getoption("--record-slow") or hasattr(config, "workerinput") or not _durations:
        return
    text = SLOW_LIST.read_text(encoding="utf-8") if SLOW_LIST.is_file() else ""
    head, _, recorded = text.partition(SEPARATOR)
    listed = {line for line in recorded.splitlines() if line.strip()}
    listed -= {test for test, seconds in _durations.items() if seconds < SLOW_S}
    listed |= {test for test, seconds in _durations.items() if seconds >= SLOW_S}
    SLOW_LIST.write_text(head + SEPARATOR + "".join(f"{t}\n" for t in sorted(listed)), encoding="utf-8")


def pytest_collection_finish(session):
    """What collection loaded (the project, pandas, DuckDB, Streamlit, Altair, the test modules) is
    frozen out of the garbage collector, and its youngest generation is collected every 10,000 new
    objects instead of 700: in the full suite the two workers spent ~50 s in collections (43 s of
    them full ones walking those objects again), and the tests' own readers of raw JSON traces
    spent up to half of each parse in young ones (bench/RESULTS.md, "Tests and first pages: the
    garbage collector"). Nothing a test checks depends on when a collection runs."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def pytest_configure(config):
    if config.getoption("--require-traces") and not HAVE_SHARED:
        raise pytest.UsageError(f"--require-traces: no third-party traces in {SHARED_TRACES} "
                                f"(set {TRACES_ENV})")


def pytest_collection_modifyitems(config, items):
    """Tests of third-party traces skip with a reason when the traces are missing. GPU tests need
    CUDA; on a machine without it they are deselected, not silently passed. Browser tests and
    tests on the local Ray cluster are `slow` whether or not they say so (the quick tier,
    `-m "not slow"`, leaves them out), and so is every test `tests/slow_tests.txt` lists (those
    that took 0.5 s or more: `./run-tests --record-slow` keeps the list; a file named there has
    every test of it listed) or that takes a store of every sample (`SLOW_FIXTURES`); a test that
    takes the `browser` fixture is a browser test."""
    listed = slow_list()
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "browser" in fixtures and "browser" not in item.keywords:
            item.add_marker(pytest.mark.browser)
        if ("browser" in item.keywords or "ray_cluster" in fixtures or SLOW_FIXTURES & set(fixtures)
                or item.nodeid in listed or item.nodeid.split("::")[0] in listed):
            item.add_marker(pytest.mark.slow)
    if not HAVE_SHARED:
        skip = pytest.mark.skip(reason=MISSING_REASON)
        for item in items:
            if "third_party" in item.keywords:
                item.add_marker(skip)
    dropped = [item for item in items if "gpu" in item.keywords]
    if not dropped:
        return
    try:
        import torch  # 2-3 s: only when GPU tests were collected

        has_cuda = torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a requirement
        has_cuda = False
    if has_cuda:
        return
    keep = [item for item in items if "gpu" not in item.keywords]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


FIXTURE_TRACES = ("tiny_naive.json", "tiny_inplace.json", "tiny_old_format.json")


def shared_folder(tmp_path_factory) -> Path:
    """A folder every test process of this run sees: the run's base temporary folder, which the
    pytest-xdist workers' own folders (`popen-gwN`) sit in; without workers, this process's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(folder: Path, build):
    """`build(folder / "template.duckdb")`, run by one test process of the run: the first to take
    `folder`'s lock builds it and keeps what `build` returned (pickled) beside the store; the
    others wait on the lock and read it. A build that raised leaves nothing kept, so the next
    process to ask builds it again (and fails the same way)."""
    import fcntl
    import pickle

    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / "built.pickle"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.exists():
            return pickle.loads(kept.read_bytes())
        extra = build(folder / "template.duckdb")
        partial = folder / "built.pickle.partial"
        partial.write_bytes(pickle.dumps(extra))
        partial.replace(kept)
        return extra


@pytest.fixture(scope="session")
def template_store(tmp_path_factory):
    """Stores built once per test run (by whichever pytest-xdist worker asks first, while the
    others wait: `built_once`) and copied for each test: `template_store(name, build, dest)` runs
    `build(path)` into a template the first time `name` is asked for, copies the template's file
    (where the build made one) to `dest` and returns what `build` returned (kept pickled, so it must
    be plain data: ids, paths, numbers). A store with jobs keeps their files in `<stem>-jobs/`
    beside it (profiler.storage.jobs.jobs.job_root, with $PROFILER_JOBS unset): that folder is
    copied too, to `<dest stem>-jobs/`."""
    import shutil

    root = shared_folder(tmp_path_factory) / "templates"
    built: dict[str, tuple[Path, object]] = {}

    def copy(name: str, build, dest: Path):
        if name not in built:
            built[name] = (root / name / "template.duckdb", built_once(root / name, build))
        path, extra = built[name]
        if path.exists():  # a build that only wrote job files may not have made the store file yet
            shutil.copyfile(path, dest)
        job_files = path.with_name(f"{path.stem}-jobs")
        if job_files.is_dir():
            shutil.copytree(job_files, dest.with_name(f"{dest.stem}-jobs"))
        return extra

    return copy


def _fixture_traces(path: Path) -> dict[str, str]:
    from profiler.storage.store import Store

    store = Store(path)
    return {name: store.ingest(FIXTURES / name, source="captured" if "tiny_" in name and "old" not in name
                               else "uploaded").run_id for name in FIXTURE_TRACES}


@pytest.fixture
def fixture_store(tmp_path: Path, template_store):
    """A real store file holding the hand-written fixture traces (naive and in-place runs
    captured on an 'H200', plus a 2020-era upload), a copy of one ingested once per test process.
    Returns (store, {file name: run id})."""
    from profiler.storage.store import Store

    path = tmp_path / "fixture.duckdb"
    ids = template_store("fixture-traces", _fixture_traces, path)
    return Store(path), dict(ids)


def _tiny(path: Path) -> None:
    from profiler.storage.store import Store
    from tests.tiny_store import insert_tiny

    store = Store(path)
    with store.connect() as con:
        insert_tiny(con)
    store.upkeep()  # rows written other than by ingest: their metrics computed now (reads never write)


@pytest.fixture
def tiny(db_path, template_store):
    """The hand-written store of tests/tiny_store.py (rows inserted directly, no ingest), a copy
    of one built once per test process."""
    from profiler.storage.store import Store

    template_store("tiny", _tiny, db_path)
    return Store(db_path)


@pytest.fixture
def labels(tiny) -> dict[str, str]:
    """{run id: label} of the tiny store's runs."""
    from profiler.present import charts
    from profiler.analysis.reads import run_queries
    from tests.tiny_store import RUNS

    return charts.label_map(run_queries.run_labels(tiny, RUNS))


DEPTH_ONE_SAMPLES = sorted(SAMPLES.glob("*/*.json.gz"))  # default/ and sweep/, not modes/*/
TRAIN_SAMPLES = sorted((SAMPLES / "modes" / "train").glob("*.json.gz"))


def _real_and_samples(path: Path) -> dict[str, str]:
    """Every third-party trace through `Store.ingest` (an upload's path), then every sample of
    DEPTH_ONE_SAMPLES and TRAIN_SAMPLES through `Store.ingest_many` in the seeding's batches (the
    samples' path): {file path: run id}."""
    from profiler.capture import samples
    from profiler.storage.store import Store

    store = Store(path)
    ids = dict(zip(map(str, real_traces()), ingest_all(store, real_traces())))
    for batch in samples.batches(DEPTH_ONE_SAMPLES + TRAIN_SAMPLES):
        ids.update((str(p), got.run_id) for p, got in zip(batch, store.ingest_many([(p, None) for p in batch])))
    return ids


@pytest.fixture(scope="module")
def real_and_samples(tmp_path_factory, template_store):
    """A copy, per test module, of a store holding every third-party trace and every sample of
    DEPTH_ONE_SAMPLES and TRAIN_SAMPLES, ingested once per test process: (store, {path: run id})."""
    from profiler.storage.store import Store

    path = tmp_path_factory.mktemp("real-and-samples") / "store.duckdb"
    ids = template_store("real-and-samples", _real_and_samples, path)
    store = Store(path)
    with held_open(store):
        yield store, {Path(k): v for k, v in ids.items()}


@contextlib.contextmanager
def held_open(store):
    """`store`'s database kept open in this process while the block runs, so that the reads of a
    module's tests share it (profiler/storage/connection.py) instead of opening the file for each
    (~20 ms a time, hundreds of times a module). No other process can open the file meanwhile: for
    a module's own copy of a store, which its tests read in this process (the command line called
    through `main`, pages through AppTest)."""
    with store.connect():
        yield store


def _seeded(path: Path) -> tuple[int, list[float]]:
    from profiler.capture.samples import seed_if_empty
    from profiler.storage.store import Store

    reports: list[float] = []
    added = seed_if_empty(Store(path), progress=lambda name, fraction, message: reports.append(fraction))
    return added, reports


@pytest.fixture(scope="module")
def seeded_samples(tmp_path_factory, template_store):
    """A copy, per test module, of an empty store seeded from every shipped sample
    (`samples.seed_if_empty`), seeded once per test process: (store, how many the seeding added,
    the fractions its progress reported)."""
    from profiler.storage.store import Store

    path = tmp_path_factory.mktemp("seeded") / "store.duckdb"
    added, reports = template_store("seeded-samples", _seeded, path)
    return Store(path), added, list(reports)


@pytest.fixture(scope="module")
def shipped_samples(tmp_path_factory):
    """A new store as the app makes one, per test module: every shipped sample, already ingested
    (data/samples.duckdb.gz unpacked, ~0.1 s; tests/test_shipped_store.py holds it to what seeding
    the samples stores)."""
    from profiler.capture.samples import unpack_shipped
    from profiler.storage.store import Store

    path = tmp_path_factory.mktemp("shipped") / "store.duckdb"
    assert unpack_shipped(path), "data/samples.duckdb.gz does not match data/samples/: python -m profiler.cli.samples"
    return Store(path)


SAMPLE_VARIANTS = ("naive", "sdpa_flash", "sdpa_math", "sdpa_cudnn", "sdpa_efficient", "flex")


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory):
    """A store with the warm L=1024 H200 samples of SAMPLE_VARIANTS: (store, {variant: run id})."""
    from profiler.storage.store import Store

    store = Store(tmp_path_factory.mktemp("samples") / "samples.duckdb")
    ids = {}
    for variant in SAMPLE_VARIANTS:
        path = SAMPLES / "default" / f"{variant}_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
        ids[variant] = store.ingest(path).run_id
    return store, ids


def keep_renderer(context):
    """`context`, with a keeper page at the test servers' site open in it for as long as it lives:
    the site's renderer process (`CHROMIUM_ARGS`' --process-per-site) outlives each test's pages."""
    keeper = context.new_page()
    keeper.route(KEEPER_URL, lambda route: route.fulfill(body="<title>keeper</title>", content_type="text/html"))
    keeper.goto(KEEPER_URL)
    return context


# a tab's own settings that a later test must not inherit: a tab any of these were called on is
# closed when its test closes it, not kept for the next (`Tabs`)
TAB_SETTINGS = ("add_init_script", "route", "route_from_har", "expose_function", "expose_binding", "on",
                "once", "set_extra_http_headers", "emulate_media", "set_default_timeout",
                "set_default_navigation_timeout")


class Tabs:
    """New pages in one browser context, each its own app session, where a tab a test has closed
    is used again: `page.close()` takes the tab to about:blank (its app session ends, as when a
    tab closes) and keeps it for the next `new_page`, which costs the browser about a third less
    CPU per page visit than a new tab (bench/RESULTS.md, "Tests: a closed tab kept for the next
    test"). A tab whose own settings a test changed (`TAB_SETTINGS`) is closed instead."""

    def __init__(self, context, viewport: dict):
        self.context, self._viewport, self._spare = context, viewport, []

    def new_page(self, viewport: dict | None = None):
        page = self._spare.pop() if self._spare else self._tab()
        page.set_viewport_size(viewport or self._viewport)
        return page

    def _tab(self):
        page = self.context.new_page()
        close, kept = page.close, [True]

        def setting(own):
            def call(*args, **kwargs):
                kept[0] = False
                return own(*args, **kwargs)
            return call

        def close_or_keep(**kwargs):
            if kept[0] and not kwargs and not page.is_closed():
                try:
                    page.goto("about:blank")
                    # nothing held or hovered carried into the next test's page (a test that failed
                    # mid-drag or with Control down)
                    page.mouse.up()
                    for key in ("Control", "Shift", "Alt", "Meta"):
                        page.keyboard.up(key)
                    page.mouse.move(0, 0)
                except Exception:  # a crashed or stuck tab is closed below instead
                    pass
                else:
                    self._spare.append(page)
                    return None
            return close(**kwargs)

        for name in TAB_SETTINGS:
            setattr(page, name, setting(getattr(page, name)))
        page.close = close_or_keep
        return page


class SharedContextBrowser:
    """A Chromium whose plain pages share one browser context, so the app's front end (hashed
    files the server marks immutable) is fetched once per test process, not once per page, and
    one renderer process (`CHROMIUM_ARGS`' --process-per-site), which a keeper page in the
    context keeps alive between tests, so it is compiled once too; each page is its own app
    session, in a tab a test before may have closed (`Tabs`). A page asked for with context
    options (a colour scheme, ...) gets a context of its own, as does `new_context`."""

    def __init__(self, browser):
        self._browser, self._tabs = browser, None

    def new_page(self, viewport: dict | None = None, **options):
        if options:
            return self._browser.new_page(viewport=viewport, **options)
        if self._tabs is None:
            self._tabs = Tabs(keep_renderer(self._browser.new_context()), {"width": 1280, "height": 720})
        return self._tabs.new_page(viewport)

    @property
    def fresh(self):
        """The browser itself: its `new_page` opens a page in a context of its own, as a new
        browser would (a share link opened where nothing of the first visit is kept)."""
        return self._browser

    def __getattr__(self, name):  # new_context, close, version, ...: the browser's own
        return getattr(self._browser, name)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium per test process (per xdist worker); each test opens its own pages
    (in one shared context: `SharedContextBrowser`)."""
    import shutil

    from playwright import sync_api

    if not (shutil.which(CHROMIUM) or Path(CHROMIUM).is_file()):
        pytest.fail(f"No Chromium at {CHROMIUM}: install it (Debian/Ubuntu: sudo apt-get install chromium) "
                    f"or set PROFILER_CHROMIUM to its path.", pytrace=False)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield SharedContextBrowser(b)
        b.close()
