"""`python -m profiler app` (profiler/present/ui/serve.py): the server loads what the pages import
while it starts, and never the capture layer. Its pages are checked through it in Chromium
(tests/test_browser.py's `streamlit_app` starts the server this way)."""
from __future__ import annotations

import subprocess
import sys

from profiler.cli.main import build_parser
from profiler.present.ui import serve
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


def test_the_command_line_lists_app_with_an_example():
    parser = build_parser()
    assert "python -m profiler app" in parser.epilog
    assert "app" in parser.format_help()
