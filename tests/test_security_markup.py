"""Issue 22, classes 1-3, outside the browser: trace text reaches Markdown only escaped (a scan of
every Streamlit call), tables and CSV downloads never hold a live formula or a split row, the
command line never prints a control character from a trace, and a file that is not a DuckDB store
is one line with no request leaving the machine. Inputs come from tests/crafted_markup.py."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from profiler.cli import terminal
from profiler.present import markup
from profiler.storage import catalog, job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.crafted import kineto_trace
from tests.crafted_markup import CONTROLS, formula_cells, hostile_ranks, hostile_trace, payload
from tests.markup_scan import raw_tables, raw_texts, unsafe_calls
from tests.pages.conftest import shown

ROOT = Path(__file__).resolve().parent.parent
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all but "\n"
CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")
UNESCAPED = re.compile(r"(?<!\\)[\[\]$<>@*`]|(?<!\\)://|(?<!\\)www\.|:[a-z]+\[")  # markup left live
LIVE_FORMULA = re.compile(r"^[=+\-@\t\r\n]")


# ── class 1: one way to put trace text into Markdown ───────────────────────────────────────────

def test_every_markdown_sink_in_the_app_gets_escaped_text():
    assert unsafe_calls() == []


def test_every_table_goes_through_ui_table_and_every_plain_text_through_printable():
    assert raw_tables() == []
    assert raw_texts() == []


def test_raw_texts_are_found(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("st.text(finding.text)\nst.text('literal')\nst.text(markup.printable(x))\n")
    assert len(raw_texts([page])) == 1 and "finding.text" in raw_texts([page])[0]


ISSUE_PATHS = '''
with st.expander(f"{labels.get(run, run)}: {len(live)} block(s)"): pass
st.metric("backend", report["backend"] or "not given")
bar = st.progress(0.0, text=f"job {job}: reading {len(files)} file(s)…")
bar.progress(0.5, text=f"job {job}: {done:.0%}")
tabs = st.tabs([label for label in labels])
st.radio("run", runs, format_func=lambda r: labels[r])
st.caption(markup.fmt(template, name))
st.page_link("pages/x.py", label=name)
st.download_button(f"{name}.csv", data)
st.selectbox("x", runs, help=f"{name}")
st.write(name)
Col.TextColumn(name)
st.html(f"<b>{markup.md(name)}</b>")
st.markdown(markup.md(name), unsafe_allow_html=True)
'''
SAFE = '''
with st.expander(markup.fmt("{}: {:,} block(s)", labels.get(run, run), len(live))): pass
st.metric("backend", markup.md(report["backend"] or "not given"))
bar = st.progress(0.0, text=markup.fmt("job {}: reading {} file(s)…", job, len(files)))
bar.progress(0.5, text=f"{done:.0%} of {len(files)} {LABEL}")
st.radio("scale", list(SCALES), format_func=SCALES.get)
text = markup.md(name)
text += f" and {count:,} more"
st.caption(text)
for paragraph in narrative.cudnn_story(a, b, c):
    st.markdown(paragraph)
st.dataframe(df)
'''


def _flagged(source: str, tmp_path: Path) -> list[int]:
    page = tmp_path / "page.py"
    page.write_text(textwrap.dedent(source))
    return sorted({int(line.split(":")[1]) for line in unsafe_calls([page])})


def test_the_scan_finds_the_three_paths_of_the_issue_and_their_kin(tmp_path):
    """Each line of ISSUE_PATHS gives a Markdown sink unescaped text (the first three are the
    memory expander, the job metric and the upload progress of issue 22); SAFE's lines do not."""
    lines = [n for n, line in enumerate(ISSUE_PATHS.splitlines(), start=1) if line.strip()]
    assert _flagged(ISSUE_PATHS, tmp_path) == lines
    assert _flagged(SAFE, tmp_path) == []


def test_raw_tables_are_found(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("import streamlit as st\nst.dataframe(df)\nst.table(df)\nui.table(df)\n")
    assert [line.rsplit(": ", 1)[1] for line in raw_tables([page])] == ["st.dataframe", "st.table"]


@pytest.mark.parametrize("tag", ["A", "*", "`", "$", "\\", ":", "[", "<"])
def test_fmt_escapes_every_field_and_keeps_the_template(tag):
    text = markup.fmt("Job **{}**: {:,} ranks, {:.1f} µs", payload(tag), 12345, -2.5)
    assert text.startswith("Job **") and "**: 12,345 ranks, \\-2.5 µs" in text
    field = text[len("Job **"):text.index("**: 12,345")]
    assert field == markup.md(payload(tag))
    assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e]", field), "control characters shown escaped"
    assert not UNESCAPED.search(CODE_SPAN.sub("", field)), f"the field keeps markup: {field!r}"


NAMES = ["aten::_cudnn_attention", "see http://evil.invalid/x and www.evil.invalid",
         "mail a@evil.invalid", "x:fire:y :smile:", ":material/home: http://a.b/:material/c",
         "``tick`s`` `http://a.b` :red[r]", "1. item", "# title"]


@pytest.mark.parametrize("name", NAMES)
def test_md_shows_the_characters_of_the_name_and_inserts_none(name):
    """A name keeps every character (no invisible word joiner to spoil a copy into grep); a word
    that Streamlit would read as a link or an emoji after escaping sits in a code span, where no
    such pass reads; everything outside the spans is escaped."""
    text = markup.md(name)
    assert "\u2060" not in text and ":material/" not in text
    assert shown(text) == name
    outside = CODE_SPAN.sub("", text)
    assert not re.search(r"https?://|www\.|@[-\w]+\.|(?<!\\):(?=\S)", outside), outside
    live = re.search(r"https?://|www\.|\w@[-\w]+\.|:[\w+-]+:", name)
    assert bool(CODE_SPAN.search(text)) == bool(live), "plain names stay plain text"


# ── class 3: tables, CSV downloads and terminals ─────────────────────────────────────────────

def _csv_rows(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode(), newline="")))


def test_no_generated_cell_exports_a_live_formula_or_splits_a_row():
    cells = formula_cells() + [payload("P")]
    df = pd.DataFrame({"name": cells, "n": range(len(cells)), **{c: 1 for c in cells[:3]}})
    data = markup.to_csv(df)
    rows = _csv_rows(data)
    assert len(rows) == len(cells) + 1, "one row per cell: no line break split a row"
    assert len(data.decode().splitlines()) == len(cells) + 1, "a naive reader splitting lines agrees"
    for row in rows:
        assert not any(LIVE_FORMULA.match(value) for value in row if not re.fullmatch(r"-?\d+", value)), row
        assert not any(RAW_CONTROL.search(value) for value in row), row
    body = [row[0] for row in rows[1:]]
    assert body[0] == "'=" + formula_cells()[0][1:], "the text stays readable after the guard"
    assert [int(v) for v in (row[1] for row in rows[1:])] == list(range(len(cells))), "numbers stay numbers"


def test_the_cells_a_page_shows_are_the_safe_ones():
    df = pd.DataFrame({"k": pd.Categorical(formula_cells()), "m": formula_cells()}).set_index("m")
    shown = markup.csv_cells(df)
    for value in list(shown["k"]) + list(shown.index):
        assert not LIVE_FORMULA.match(value) and not RAW_CONTROL.search(value), repr(value)


@pytest.mark.parametrize("code", list(range(0x20)) + [0x7f] + list(range(0x80, 0xa0)) + [0x202e, 0x2066])
def test_printable_escapes_each_control_character_the_same_way_json_reads_it(code):
    text = f"a{chr(code)}b"
    shown = markup.printable(text)
    assert not RAW_CONTROL.search(shown) and "\n" not in shown
    assert json.loads(f'"{shown}"') == text, "the escape is a JSON (and Python) escape of the same character"


def test_the_terminal_filter_escapes_trace_text_but_not_the_programs_own_redraws():
    out = io.StringIO()
    stream = terminal.Printable(out)
    print(f"name {CONTROLS}", file=stream)
    terminal.control(stream, "\r")
    assert out.getvalue() == "name " + markup.printable(CONTROLS, keep="\n") + "\n\r"  # the filter keeps line breaks


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory):
    """A store with two hostile runs (control characters and markup in every text) and a job."""
    folder = tmp_path_factory.mktemp("hostile-cli")
    with pytest.MonkeyPatch.context() as patch:  # jobs beside the store, for the commands run below too
        patch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
        yield _hostile_store(folder)


def _hostile_store(folder: Path):
    store = Store(folder / "store.duckdb")
    a = store.ingest(hostile_trace("A"), f"a {CONTROLS}.json").run_id
    b = store.ingest(hostile_trace("B"), "b.json").run_id
    catalog.rename_run(store, b, payload("R")[:catalog.MAX_NAME_CHARS])
    paths = []
    for name, data in hostile_ranks("J"):
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    job = job_ingest.ingest_job(store, paths, f"job {CONTROLS}", engine="in-process").job
    return store, a, b, job, paths


def cli(*args: str, env: dict | None = None, prefix: tuple = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-m", "profiler", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.slow  # a subprocess
def test_no_command_prints_a_control_character_from_a_trace(hostile_store, tmp_path):
    store, a, b, job, paths = hostile_store
    db = str(store.path)
    (tmp_path / f"c {CONTROLS}.json").write_bytes(hostile_trace("C"))
    commands = [("summary", "--db", db), ("compare", a, b, "--db", db), ("compare", a, b, "--db", db, "--json"),
                ("ops", a, "--db", db), ("ops", a, "--db", db, "--json"), ("job", job, "--db", db),
                ("job", job, "--db", db, "--json"), ("job", job, "--db", db, "--compare", job),
                ("ingest", str(tmp_path / f"c {CONTROLS}.json"), str(paths[0]), "--db", str(tmp_path / "s.duckdb"))]
    for args in commands:
        done = cli(*args)
        assert "Traceback" not in done.stderr, (args, done.stderr[-2000:])
        assert done.returncode == 0 and done.stdout, (args, done.stdout[-500:], done.stderr[-500:])
        raw = RAW_CONTROL.findall(done.stdout + done.stderr)
        assert raw == [], f"{args[0]} printed {sorted(set(raw))!r}"
        spoofed = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("SPOOFED")]
        assert spoofed == [], f"{args[0]}: a line break in trace text started a line: {spoofed[:2]}"
    summary = cli("summary", "--db", db, "--json")
    assert {r["name"] for r in json.loads(summary.stdout)} >= {f"a {CONTROLS}.json"}, "JSON keeps the text"
    table = cli("summary", "--db", db).stdout
    assert "\\u001b[31m" in table and "\\u0007" in table and "\\nSPOOFED" in table, "shown escaped, not dropped"


# ── class 2: a file that is not a store; nothing leaves the machine ─────────────────────────────

def not_a_store_files(folder: Path) -> dict[str, Path]:
    """Files that are not DuckDB stores, one of each kind DuckDB might try to read some way."""
    made = {}
    con = sqlite3.connect(folder / "sqlite.db")
    con.execute("CREATE TABLE traces (run_id TEXT)")
    con.commit()
    con.close()
    made["sqlite"] = folder / "sqlite.db"
    made["text"] = folder / "notes.duckdb"
    made["text"].write_text("not a store at all, just some words\n" * 10)
    made["trace"] = folder / "trace.duckdb"
    made["trace"].write_bytes(kineto_trace(30))
    pq = folder / "table.parquet"
    duckdb.connect().execute(f"COPY (SELECT 1 AS a) TO '{pq}' (FORMAT parquet)")
    made["parquet"] = pq
    made["gzip"] = folder / "x.duckdb.gz"
    made["gzip"].write_bytes(b"\x1f\x8b\x08\x00" + bytes(60))
    made["folder"] = folder / "a-folder.duckdb"
    made["folder"].mkdir()
    return made


def _network_calls(strace_log: Path) -> list[str]:
    lines = strace_log.read_text().splitlines() if strace_log.exists() else []
    return [line for line in lines if "AF_INET" in line or "AF_INET6" in line]


@pytest.mark.slow  # a subprocess
def test_a_file_that_is_not_a_store_is_one_line_and_nothing_leaves_the_machine(tmp_path):
    files = not_a_store_files(tmp_path)
    trace = tmp_path / "good.json"
    trace.write_bytes(kineto_trace(30))
    home = tmp_path / "home"
    home.mkdir()
    strace = shutil.which("strace")
    for kind, path in files.items():
        before = path.read_bytes() if path.is_file() else None
        commands = [("summary", "--db", str(path)), ("ingest", str(trace), str(trace), "--db", str(path))]
        if kind == "sqlite":  # the case of the issue: every command that opens the store
            commands += [("ops", "x", "--db", str(path)), ("compare", "a", "b", "--db", str(path))]
        for args in commands:
            log = tmp_path / f"strace-{kind}-{args[0]}.txt"
            prefix = (strace, "-f", "-qq", "-e", "trace=connect", "-o", str(log)) if strace else ()
            done = cli(*args, env={"HOME": str(home)}, prefix=prefix)
            message = (done.stdout + done.stderr).strip()
            assert "Traceback" not in message, (kind, args, message)
            assert len(message.splitlines()) == 1, (kind, args, message)
            if kind == "folder" and args[0] != "ingest":  # read commands: "There is no store at …", as before
                assert done.returncode == 2 and message.startswith("error: There is no store at"), message
            else:
                assert done.returncode == 1 and "is not a DuckDB store" in message, (kind, args, message)
                assert str(tmp_path) not in message, f"no server paths: {message}"
            assert _network_calls(log) == [], f"{kind} {args[0]}: {_network_calls(log)}"
        assert (path.read_bytes() if path.is_file() else None) == before, f"{kind}: the file was changed"
    assert not (home / ".duckdb").exists(), "DuckDB prepared to install an extension"
    assert "is not a DuckDB store (the file is a SQLite database)" in cli("summary", "--db", str(files["sqlite"])).stderr


def test_every_connection_refuses_to_load_or_install_extensions(hostile_store, tmp_path):
    store = hostile_store[0]
    settings = ("autoload_known_extensions", "autoinstall_known_extensions", "allow_community_extensions")
    for read_only, jobs_views in ((False, False), (False, True)):
        with Store(store.path, read_only=read_only).connect(jobs=jobs_views) as con:
            assert con.execute(f"SELECT {', '.join(f'current_setting({s!r})' for s in settings)}").fetchone() \
                == (False, False, False)
    with Store(store.path, read_only=True).connect() as con:
        with pytest.raises(duckdb.Error, match="(?i)extension|not found|install"):
            con.execute("SELECT * FROM sqlite_scan('x.db', 't')").fetchall()


@pytest.mark.parametrize("stem", [payload("F"), "job-" + CONTROLS, "../../etc/passwd", 'a"b\\c', "x" * 500])
def test_download_file_names_hold_no_path_or_control_character(stem):
    from profiler.present.ui.tables import download_name

    name = download_name(stem, ".csv")
    assert name.endswith(".csv") and len(name) <= 124
    assert not re.search(r'[\x00-\x1f\x7f-\x9f/\\"]', name), name


def test_bullets_is_one_list_of_escaped_items():
    """`markup.bullets` (a page's findings as one list) puts every item through `md`, nothing else."""
    items = ["**bold** [x](http://e.com)", "aten::mm <script>", "line\nbreak"]
    assert markup.bullets(items) == "\n".join(f"- {markup.md(t)}" for t in items)
    assert markup.bullets([]) == ""
