"""Which of streamlit and torch each module loads, every module imported in a fresh process.

    python -m tests.import_probe        then, on stdin, one module a line:   profiler.a
                                        answers on stdout, one JSON line each: ["streamlit"]

A new interpreter per module spends most of its second importing the same third-party libraries
(numpy, pandas, DuckDB, pyarrow, Altair); they load neither streamlit nor torch (checked below),
so this process imports them once and forks a child per module: each child imports its module
and whatever the module imports, transitively, as a fresh interpreter would, and reports what it
found in `sys.modules`. Run by tests/test_import_hygiene.py.
"""
from __future__ import annotations

import json
import os
import sys

WATCHED = ("streamlit", "torch")
SHARED = ("numpy", "pandas", "duckdb", "pyarrow", "msgspec", "altair")


def probe(module: str) -> list[str] | str:
    """The watched packages loaded once `module` is imported, or the import's error."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: import, report, leave without running the parent's exit handlers
        os.close(read)
        try:
            __import__(module)
            said = json.dumps([m for m in WATCHED if m in sys.modules])
        except BaseException as e:  # noqa: BLE001 - reported to the test, which fails on it
            said = json.dumps(f"{type(e).__name__}: {e}")
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        out = f.read()
    os.waitpid(pid, 0)
    return json.loads(out) if out else "the child died before it answered"


def main() -> None:
    for name in SHARED:
        __import__(name)
    early = [m for m in WATCHED if m in sys.modules]
    if early:  # a shared library loaded one: every answer would be wrong
        raise SystemExit(f"import_probe: {', '.join(SHARED)} loaded {early} before any module was probed")
    for line in sys.stdin:
        print(json.dumps(probe(line.strip())), flush=True)


if __name__ == "__main__":
    main()
