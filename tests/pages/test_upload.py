"""Upload page: the limit is shown, each file is ingested or fails with its own plain error,
the new runs become the selection, and uploading the same file again changes nothing."""
from __future__ import annotations

import gzip
from pathlib import Path

from profiler.analysis.reads import run_queries

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"


def _upload(pages, files):
    at = pages.open("upload")
    at.file_uploader[0].set_value(files)
    next(b for b in at.button if b.label == "Add to the store").click()
    return at.run()


def test_the_size_limit_is_shown(pages, page_store):
    at = pages.open("upload")
    pages.assert_clean(at)
    assert "up to 500 MB per file" in pages.texts(at)
    assert sorted(at.file_uploader[0].allowed_type) == [".gz", ".json", ".zip"]


def test_good_and_bad_files_each_get_their_own_outcome(pages, empty_store):
    good = gzip.compress((FIXTURES / "sdpa_flash_small.json").read_bytes())
    truncated = (FIXTURES / "naive_small.json").read_bytes()[:900]
    at = _upload(pages, [("flash.json.gz", good, "application/gzip"),
                         ("cut.json", truncated, "application/json"),
                         ("notes.json", b"hello", "application/json")])
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 2
    assert errors[0].startswith("cut.json: ") and errors[1].startswith("notes.json: ")
    catalog = run_queries.run_catalog(empty_store)
    assert catalog["name"].tolist() == ["flash.json.gz"]
    assert at.query_params["runs"] == catalog["run_id"].iloc[0]
    assert "1 run(s) ready and selected" in pages.texts(at)
    done = [b.proto.text for b in at.get("progress")]
    assert done == ["flash.json.gz: 12 events, 2 kernels in " + done[0].split(" in ")[1]]
    kept = Path(empty_store.path).parent / "traces" / f"{catalog['run_id'].iloc[0]}.json.gz"
    assert kept.read_bytes() == good, "a gzip upload is kept byte for byte"


def test_same_file_twice_is_the_same_run(pages, page_store, run_ids):
    raw = (FIXTURES / "naive_small.json").read_bytes()
    at = _upload(pages, [("again.json", raw, "application/json")])
    pages.assert_clean(at)
    assert at.query_params["runs"] == run_ids["naive_small.json"]
    assert "(already in the store)" in at.get("progress")[0].proto.text
    assert len(run_queries.run_catalog(page_store)) == len(run_ids)
    kept = Path(page_store.path).parent / "traces" / f"{run_ids['naive_small.json']}.json.gz"
    assert gzip.decompress(kept.read_bytes()) == raw, "plain JSON is kept gzipped"


def test_submitting_nothing_asks_for_a_file(pages, page_store):
    at = pages.open("upload")
    next(b for b in at.button if b.label == "Add to the store").click()
    at.run()
    pages.assert_clean(at)
    assert "Choose at least one trace file first." in pages.texts(at)
