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

A `_name` is private to its module: no module of profiler/, no page, bench script or test imports
one from another profiler module (`from m import _x`) or reaches one through a module (`m._x`);
share it by making it public in its home. (Tests' own helpers, `tests.x._y`, are the tests' business.)

Wings: inside a layer, folders ordered like the layers (WINGS); a module imports modules of its own
wing and of wings before it, never one after it:

    analysis:  model < reads < findings      (every analysis module sits in a wing)
    storage:   the core (profiler/storage/*.py) < jobs

model/ is the model (GPUs, SKUs, occupancy, tensor cores, kernel names, the cost model's formulas)
and reads no store; reads/ holds the queries over the store and the rows they return enriched from
the model (kernel details, op prices, roofline points); findings/ says things about runs. storage's
jobs/ (rank files, the job views, chunks and parallel parsing) stands on the store core.

KNOWN and KNOWN_WINGS list the violations the code still has, each with its reason;
a test fails once one of them is gone, so the lists only shrink.
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
# layer -> its wings in order; None is the layer's core (its top folder); analysis has no core
WINGS: dict[str, list[str | None]] = {"analysis": ["model", "reads", "findings"], "storage": [None, "jobs"]}
# (importing module, imported module) -> why the core still reaches up into a wing
KNOWN_WINGS: dict[tuple[str, str], str] = {}

# (importing file, imported module) -> why it is still there
KNOWN: dict[tuple[str, str], str] = {
    ("pages/profile.py", "profiler.capture.config"):
        "the Profile page builds a CaptureConfig itself; ui could hand it one",
    ("pages/profile.py", "profiler.capture.setting"):
        "the Profile page offers the dtypes and modes a Setting takes; ui could pass them on",
    ("pages/profile.py", "profiler.capture.variants"):
        "the Profile page lists variants, dtypes and their availability; ui could pass them on",
}


def layer_of(module: str) -> str | None:
    """'profiler.storage.store' -> 'storage'; 'profiler.errors' -> 'errors'; None outside a layer."""
    parts = module.split(".")
    if parts[0] != "profiler" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ORDER else None


def wing_of(module: str) -> str | None:
    """'profiler.analysis.reads.queries' -> 'reads'; 'profiler.storage.store' -> None (the core)."""
    parts = module.split(".")
    layer = layer_of(module)
    if layer in WINGS and len(parts) > 3 and parts[2] in WINGS[layer]:
        return parts[2]
    return None


def wing_violations(path: Path, module: str) -> list[tuple[str, str]]:
    """(module, imported module) for each import of a wing after the module's own, in its layer."""
    here = layer_of(module)
    if here not in WINGS or module.endswith(".__init__"):
        return []
    order = WINGS[here]
    mine = order.index(wing_of(module))
    return [(module, target) for target, _ in imports(path, module)
            if layer_of(target) == here and order.index(wing_of(target)) > mine]


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


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: Path, module: str) -> list[str]:
    """"module.name" for every private name the file takes from another profiler module: imported
    (`from profiler.a import _x`, at any depth) or read through an imported module (`a._x`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found, aliases = [], {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            base = ".".join(module.split(".")[: len(module.split(".")) - node.level] + ([base] if base else []))
        if not base.startswith("profiler") or base == module:
            continue
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if (ROOT / (sub.replace(".", "/") + ".py")).exists():
                aliases[alias.asname or alias.name] = sub
            elif is_private(alias.name):
                found.append(sub)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name.startswith("profiler.")})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and is_private(node.attr) and aliases[node.value.id] != module):
            found.append(f"{aliases[node.value.id]}.{node.attr}")
    return sorted(set(found))


def code_files() -> list[tuple[Path, str]]:
    """Every Python file that must keep others' private names out: profiler/, pages, bench, tests."""
    files = [*(p for p, _ in modules()), *pages(), *(ROOT / "bench").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    return [(p, ".".join(p.relative_to(ROOT).with_suffix("").parts)) for p in sorted(set(files))
            if "__pycache__" not in p.parts]


def private_violations() -> set[tuple[str, str]]:
    return {(p.relative_to(ROOT).as_posix(), name) for p, module in code_files() for name in private_imports(p, module)}


def test_no_private_name_is_taken_from_another_module():
    bad = sorted(private_violations())
    assert not bad, f"{bad}: make the name public in its home module (or move the code that needs it)"


def test_the_private_check_sees_imports_and_attributes(tmp_path, monkeypatch):
    fake = tmp_path / "profiler" / "analysis"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "home.py").write_text("_x = 1\ny = 2\n")
    (fake / "user.py").write_text("from profiler.analysis.home import _x, y\nfrom profiler.analysis import home\n"
                                  "def f():\n    from .home import _z\n    return home._w + home.y + home.__name__\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert private_imports(fake / "user.py", "profiler.analysis.user") == [
        "profiler.analysis.home._w", "profiler.analysis.home._x", "profiler.analysis.home._z"]
    assert private_imports(fake / "home.py", "profiler.analysis.home") == []


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


def test_every_analysis_module_sits_in_a_wing():
    flat = sorted(p.name for p in (PKG / "analysis").glob("*.py"))
    assert flat == ["__init__.py"], f"analysis modules outside a wing: {flat}"
    for layer, wings in WINGS.items():
        folders = {p.name for p in (PKG / layer).iterdir() if p.is_dir() and (p / "__init__.py").exists()}
        assert folders == {w for w in wings if w}, f"{layer}: packages {sorted(folders)}, wings {wings}"


@pytest.mark.parametrize("path,module", modules(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_wing_imports_only_its_own_and_wings_before_it(path, module):
    bad = [v for v in wing_violations(path, module) if v not in KNOWN_WINGS]
    assert not bad, f"{bad}: wings in order {WINGS}"


def test_every_known_wing_violation_is_still_there():
    current = {v for path, module in modules() for v in wing_violations(path, module)}
    assert set(KNOWN_WINGS) <= current, f"fixed, remove from KNOWN_WINGS: {sorted(set(KNOWN_WINGS) - current)}"


def test_the_wing_check_sees_an_import_of_a_later_wing(tmp_path, monkeypatch):
    """A model module that imports a reads module (lazily), and a storage core module that imports
    a jobs module, are caught; reads importing model and jobs importing the core are not."""
    fake = tmp_path / "profiler"
    for folder in ("analysis", "analysis/model", "analysis/reads", "storage", "storage/jobs"):
        (fake / folder).mkdir(parents=True, exist_ok=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "analysis" / "model" / "gpus.py").write_text("def f():\n    from profiler.analysis.reads import queries\n")
    (fake / "analysis" / "reads" / "queries.py").write_text("from profiler.analysis.model import gpus\n")
    (fake / "storage" / "catalog.py").write_text("from profiler.storage.jobs import jobs\n")
    (fake / "storage" / "jobs" / "jobs.py").write_text("from profiler.storage import catalog\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    check = {m: wing_violations(fake / f"{m.replace('.', '/').removeprefix('profiler/')}.py", f"profiler.{m}")
             for m in ("analysis.model.gpus", "analysis.reads.queries", "storage.catalog", "storage.jobs.jobs")}
    assert check == {"analysis.model.gpus": [("profiler.analysis.model.gpus", "profiler.analysis.reads.queries")],
                     "analysis.reads.queries": [],
                     "storage.catalog": [("profiler.storage.catalog", "profiler.storage.jobs.jobs")],
                     "storage.jobs.jobs": []}


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
