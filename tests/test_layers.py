"""The layers' import contract, read from the source with ast (nothing is imported or run).

Data flows down this list, and imports point up it:

    errors < vocab < capture < parse < storage < analysis < present < cli

vocab holds plain data every layer reads (what an attention op or kernel is), so it imports no
other layer but errors. A module in profiler/<layer>/ imports modules of its own layer and of layers before it, except
that parse, storage and analysis never import capture (torch lives there; only present and cli
reach it). profiler/errors.py imports no other profiler module. Every import counts, also one
inside a function or under TYPE_CHECKING. Only capture imports torch; only present (its ui package) and the
pages import streamlit.

Pages (app.py, pages/*.py) import only profiler.present, profiler.analysis and profiler.errors,
and never duckdb, pyarrow or torch.

KNOWN lists the violations the code still has, each with its reason; a test fails once one of them
is gone, so the list only shrinks.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "profiler"
ORDER = ["errors", "vocab", "capture", "parse", "storage", "analysis", "present", "cli"]
NEVER_CAPTURE = {"parse", "storage", "analysis"}
PAGE_LAYERS = {"present", "analysis", "errors"}
PAGE_FORBIDDEN = {"duckdb", "pyarrow", "torch"}
ONLY_IN = {"torch": {"capture"}, "streamlit": {"present"}}

# (importing file, imported module) -> why it is still there
KNOWN: dict[tuple[str, str], str] = {
    ("pages/profile.py", "profiler.capture.recorder"):
        "the Profile page builds a CaptureConfig itself; ui could hand it one",
    ("pages/profile.py", "profiler.capture.variants"):
        "the Profile page lists variants, dtypes and their availability; ui could pass them on",
    ("pages/runs.py", "profiler.storage.catalog"):
        "the Runs page renames and deletes runs through the catalog directly; ui could wrap it",
}


def layer_of(module: str) -> str | None:
    """'profiler.storage.store' -> 'storage'; 'profiler.errors' -> 'errors'; None outside a layer."""
    parts = module.split(".")
    if parts[0] != "profiler" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ORDER else None


def imports(path: Path, module: str) -> list[tuple[str, int]]:
    """(dotted module, line) for every import in the file; `from a import b` gives a.b when a.b is
    a module of ours, else a. Relative imports are resolved against ``module``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: len(module.split(".")) - node.level]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                is_module = (ROOT / (sub.replace(".", "/") + ".py")).exists() or (ROOT / sub.replace(".", "/")).is_dir()
                found.append((sub if is_module else base, node.lineno))
    return found


def modules() -> list[tuple[Path, str]]:
    return sorted((p, ".".join(p.relative_to(ROOT).with_suffix("").parts)) for p in PKG.rglob("*.py")
                  if "__pycache__" not in p.parts)


def layer_violations(path: Path, module: str) -> list[str]:
    """The imports of one profiler module that break the contract, as sentences."""
    here = layer_of(module)
    if here is None:  # profiler/__init__.py, profiler/__main__.py: the entry points
        return []
    bad = []
    for target, line in imports(path, module):
        top = target.split(".")[0]
        if top in ONLY_IN and here not in ONLY_IN[top]:
            bad.append(f"{module}:{line} imports {target} (only {sorted(ONLY_IN[top])} may)")
        there = layer_of(target)
        if there is None:
            continue
        if here == "errors" and target != module:
            bad.append(f"{module}:{line} imports {target} (errors imports no profiler module)")
        elif ORDER.index(there) > ORDER.index(here):
            bad.append(f"{module}:{line} imports {target}: {here} comes before {there}")
        elif there == "capture" and here in NEVER_CAPTURE:
            bad.append(f"{module}:{line} imports {target}: {here} never imports capture")
    return bad


def page_violations(path: Path) -> list[tuple[str, str]]:
    rel = path.relative_to(ROOT).as_posix()
    bad = []
    for target, line in imports(path, path.stem):
        if target.split(".")[0] in PAGE_FORBIDDEN:
            bad.append((rel, target))
        elif target.startswith("profiler") and layer_of(target) not in PAGE_LAYERS:
            bad.append((rel, target))
    return bad


def pages() -> list[Path]:
    return sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]


def test_every_module_sits_in_a_layer():
    flat = sorted(p.name for p in PKG.glob("*.py"))
    assert set(flat) <= {"__init__.py", "__main__.py", "errors.py"}, f"modules outside a layer: {flat}"
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders <= set(ORDER), f"profiler/ folders that are no layer: {sorted(folders - set(ORDER))}"
    assert {"vocab", "capture", "parse", "storage", "analysis", "present", "cli"} <= folders
    for folder in folders:
        assert (PKG / folder / "__init__.py").exists(), folder


@pytest.mark.parametrize("path,module", modules(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_layer_imports_only_layers_before_it(path, module):
    assert layer_violations(path, module) == []


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_pages_import_only_present_and_analysis(page):
    bad = [(f, t) for f, t in page_violations(page) if (f, t) not in KNOWN]
    assert not bad, f"{bad}: pages go through profiler.present (ui) and profiler.analysis"


def test_every_known_violation_is_still_there():
    current = {v for page in pages() for v in page_violations(page)}
    assert set(KNOWN) <= current, f"fixed, remove from KNOWN: {sorted(set(KNOWN) - current)}"


def test_the_check_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    """The checker itself: a storage module that reaches up to present, inside a function and
    through a relative import, and a parse module that imports capture, are caught."""
    fake = tmp_path / "profiler"
    for layer in ORDER[1:]:
        (fake / layer).mkdir(parents=True)
        (fake / layer / "__init__.py").write_text("")
    (fake / "present" / "ui.py").write_text("")
    (fake / "capture" / "variants.py").write_text("")
    (fake / "storage" / "store.py").write_text(
        "def f():\n    from profiler.present import ui\n    from ..present import ui as u\n    import torch\n")
    (fake / "parse" / "trace.py").write_text("from profiler.capture import variants\nfrom profiler import errors\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = layer_violations(fake / "storage" / "store.py", "profiler.storage.store")
    assert [v.split(" ", 2)[2] for v in found] == [
        "profiler.present.ui: storage comes before present",
        "profiler.present.ui: storage comes before present",
        "torch (only ['capture'] may)"]
    assert layer_violations(fake / "parse" / "trace.py", "profiler.parse.trace") == [
        "profiler.parse.trace:1 imports profiler.capture.variants: parse never imports capture"]


def circles(found: list[tuple[Path, str]]) -> list[list[str]]:
    """The import circles among ``found`` modules (strongly connected groups of two or more, or
    a module importing itself), each sorted; every import counts, lazy ones too."""
    names = {module for _, module in found}
    graph = {module: {t for t, _ in imports(path, module) if t in names} for path, module in found}
    order, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        order[v] = low[v] = len(order)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1 or v in graph[v]:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in order:
            visit(v)
    return sorted(groups)


def test_no_import_circle_anywhere_in_the_package():
    """Value types live in leaf modules and orchestration above what it orchestrates, so no
    module reaches itself through imports, within a layer or across one."""
    assert circles(modules()) == []


def test_the_circle_check_sees_a_circle_inside_one_layer(tmp_path, monkeypatch):
    fake = tmp_path / "profiler" / "analysis"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "findings.py").write_text("from profiler.analysis import why\n")
    (fake / "why.py").write_text("def f():\n    from profiler.analysis.findings import Finding\n")
    (fake / "leaf.py").write_text("from profiler.analysis import why\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = [(fake / f"{m}.py", f"profiler.analysis.{m}") for m in ("findings", "why", "leaf")]
    assert circles(found) == [["profiler.analysis.findings", "profiler.analysis.why"]]
