"""Issue 22 on every page (AppTest; tests/test_security_markup_browser.py does it in Chromium).

A store whose runs hold every kind of event, `[memory]` events and a job among them, with markup,
formulas and control characters in every text (tests/crafted_markup.py). On every page, every
text Streamlit renders as Markdown, found by walking all elements the page sent (headings, alerts,
labels, help, expanders, popovers, tabs, metrics, progress, toasts, links), keeps the payload
escaped; every table cell is safe to export (the table toolbar downloads them as handed over). A
job uploaded under a hostile name shows it escaped in its progress; a SQLite file as the store is
one sentence on every page."""
from __future__ import annotations

import re
import shutil
import sqlite3

import pytest

from profiler.present.share import PAGES
from profiler.storage import catalog, job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.crafted_markup import CONTROLS, hostile_ranks, hostile_trace, payload

CODE_SPAN = re.compile(r"(?<!\\)`[^`]*`")
UNESCAPED = re.compile(r"(?<!\\)[\[\]$<>@]|(?<!\\)://|(?<!\\)www\.|:[a-z]+\[")
LIVE_FORMULA = re.compile(r"^[=+\-@\t\r\n]")
RAW_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
SHOWN_RAW = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # in a text on the page
MARKDOWN_FIELDS = {"body", "label", "text", "help", "delta", "placeholder_text"}
PLAIN = {"Text", "Json"}  # shown literally (st.text, st.json)


def markdown_texts(at) -> list[str]:
    """Every Markdown text of every element and block the page sent (a metric's value is its
    `body`; radio and pills options are Markdown too)."""
    texts, seen = [], set()

    def collect(message) -> None:
        if type(message).__name__ in PLAIN:
            return
        for field, value in message.ListFields():
            items = list(value) if getattr(field, "is_repeated", False) else [value]
            if field.type == field.TYPE_MESSAGE:
                for item in items:
                    collect(item)
            elif field.type == field.TYPE_STRING and (field.name in MARKDOWN_FIELDS or (
                    field.name == "options" and type(message).__name__ in ("Radio", "ButtonGroup"))):
                texts.extend(items)

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and id(proto) not in seen:
            seen.add(id(proto))
            collect(proto)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return texts


def assert_inert(at, where: str) -> int:
    """No Markdown text with a payload keeps live markup near it; returns how many held one."""
    held = 0
    for text in [e.value for e in at.text] + markdown_texts(at):  # st.text is plain, but shows controls
        # a page writes a list as one Markdown text ("- a\n- b"); md() turns a line break from a
        # trace into a space, so only the page's own line breaks start a list item
        assert not SHOWN_RAW.search(text.replace("\n- ", " ")), \
            f"{where}: a control character reaches the page: {text[:200]!r}"
    for text in markdown_texts(at):
        plain = CODE_SPAN.sub("`…`", text)  # code spans are literal (markup.code, and md() for links)
        held += "evil" in text
        near = [m.start() for m in re.finditer("evil|red-|`…`", plain)] if "evil" in text else []
        for bad in UNESCAPED.finditer(plain):
            assert not any(abs(bad.start() - n) < 80 for n in near), \
                f"{where}: payload rendered as markup: {plain[max(0, bad.start() - 60):bad.start() + 60]!r}"
    return held


def assert_cells_safe(at, where: str) -> int:
    """Every text cell, column name and index label of every table can be exported as it is."""
    cells = 0
    for table in at.dataframe:
        df = table.value
        values = [str(c) for c in df.columns] + [str(i) for i in df.index if isinstance(i, str)]
        for column in df.columns:
            values += [v for v in df[column] if isinstance(v, str)]
        for value in values:
            assert not LIVE_FORMULA.match(value) and not RAW_CONTROL.search(value), f"{where}: {value!r}"
        cells += len(values)
    return cells


@pytest.fixture(scope="module")
def hostile_template(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-markup")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
        store = Store(folder / "template.duckdb")
        a = store.ingest(hostile_trace("A"), f"{payload('file')}.json".replace("/", "_")).run_id
        b = store.ingest(hostile_trace("B"), "b.json").run_id
        catalog.rename_run(store, b, payload("R")[:catalog.MAX_NAME_CHARS])
        paths = []
        for name, data in hostile_ranks("J"):
            (folder / name).write_bytes(data)
            paths.append(folder / name)
        job = job_ingest.ingest_job(store, paths, f"team {payload('N')}"[:100], engine="in-process").job
        yield folder, (a, b), job


@pytest.fixture
def hostile(hostile_template, tmp_path, monkeypatch):
    folder, runs, job = hostile_template
    shutil.copyfile(folder / "template.duckdb", tmp_path / "store.duckdb")
    shutil.copytree(folder / "template-jobs", tmp_path / "store-jobs")
    monkeypatch.setenv("PROFILER_DB", str(tmp_path / "store.duckdb"))
    monkeypatch.setenv("PROFILER_SEED", "0")
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    return runs, job


@pytest.mark.parametrize("page", PAGES)
def test_every_text_and_cell_of_every_page_stays_inert(pages, hostile, page):
    (a, b), job = hostile
    at = pages.open(page, runs=f"{a},{b}", job=job)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    held = assert_inert(at, page)
    cells = assert_cells_safe(at, page)
    if page in ("memory", "job"):  # pages that put run or job text into Markdown
        assert held, f"{page}: no payload reached a Markdown text, so nothing was tested"
    if page in ("memory", "job", "kernels", "launches", "cpu-cost", "compare", "runs"):
        assert cells, f"{page}: no table"


def test_the_three_paths_of_the_issue_show_the_payload_escaped(pages, hostile):
    """The memory page's expander labels, the job page's backend metric: the payload is there, as text."""
    (a, b), job = hostile
    at = pages.open("memory", runs=f"{a},{b}")
    labels = [e.label for e in at.expander]
    # a word Streamlit would read as a link after escaping is a code span: shown, never linked
    assert len(labels) == 2 and all("`[link](http://evil.invalid/" in label for label in labels), labels
    at = pages.open("job", job=job)
    backend = next(m for m in at.metric if m.label == "backend").value
    assert "evil" in backend and backend.startswith("`![b](http://evil.invalid/"), backend


def test_a_job_uploaded_under_a_hostile_name_shows_it_escaped(pages, empty_store, monkeypatch, tmp_path):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    at = pages.open("upload")
    at.file_uploader[0].set_value([(n, data, "application/json") for n, data in hostile_ranks("U")])
    name = f"up {payload('N')}"[:110]
    at.text_input[0].input(name)
    next(b for b in at.button if b.label == "Add to the store").click()
    at = at.run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    progress = [e.proto.text for e in at.get("progress")]
    assert progress and all("evil" in t for t in progress), progress
    assert assert_inert(at, "upload") >= 2, "the progress and the success line hold the job name"


@pytest.mark.parametrize("page", PAGES)
def test_a_sqlite_file_as_the_store_is_one_sentence(pages, tmp_path, monkeypatch, page):
    path = tmp_path / "store.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE traces (run_id TEXT)")
    con.commit()
    con.close()
    before = path.read_bytes()
    monkeypatch.setenv("PROFILER_DB", str(path))
    monkeypatch.setenv("PROFILER_SEED", "0")
    at = pages.open(page, runs="abc")
    assert not at.exception, [e.value for e in at.exception]
    shown = [e.value for e in at.error]
    if page not in ("profile", "upload"):  # the pages that read the store say why they cannot
        assert any("is not a DuckDB store (the file is a SQLite database)" in e for e in shown), shown
    assert not any(str(tmp_path) in e for e in shown), "no server paths"
    assert path.read_bytes() == before
    assert not any(CONTROLS in e for e in shown)
