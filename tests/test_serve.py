"""`python -m profiler app` (profiler/present/ui/serve.py): the server loads what the pages import
while it starts, and never the capture layer. Its pages are checked through it in Chromium
(tests/test_browser.py's `streamlit_app` starts the server this way)."""
from __future__ import annotations

import os
import subprocess
import sys

from profiler.capture.samples import sample_files
from profiler.cli.main import build_parser
from profiler.present.ui import serve
from profiler.storage.store import Store
from tests.conftest import ROOT


def test_the_modules_warmed_are_those_the_pages_import_and_not_the_capture_layer():
    modules = serve.page_modules()
    for expected in ("profiler.present.charts", "profiler.present.timeline_view", "profiler.analysis.reads.run_queries",
                     "profiler.analysis.findings.timings", "profiler.present.ui.session", "profiler.present.ui.tables"):
        assert expected in modules
    assert not [m for m in modules if m.startswith("profiler.capture")]  # the profile page imports it behind a gate
    for name in modules:  # each a module file or package of the checkout, not a name inside one
        path = ROOT.joinpath(*name.split("."))
        assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), name


def test_warming_loads_pandas_and_altair_but_not_torch():
    code = ("import sys, threading; from profiler.present.ui import serve; "
            "serve.warm(serve.page_modules(), threading.Event()); "
            "print(*(m in sys.modules for m in ('pandas', 'altair', 'profiler.present.timeline_view', 'torch')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True", "False"]


def test_warming_stops_once_a_page_has_begun():
    code = ("import sys, threading; from profiler.present.ui import serve; e = threading.Event(); e.set(); "
            "serve.warm(serve.page_modules(), e); print('profiler.present.timeline_view' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]


def _warm_up(db, seed: str = "1", page_begun: bool = False) -> list[str]:
    """In a fresh process: the warm-up over the store at `db` (no server to wait for; `page_begun`:
    a page began before it); whether the store exists then, whether a chart page's module was
    loaded, the favicon's emoji table, and whether what was loaded was frozen out of the collector."""
    code = ("import gc, os, sys; from pathlib import Path; from profiler.present.ui import serve, session; "
            f"{'session.PAGE_BEGUN.set(); ' if page_begun else ''}serve.warm_up(wait_s=0); "
            "print(Path(os.environ['PROFILER_DB']).exists(), 'profiler.present.timeline_view' in sys.modules, "
            "serve.EMOJI_TABLE in sys.modules, gc.get_freeze_count() > 0)")
    env = {**os.environ, "PROFILER_DB": str(db), "PROFILER_SEED": seed}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_new_store_is_unpacked_and_its_first_page_not_raced_by_imports(tmp_path):
    """A new store: the shipped samples unpacked, and nothing imported but the favicon's emoji table
    (the runs page's title and run count first), the server's start-up frozen; the store existing,
    the pages' modules; seeding off, nothing made."""
    db = tmp_path / "new" / "store.duckdb"
    assert _warm_up(db) == ["True", "False", "True", "True"]
    assert Store(db).run_count() == len(sample_files()) > 0
    assert _warm_up(db) == ["True", "True", "True", "True"]   # the modules loaded, then frozen
    assert _warm_up(db, page_begun=True) == ["True", "False", "True", "True"]   # a page began: no imports, still frozen
    assert _warm_up(tmp_path / "off.duckdb", seed="0") == ["False", "False", "True", "True"]


def test_the_command_line_lists_app_with_an_example():
    parser = build_parser()
    assert "python -m profiler app" in parser.epilog
    assert "app" in parser.format_help()


def test_a_fresh_servers_first_page_reads_no_stack(tmp_path):
    """A cost of a fresh server's first script run that no page asks for (bench/RESULTS.md, "A
    fresh server's first script run"): Streamlit's REPL probe (`inspect.stack()`, the source file of
    every frame). A fresh process: it is paid once per process, so an earlier test's would hide it."""
    code = ("import inspect; calls = []; stack = inspect.stack\n"
            "inspect.stack = lambda *a, **k: calls.append(1) or stack(*a, **k)\n"
            "from streamlit.testing.v1 import AppTest\n"
            f"at = AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=60).run()\n"
            "print(len(calls), len(at.exception), *(t.value for t in at.title))")
    env = {**os.environ, "PROFILER_DB": str(tmp_path / "store.duckdb"), "PROFILER_SEED": "0"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "0", "Runs"]  # the runs page drawn, the stack never read
