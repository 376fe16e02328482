"""Every file path and every `module.name` that docs/ (and the README) names in backticks exists.

A doc that names `kernel_queries.kernel_table` or `profiler/storage/commit.py` sends a reader to it; when
code moves, the doc must move with it. Read from the source with `ast` (nothing is imported):
- a path (`profiler/storage/schema.sql`, `sql/metrics.sql`, `why.py`, `sql/ingest/*.sql`) must be a
  file (or match files) of the repository, whole or as the tail of a path;
- `module.name` or `Class.name` (`kernel_queries.kernel_details`, `Store.ingest`, `store.upkeep()`), where
  `module` is a module of the project and `Class` a class of it, must be defined there: a top-level
  function, class or assignment of the module, or a method or attribute of one of its classes.
Dotted names whose first part is no project module or class (`torch.compile`, `tl.dot`) are
someone else's and are not checked.
"""
from __future__ import annotations

import ast
import os
import re
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
CODE_DIRS = ("profiler", "pages", "tests", "bench")
SPAN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w./*-]+\.(py|sql|md|json|gz|toml|txt|sh|csv)$")
DOTTED = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(\(\))?$")


@cache
def repo_files() -> tuple[str, ...]:
    skip = {".git", ".venv", "node_modules", "__pycache__", "test-artifacts", "out"}
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip]
        found += [Path(folder, f).relative_to(ROOT).as_posix() for f in files]
    return tuple(found)


def path_exists(name: str) -> bool:
    pattern = re.compile("(^|.*/)" + re.escape(name).replace(r"\*", "[^/]*") + "$")
    return any(pattern.match(f) for f in repo_files())


@cache
def modules() -> dict[str, list[dict[str, set[str]]]]:
    """{module name: [{"top": top-level names, "members": names inside its classes}, ...]} for every
    .py file of the project (several files may share a name), keyed by file stem and dotted path."""
    found: dict[str, list[dict[str, set[str]]]] = {}
    for top in CODE_DIRS:
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = {"top": set(), "members": set(), "classes": {}}
            for node in tree.body:
                names["top"] |= _bound(node)
                if isinstance(node, ast.ClassDef):
                    members = set().union(*(_bound(n) for n in node.body)) | _self_attributes(node)
                    names["members"] |= members
                    names["classes"][node.name] = members
            dotted = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
            for key in {path.stem, dotted, dotted.removeprefix("profiler.")}:
                found.setdefault(key, []).append(names)
    return found


def _bound(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.Import, ast.ImportFrom)):  # a re-export is a name of the module
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.If, ast.Try, ast.With)):
        return set().union(set(), *(_bound(n) for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt)))
    return set()


def _self_attributes(cls: ast.ClassDef) -> set[str]:
    return {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "self" and isinstance(n.ctx, ast.Store)}


@cache
def classes() -> dict[str, list[set[str]]]:
    out: dict[str, list[set[str]]] = {}
    for entries in modules().values():
        for names in entries:
            for cls, members in names["classes"].items():
                out.setdefault(cls, []).append(members)
    return out


def symbol_problem(text: str) -> str | None:
    """Why the backticked `text` names nothing that exists, or None (it exists, or is not ours)."""
    text = text.strip()
    if text.startswith("../"):
        return None  # beside the repository (../shared/DESIGN.md), not part of it
    if PATH.match(text) and ("/" in text or text.endswith(".py")):
        return None if path_exists(text) else "no such file in the repository"
    m = DOTTED.match(text)
    if not m or PATH.match(text):
        return None
    parts = m.group(1).split(".")
    if parts[0] == "profiler" and len(parts) == 1:
        return None
    for split in range(len(parts) - 1, 0, -1):  # the longest prefix that is a project module
        module, rest = ".".join(parts[:split]), parts[split:]
        if module in modules():
            entries = modules()[module]
            if any(rest[0] in e["top"] or rest[0] in e["members"] for e in entries):
                return None
            if module in ("profiler",) or "." in module and module.replace(".", "/") + "/" + rest[0] in {
                    f.rsplit(".", 1)[0] for f in repo_files()}:
                return None  # a package's submodule
            return f"`{module}` defines no `{rest[0]}`"
    if parts[0] in classes():
        members = classes()[parts[0]]
        return None if any(parts[1] in m for m in members) else f"class `{parts[0]}` has no `{parts[1]}`"
    return None  # not ours (torch, triton, ...)


def named_symbols() -> list[tuple[str, int, str]]:
    return [(doc.name, number, span) for doc in DOCS
            for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
            for span in SPAN.findall(line)]


def test_docs_name_symbols_at_all():
    """The check below reads something: the docs name many paths and dotted names of ours."""
    checked = [s for _, _, s in named_symbols() if PATH.match(s.strip()) or DOTTED.match(s.strip())]
    assert len(DOCS) >= 4 and len(checked) >= 100, (len(DOCS), len(checked))


@pytest.mark.parametrize("doc", [d.name for d in DOCS])
def test_every_symbol_a_doc_names_exists(doc):
    missing = [f"{name}:{number}: `{span}`: {problem}" for name, number, span in named_symbols()
               if name == doc and (problem := symbol_problem(span))]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("text, problem", [
    ("profiler/storage/store.py", None), ("profiler/storage/no_such.py", "no such file in the repository"),
    ("sql/metrics.sql", None), ("sql/ingest/*.sql", None), ("why.py", None),
    ("Store.ingest", None), ("Store.no_such_method", "class `Store` has no `no_such_method`"),
    ("store.upkeep()", None), ("queries.no_such_query", "`queries` defines no `no_such_query`"),
    ("torch.compile", None),
])
def test_the_check_tells_a_real_name_from_a_moved_one(text, problem):
    assert symbol_problem(text) == problem
