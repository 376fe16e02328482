"""The SQL library (profiler/storage/sql_library.py, docs/architecture.md "SQL files"): every .sql
file has its header, every include names a module, every macro a file uses comes from a module it
includes, every query runs on an empty store with only its own includes installed, and module
outputs are the types their docs say.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from profiler.analysis.reads import reads
from profiler.storage import sql_library
from profiler.errors import QueryError
from profiler.storage.store import Store

ROOT = Path(__file__).resolve().parent.parent / "profiler"
SQL_FILES = sorted(ROOT.rglob("*.sql"))
QUERIES = sorted(p.stem for p in reads.SQL_DIR.glob("*.sql"))
MODULES = {p.stem: p for p in sql_library.LIB_DIR.glob("*.sql")} | sql_library.STORE_MODULES
MACRO = re.compile(r"^CREATE OR REPLACE (?:TEMP )?MACRO (\w+)\((.*?)\) AS( TABLE)?", re.M)
PARAM = re.compile(r"\$?(\w+) ([A-Z]+(?:\[\])?)")
# an example value of each parameter type (a VARCHAR argument's own example: its first quoted word)
EXAMPLES = {"VARCHAR": "r", "VARCHAR[]": ["r"], "BIGINT": 1, "BIGINT[]": [1], "INTEGER": 1, "DOUBLE": 1.0}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _code(text: str) -> str:
    """The text without its comments."""
    return re.sub(r"--[^\n]*", "", text)


def _typed(field: str) -> list[tuple[str, str]]:
    """[(name, TYPE)] of a params / args / outputs field (none: [])."""
    return [] if field == "none" else PARAM.findall(re.sub(r"\([^)]*\)", "", field))


def _macro_docs(text: str) -> dict[str, dict[str, str]]:
    """{macro: the header fields of the comment block just above its CREATE}."""
    docs = {}
    for m in MACRO.finditer(text):
        above = text[:m.start()].rstrip("\n").split("\n")
        block = []
        while above and above[-1].startswith("--"):
            block.insert(0, above.pop())
        docs[m[1]] = sql_library.header("\n".join(block)) | {"first": block[0] if block else ""}
    return docs


PROVIDER = {name: mod for mod, path in MODULES.items() for name in _macro_docs(path.read_text())}
PROVIDER["stored_iteration_metrics"] = "metrics"   # the metrics module's table


@pytest.mark.parametrize("path", SQL_FILES, ids=_rel)
def test_every_sql_file_has_a_header(path):
    text = path.read_text()
    fields = sql_library.header(text)
    assert text.startswith("-- ") and not sql_library.FIELD.match(text), f"{_rel(path)}: no description first"
    assert {"includes", "params"} <= set(fields), f"{_rel(path)}: no includes: or params: line"
    declared = {name for name, _ in _typed(fields["params"])}
    named = set(re.findall(r"\$(\w+)", fields["params"]))
    assert declared == named, f"{_rel(path)}: untyped params {named - declared}"
    assert declared == set(re.findall(r"\$(\w+)", _code(text))), f"{_rel(path)}: params line != params used"


@pytest.mark.parametrize("path", SQL_FILES, ids=_rel)
def test_each_include_names_a_module(path):
    for name in sql_library.includes(path.read_text()):
        assert sql_library.module_path(name).is_file()


@pytest.mark.parametrize("path", SQL_FILES, ids=_rel)
def test_a_file_includes_the_module_of_every_macro_it_uses(path):
    text = path.read_text()
    own = {n for n, m in PROVIDER.items() if MODULES.get(m) == path}
    used = {n for n in PROVIDER if re.search(rf"\b{n}\b\s*\(" if n != "stored_iteration_metrics" else rf"\b{n}\b",
                                             _code(text))} - own
    missing = {f"{n} ({PROVIDER[n]})" for n in used if PROVIDER[n] not in sql_library.includes(text)}
    assert not missing, f"{_rel(path)} uses {missing} without including the module"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_macros_are_documented_and_private_names_stay_inside(module):
    text = MODULES[module].read_text()
    for name, doc in _macro_docs(text).items():
        assert doc["first"].startswith(f"-- {name}:"), f"{module}.{name}: no description"
        assert {"args", "outputs"} <= set(doc), f"{module}.{name}: no args: or outputs: line"
        if name.startswith("_"):
            others = [p for p in SQL_FILES if p != MODULES[module] and name in _code(p.read_text())]
            assert not others, f"private {name} used outside {module}: {others}"


# the view a store with jobs has (profiler/storage/job_views.py), here empty
JOB_RANKS = ("CREATE TEMP TABLE job_ranks (job VARCHAR, world_size INTEGER, backend VARCHAR, rank INTEGER, "
             "run_id VARCHAR, file VARCHAR, size_bytes BIGINT)")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return Store(tmp_path_factory.mktemp("lib") / "s.duckdb")   # schema.sql and metrics.sql, no rows


def _example(name: str, type_: str, field: str) -> str:
    """An argument as a SQL literal (query_table wants its table name as a constant)."""
    quoted = re.search(rf"{name} VARCHAR \('(\w+)'", field)
    return f"{quoted[1] if quoted else EXAMPLES[type_]!r}::{type_}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_outputs_are_the_documented_types(store, module):
    with store.session() as db:
        db._con.execute(JOB_RANKS)   # the job modules read the job views (a table macro binds when made)
        sql_library.install(db._con, f"-- check\n-- includes: {module}\n", set())
        for name, doc in _macro_docs(MODULES[module].read_text()).items():
            args = [_example(a, t, doc["args"]) for a, t in _typed(doc["args"])]
            table = re.search(rf"MACRO {name}\(.*\) AS TABLE", MODULES[module].read_text())
            call = f"{name}({', '.join(args)})"
            got = [(r[0], r[1]) for r in db._con.execute(f"DESCRIBE SELECT * FROM {call}").fetchall()] \
                if table else db._con.execute(f"SELECT typeof({call})").fetchone()[0]
            want = _typed(doc["outputs"]) if table else doc["outputs"]
            if table and doc["outputs"].startswith("the columns of"):   # e.g. "the columns of tbl, n_iter BIGINT"
                got = got[len(got) - len(want):]
            assert got == want, f"{module}.{name}"


@pytest.mark.parametrize("name", QUERIES)
def test_every_query_runs_on_an_empty_store_with_its_includes(store, name):
    text = reads.sql_text(name)
    params = {p: EXAMPLES[t] for p, t in _typed(sql_library.header(text)["params"])}
    with store.session() as db:   # a new connection: only what this query includes is there
        db._con.execute(JOB_RANKS)
        db.query(text, params)


@pytest.mark.parametrize("name", [q for q in QUERIES if any(m not in sql_library.STORE_MODULES
                                                            for m in sql_library.includes(reads.sql_text(q)))])
def test_a_query_fails_without_its_includes(store, name):
    text = reads.sql_text(name)
    params = {p: EXAMPLES[t] for p, t in _typed(sql_library.header(text)["params"])}
    bare = re.sub(r"^-- includes: .*$", "-- includes: none", text, flags=re.M)
    with store.session() as db, pytest.raises(Exception, match="(?i)macro|function|does not exist"):
        db.query(bare, params)


def test_a_missing_include_is_reported():
    with pytest.raises(QueryError, match="'no_such_module'"):
        sql_library.install(None, "-- a query\n-- includes: memory_device, no_such_module\nSELECT 1", set())


def test_an_include_cycle_is_reported(tmp_path, monkeypatch):
    (tmp_path / "a.sql").write_text("-- a\n-- includes: b\n-- params: none\n")
    (tmp_path / "b.sql").write_text("-- b\n-- includes: a\n-- params: none\n")
    monkeypatch.setattr(sql_library, "LIB_DIR", tmp_path)
    sql_library.module_text.cache_clear()
    try:
        with pytest.raises(QueryError, match="cycle: a -> b -> a"):
            sql_library.load_order(["a"])
    finally:
        sql_library.module_text.cache_clear()


class _Recorder:
    def __init__(self):
        self.ran = []

    def execute(self, sql, params=None):
        self.ran.append(sql)


def test_includes_install_in_order_once_per_connection():
    con, done = _Recorder(), set()
    for name in ("cpu_op_delta", "kernel_table", "cpu_op_delta"):
        sql_library.install(con, reads.sql_text(name), done)
    # iteration_rows and run_pair once each; the metrics layer's parts are the store's own: named, never run
    assert con.ran == [sql_library.module_text("iteration_rows"), sql_library.module_text("run_pair")]
    assert done == {"windows", "step_work", "idle_causes", "metrics", "iteration_rows", "run_pair"}
    assert sql_library.load_order(["iteration_rows"]) == ["windows", "step_work", "idle_causes", "metrics",
                                                          "iteration_rows"]
