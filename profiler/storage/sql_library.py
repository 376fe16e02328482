"""The SQL library: the shared modules that query files include, and the loader that installs them.

Every `.sql` file starts with a header of comment lines (docs/architecture.md, "SQL files"):

    -- What it returns (or does), in a sentence or more.
    -- includes: metrics, memory_device      (the modules it uses; `none` when none)
    -- params: $run_ids VARCHAR[], $limit INTEGER      (`none` when none)

A module is `profiler/storage/sql/lib/<name>.sql` (the store's own SQL library, beside the
metrics layer; the query files of `profiler/analysis/reads/sql/` include them): TEMP macros, each documented with its `args:` and typed
`outputs:`; names starting with `_` are the module's own. `metrics` (with `windows`, `step_work`
and `idle_causes`, the metrics layer's other parts) is a module too, but the store loads it when
it opens (profiler/storage/metrics.py): here it is only named, never run.

Running a query first installs its includes, theirs before them, each once per connection
(`storage.session.Session` keeps the record, so a `Store`'s reads and a session's alike install them); an include that does not exist, or a cycle, is a `QueryError`.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path

from profiler.errors import QueryError
from profiler.storage.metrics import PARTS

LIB_DIR = Path(__file__).resolve().parent / "sql" / "lib"
STORE_MODULES = {p.stem: p for p in PARTS}   # the metrics layer: loaded by the store on open, not by this loader
FIELD = re.compile(r"--\s*(includes|params|outputs|args):\s*(.*)")


@lru_cache(maxsize=256)
def header(text: str) -> dict[str, str]:
    """The fields of a SQL text's header (its leading comment lines): {"includes": ..., ...}."""
    fields, last = {}, None
    for line in text.lstrip().splitlines():
        if not line.startswith("--"):
            break
        if m := FIELD.match(line):
            last = m[1]
            fields.setdefault(last, m[2].strip())
        elif last and line.startswith("--   "):   # an indented line continues the field above
            fields[last] += " " + line[2:].strip()
        else:
            last = None
    return fields


def includes(text: str) -> list[str]:
    """The modules a SQL text's header names (none: [])."""
    named = header(text).get("includes", "none")
    return [] if named == "none" else [n.strip() for n in named.split(",") if n.strip()]


def module_path(name: str) -> Path:
    """Where module `name` lives; a `QueryError` when there is no such module."""
    path = STORE_MODULES.get(name, LIB_DIR / f"{name}.sql")
    if not path.is_file():
        raise QueryError(f"the SQL include {name!r} names no module (none in {LIB_DIR})")
    return path


@cache
def module_text(name: str) -> str:
    return module_path(name).read_text(encoding="utf-8")


def load_order(names: Iterable[str], _path: tuple[str, ...] = ()) -> list[str]:
    """These modules and all they include, each once, every module after its own includes."""
    order: list[str] = []
    for name in names:
        if name in _path:
            raise QueryError(f"the SQL includes form a cycle: {' -> '.join(_path + (name,))}")
        for m in load_order(includes(module_text(name)), _path + (name,)) + [name]:
            if m not in order:
                order.append(m)
    return order


def install(con, sql: str, done: set[str]) -> None:
    """Install on `con` the modules `sql` includes that `done` (this connection's record) lacks."""
    if not sql.lstrip().startswith("--"):    # no header: inline SQL of the Python code
        return
    wanted = [n for n in includes(sql) if n not in done]   # an installed one brought its own
    for name in load_order(wanted):
        if name not in done:
            if name not in STORE_MODULES:
                con.execute(module_text(name))
            done.add(name)
