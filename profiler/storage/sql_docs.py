"""What the SQL console's schema browser lists: the store's documented tables and views
(`schema.sql`, with each column's comment) and the documented macros of the SQL library (the
metrics layer, `sql/metrics.sql`, and the modules of `sql/lib/`), read from the files' own
comments (docs/architecture.md, "SQL files"). Names starting with `_` are a module's own and are
not listed. Plain data, no DuckDB: the types of columns come from the store itself
(`analysis/reads/schema_browser.py`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from profiler.storage import sql_library
from profiler.storage.metrics import METRICS_SQL
from profiler.storage.schema import SCHEMA_SQL

RELATION = re.compile(r"^CREATE (?:TABLE IF NOT EXISTS|OR REPLACE VIEW) (\w+)(.*)$")
MACRO = re.compile(r"^CREATE OR REPLACE (?:TEMP )?MACRO (\w+)\((.*?)\) AS( TABLE)?")
COLUMN = re.compile(r'^\s+"?([a-z_][a-z0-9_]*)"?\s+[A-Z]')
DOC = re.compile(r"^--\s*(\w+): (.*)$")


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str            # 'table', 'view', 'table macro' (use in FROM) or 'macro' (a scalar)
    module: str          # 'schema', 'metrics', or the sql/lib module's name
    about: str           # what it holds or returns, from its comments
    args: str = ""       # a macro's arguments, as documented
    outputs: str = ""    # a macro's outputs, as documented
    columns: tuple[tuple[str, str], ...] = ()   # a table's (column, comment) pairs


def _comment_above(lines: list[str], i: int) -> str:
    """The comment lines right above line i, as one sentence (the file header excluded)."""
    above = []
    while i > 0 and lines[i - 1].startswith("--") and not DOC.match(lines[i - 1]):
        i -= 1
        above.insert(0, lines[i][2:].strip())
    return " ".join(above)


def _relations(text: str) -> list[Entry]:
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if not (m := RELATION.match(line)):
            continue
        about = " ".join(filter(None, (_comment_above(lines, i) if i > 8 else "",
                                       m[2].partition("--")[2].strip())))
        columns = []
        for body in lines[i + 1:]:
            if body.startswith(")") or not body.startswith(" "):
                break
            if c := COLUMN.match(body):
                columns.append((c[1], body.partition("--")[2].strip()))
        kind = "view" if "VIEW" in line else "table"
        found.append(Entry(m[1], kind, "schema", about, columns=tuple(columns)))
    return found


def _macros(module: str, text: str) -> list[Entry]:
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if not (m := MACRO.match(line)) or m[1].startswith("_"):
            continue
        fields, j = {}, i
        while j > 0 and lines[j - 1].startswith("--"):
            j -= 1
        last = None
        for doc in lines[j:i]:
            if (d := DOC.match(doc)) and d[1] in ("args", "outputs", m[1]):
                last = d[1] if d[1] in ("args", "outputs") else "about"
                fields[last] = d[2].strip()
            elif last:
                fields[last] += " " + doc[2:].strip()
        found.append(Entry(m[1], "table macro" if m[3] else "macro", module, fields.get("about", ""),
                           fields.get("args", ""), fields.get("outputs", "")))
    return found


@cache
def entries() -> tuple[Entry, ...]:
    """Every documented table, view and macro, the schema's first, then the metrics layer's,
    then the library modules' by name."""
    found = _relations(SCHEMA_SQL.read_text(encoding="utf-8"))
    found += _macros("metrics", METRICS_SQL.read_text(encoding="utf-8"))
    for path in sorted(sql_library.LIB_DIR.glob("*.sql")):
        found += _macros(path.stem, path.read_text(encoding="utf-8"))
    return tuple(found)
