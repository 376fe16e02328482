"""Upload page, issue 37: a graph replay and its capture trace, as two files or a zip holding
both, stored as one joined run with the join's counts shown; a lone file refused in a plain error."""
from __future__ import annotations

import io
import zipfile

import pytest

from profiler.analysis import run_queries
from tests.test_graphs_described import G, PAIRS, raw_replay

pytestmark = [pytest.mark.third_party, pytest.mark.skipif(not G.is_dir(), reason="needs the shared graph pairs")]


def _upload(pages, files, pair=True):
    at = pages.open("upload")
    at.file_uploader[0].set_value(files)
    box = next(c for c in at.checkbox if c.label.startswith("A graph replay and its capture trace"))
    box.set_value(pair)
    next(b for b in at.button if b.label == "Add to the store").click()
    return at.run()


def _files():
    replay, capture = PAIRS["sglang"]
    return replay, capture, [(capture.name, capture.read_bytes(), "application/gzip"),
                             (replay.name, replay.read_bytes(), "application/gzip")]


def _check(pages, at, store, replay, capture):
    assert not at.exception and not at.error, [e.value for e in at.error]
    catalog = run_queries.run_catalog(store)
    assert catalog["name"].tolist() == [f"{replay.name} (joined with {capture.name})"]
    assert at.query_params["runs"] == catalog["run_id"].iloc[0]
    _, replayed = raw_replay(replay)
    assert f"graph join: {replayed:,} of {replayed:,} replayed GPU events matched" in pages.texts(at)


def test_two_files_become_one_joined_run(pages, empty_store):
    replay, capture, files = _files()
    _check(pages, _upload(pages, files), empty_store, replay, capture)


def test_a_zip_holding_both_becomes_one_joined_run(pages, empty_store):
    replay, capture, files = _files()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data, _ in files:
            z.writestr(name, data)
    _check(pages, _upload(pages, [("pair.zip", buf.getvalue(), "application/zip")]), empty_store, replay, capture)


def test_one_file_is_refused_in_words(pages, empty_store):
    replay, _, files = _files()
    at = _upload(pages, files[1:])
    assert not at.exception
    assert len(at.error) == 1 and "a graph pair is two traces" in at.error[0].value
    assert run_queries.run_catalog(empty_store).empty
