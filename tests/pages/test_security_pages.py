"""Security and robustness of every page (AppTest; tests/test_security_browser.py does the same in
Chromium): markup and formula payloads in every text a trace or a user can set, malformed device
properties, extreme numbers and a 40 MB name on every page, and URL parameter fuzzing of every
page. Payload text must reach Markdown only escaped, and nothing may raise."""
from __future__ import annotations

import json
import re

import pytest

from profiler.present import markup
from profiler.present.share import PAGES
from profiler.storage import catalog
from profiler.storage.store import Store
from tests.crafted import HUGE_NAME_BYTES
from tests.pages.conftest import FLASH, NAIVE, PAGE_FIXTURES


def payload(tag: str) -> str:
    """Markdown, HTML, a Streamlit colour directive, KaTeX and autolinks, all at once."""
    return (f"{tag} ![img](http://evil.invalid/{tag}.png) [link](http://evil.invalid/{tag}) "
            f":red[red-{tag}] $x^{tag}$ <img src=http://evil.invalid/h.png> www.evil.invalid "
            f"a@evil.invalid **bold** `code` # heading")


def payload_trace(fixture: str, tag: str) -> bytes:
    """A fixture trace with a payload in every event name, the run metadata and the GPU name."""
    doc = json.loads((PAGE_FIXTURES / fixture).read_text())
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            e["name"] = f"{e['name']} {payload(tag)}"
    doc["attention_run"].update(variant=f"{doc['attention_run']['variant']} {payload(tag)}",
                                dtype=f"bf16 {payload(tag)}")
    doc["deviceProperties"][0]["name"] = f"NVIDIA H200 {payload(tag)}"
    doc["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "=HYPERLINK(\"http://evil.invalid\")",
                               "pid": 0, "tid": 7, "ts": doc["traceEvents"][-1]["ts"] + 1, "dur": 1})
    return json.dumps(doc).encode()


def odd_trace() -> bytes:
    """Malformed device properties, extreme numbers, and a 40 MB kernel name."""
    doc = json.loads((PAGE_FIXTURES / NAIVE).read_text())
    doc["deviceProperties"] = [{"id": [1], "name": {"x": 1}, "numSms": "many"}, "x"]
    doc["attention_run"].update(batch=10**30, seq_len=-5, head_dim="64")
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    doc["traceEvents"] += [
        dict(kernel, name="n" * HUGE_NAME_BYTES, ts=kernel["ts"] + 2),
        dict(kernel, name="long", dur=2.0e15, ts=kernel["ts"] + 3),  # 63 years: in range
        dict(kernel, name="far", ts=4.0e15, dur=1),  # far in the future, still in range
        dict(kernel, name="gone", dur=1e308),  # out of range: skipped and counted
        dict(kernel, name="grid", args=dict(kernel.get("args", {}), grid=[2**40, -1, 1.5],
                                            block=["x", None, 1e300])),
    ]
    return json.dumps(doc).encode()


@pytest.fixture(scope="module")
def hostile_template(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "template.duckdb"
    store = Store(path)
    a = store.ingest(payload_trace(NAIVE, "A"), f"{payload('file')}.json").run_id
    b = store.ingest(payload_trace(FLASH, "B"), "b.json").run_id
    odd = store.ingest(odd_trace(), "odd.json").run_id
    catalog.rename_run(store, b, payload("R")[:catalog.MAX_NAME_CHARS])
    return path, (a, b, odd)


@pytest.fixture
def hostile(hostile_template, tmp_path, monkeypatch):
    import shutil

    template, ids = hostile_template
    path = tmp_path / "store.duckdb"
    shutil.copyfile(template, path)
    monkeypatch.setenv("PROFILER_DB", str(path))
    monkeypatch.setenv("PROFILER_SEED", "0")
    return Store(path), ids


def markdown_texts(at) -> list[str]:
    """Every text on the page that Streamlit renders as Markdown, as sent (escapes included)."""
    texts = [str(e.value) for kind in ("title", "header", "subheader", "markdown", "caption", "info",
                                       "warning", "error", "success") for e in getattr(at, kind)]
    texts += [str(e.label) for kind in ("expander", "text_input", "checkbox", "number_input", "selectbox",
                                        "button", "toggle") for e in getattr(at, kind)]
    texts += [e.proto.text for e in at.get("progress")]
    return texts


CODE_SPAN = re.compile(r"(?<!\\)`[^`]*`")
UNESCAPED = re.compile(r"(?<!\\)[\[\]$<>@]|(?<!\\)://|(?<!\\)www\.")


def assert_inert(at) -> None:
    """No text with a payload in it keeps a character that would make it markup (within 80
    characters of the payload's host name; backticks may be the page's own code spans)."""
    for text in markdown_texts(at):
        text = CODE_SPAN.sub("`…`", text)  # literal by definition (profiler.present.markup.code)
        near = [m.start() for m in re.finditer("evil", text)]
        for bad in UNESCAPED.finditer(text):
            assert not any(abs(bad.start() - n) < 80 for n in near), \
                f"payload rendered as markup: {text[max(0, bad.start() - 60):bad.start() + 60]!r}"


@pytest.mark.parametrize("page", PAGES)
def test_payloads_and_oddities_on_every_page_stay_text(pages, hostile, page):
    store, (a, b, odd) = hostile
    runs = f"{a},{b}" if page == "compare" else f"{a},{b},{odd}"
    at = pages.open(page, runs=runs)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert_inert(at)


def test_the_odd_run_alone_on_every_analysis_page(pages, hostile):
    store, (a, b, odd) = hostile
    for page in ("runs", "timeline", "kernels", "launches", "cpu-cost"):
        at = pages.open(page, runs=odd)
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not at.error, (page, [e.value for e in at.error])
    names = store.query("SELECT max(length(name)) AS n FROM kernels")["n"].iloc[0]
    assert names == 64 * 1024 + len("…[truncated]")


FUZZ = [
    {"iter": "9999999999999999999"}, {"iter": "-1"}, {"iter": "1e9"}, {"iter": "١٢"},
    {"window": "0,99999999999999999999"}, {"window": "5,1"}, {"window": "-9223372036854775808,0"},
    {"window": ",,"}, {"runs": "<script>alert(1)</script>"}, {"runs": ",".join(["a"] * 3)},
    {"runs": "x" * 5000}, {"runs": "../../etc/passwd"}, {"q": "%" * 600}, {"q": "' OR 1=1 --"},
    {"a": "nope", "b": "nope"}, {"scale": "![x](http://evil.invalid/s.png)"}, {"Bad-Key": "1"},
    {"iter": "0", "window": "0,1"},
]


@pytest.mark.parametrize("page", PAGES)
def test_url_parameter_fuzzing_never_raises(pages, hostile, page):
    store, (a, b, odd) = hostile
    for params in FUZZ:
        params = dict(params)
        params.setdefault("runs", f"{a},{b}")
        at = pages.open(page, **params)
        assert not at.exception, (page, params, [e.value for e in at.exception])
        for text in markdown_texts(at):
            assert "evil.invalid/s.png)" not in text or "\\[" in text, text


def test_csv_cells_that_start_a_formula_are_neutralised():
    import pandas as pd

    df = pd.DataFrame({"name": ["=1+1", "+cmd", "-2", "@SUM(A1)", "\tx", "\rx", "ok"], "n": [-1, 2, 3, 4, 5, 6, 7]})
    out = markup.csv_cells(df)
    assert out["name"].tolist() == ["'=1+1", "'+cmd", "'-2", "'@SUM(A1)", "\\tx", "\\rx", "ok"]
    assert out["n"].tolist() == [-1, 2, 3, 4, 5, 6, 7], "numbers stay numbers"


@pytest.mark.parametrize("page", PAGES)
def test_a_damaged_store_is_one_sentence_on_every_page(pages, hostile, page):
    import duckdb

    store, (a, b, odd) = hostile
    con = duckdb.connect(str(store.path))
    con.execute("UPDATE store_meta SET value = 'x' WHERE key = 'schema_version'")
    con.close()
    at = pages.open(page, runs=f"{a},{b}")
    assert not at.exception, [e.value for e in at.exception]
    shown = [e.value for e in at.error]
    if page not in ("profile", "upload"):  # pages that read the store say why they cannot
        assert any("is damaged: its schema version reads 'x'" in e for e in shown), shown
    assert not any(str(store.path) in e for e in shown), "no server paths"
