"""Layering (docs/architecture.md): only the app glue, the package profiler/present/ui/, imports streamlit, only the capture layer
imports torch, and pages reach the store only through queries / ui / catalog.

Each backend module is imported in a fresh process (forked by tests/import_probe.py from one that
holds only the shared third-party libraries), so a transitive import counts too; the app glue's
check starts a new interpreter of its own.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(".".join(p.relative_to(ROOT / "profiler").with_suffix("").parts)
                 for p in (ROOT / "profiler").rglob("*.py") if not p.name.startswith("__"))
STREAMLIT_OK = {m for m in MODULES if m.startswith("present.ui.")}  # the app glue's modules
TORCH_OK = {"capture.recorder", "capture.config", "capture.inprocess", "capture.measure", "capture.worker",
            "capture.setting", "capture.variant_checks", "capture.attention_fns",
            "capture.variants", "capture.counted", "capture.masks", "capture.paged", "capture.flashinfer_fns",
            "capture.ceilings", "capture.graphed", "capture.record"}  # the capture layer
PAGE_FORBIDDEN = {"duckdb", "torch", "profiler.storage.store", "profiler.parse.trace", "profiler.parse.args", "profiler.parse.source",
                  "profiler.parse.columns", "profiler.storage.staging"}


def _loaded_after_import(module: str) -> set[str]:
    code = (f"import sys, profiler.{module}; "
            "print(' '.join(m for m in ('streamlit', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """`probe(module)`: streamlit and torch as loaded by importing profiler.`module` in a fresh
    process (one tests/import_probe.py per test process forks a child per module)."""
    errors = tmp_path_factory.mktemp("import-probe") / "stderr.txt"
    with errors.open("w") as err:
        server = subprocess.Popen([sys.executable, "-m", "tests.import_probe"], cwd=ROOT, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)

    def ask(module: str) -> set[str]:
        server.stdin.write(f"profiler.{module}\n")
        server.stdin.flush()
        line = server.stdout.readline()
        assert line, f"import_probe ended: {errors.read_text()}"
        said = json.loads(line)
        assert isinstance(said, list), f"importing profiler.{module}: {said}"
        return set(said)

    yield ask
    server.stdin.close()
    server.wait(timeout=60)
    server.stdout.close()


def test_the_layers_exist():
    assert {"present.share", "present.ui.session", "present.ui.view", "present.ui.tables", "present.ui.work"} <= set(MODULES)


@pytest.mark.slow  # a subprocess
@pytest.mark.parametrize("module", [m for m in MODULES if m not in STREAMLIT_OK | TORCH_OK])
def test_backend_module_imports_neither_streamlit_nor_torch(module, probe):
    assert probe(module) == set()


@pytest.mark.slow  # a subprocess
def test_the_probe_sees_what_a_module_loads_through_others(probe):
    """The forked import sees transitive imports: the app glue's session module imports streamlit
    (its package imports nothing until a name is read), the capture layer's recorder imports torch
    only through others."""
    assert probe("present.ui") == set()
    assert probe("present.ui.session") == {"streamlit"}
    assert "torch" in probe("capture.recorder")


@pytest.mark.slow  # a subprocess
def test_ui_does_not_pull_in_torch():
    """Every name of the app glue read (each of its modules imported): streamlit, never torch."""
    code = ("import sys, profiler.present.ui as ui; [getattr(ui, n) for n in ui.__all__]; "
            "print(' '.join(m for m in ('streamlit', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert set(out.stdout.split()) == {"streamlit"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("page", sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"],
                         ids=lambda p: p.name)
def test_pages_reach_the_store_only_through_queries_and_ui(page):
    imported = _imports(page)
    bad = {name for name in imported
           if any(name == f or name.startswith(f + ".") for f in PAGE_FORBIDDEN)}
    assert not bad, f"{page.name} imports {sorted(bad)}; go through profiler.analysis.reads.queries or ui"


@pytest.mark.slow  # a subprocess
def test_charts_do_not_load_the_iri_grammar():
    """Altair's jsonschema loads rfc3987-syntax when it is installed (it is, beside Jupyter, in the
    test environment), which builds a grammar for ~0.8 s on the first page with a chart: the
    present package keeps it out, and Altair still validates a chart."""
    code = ("import sys, profiler.present.charts, altair as alt, pandas as pd; "
            "alt.Chart(pd.DataFrame({'a': [1]})).mark_bar().encode(x='a').to_dict(); "
            "print(sys.modules.get('rfc3987_syntax') is None, 'jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"], out.stdout


@pytest.mark.slow  # a subprocess
def test_ingest_does_not_load_pandas(tmp_path):
    """pyarrow imports pandas (~0.18 s) on its first array from a list, only to ask whether the list
    is a pandas object: the ingest command never loads it (staging builds that first array with
    pandas out of reach), and pandas still works when a later read needs it."""
    trace = ROOT / "tests" / "fixtures" / "memory_small.json"
    code = ("import sys; from profiler.storage.store import Store; "
            f"s = Store({str(tmp_path / 's.duckdb')!r}); r = s.ingest({str(trace)!r}); "
            "loaded = 'pandas' in sys.modules; "
            "import pyarrow as pa, pandas as pd; "
            "back = s.query('SELECT count(*) AS n FROM kernels'); "
            "print(loaded, type(back).__name__, len(pa.table({'a': [1]}).to_pandas()), r.events)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded, kind, rows, events = out.stdout.split()
    assert (loaded, kind, rows) == ("False", "DataFrame", "1"), out.stdout
    assert int(events) > 0, out.stdout
