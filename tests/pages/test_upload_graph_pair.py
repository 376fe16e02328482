"""Upload page, issue 37: a graph replay and its capture trace, as two files or a zip holding
both, stored as one joined run with the join's counts shown; a lone file refused in a plain error."""
from __future__ import annotations

import io
import zipfile

import pytest

from profiler.analysis.reads import run_queries
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
    assert len(at.error) == 1 and "no capture trace among them" in at.error[0].value
    assert run_queries.run_catalog(empty_store).empty


def test_an_unpaired_capture_is_refused_saying_to_choose_its_replay(pages, empty_store):
    _, capture, files = _files()
    at = _upload(pages, files[:1])
    assert not at.exception
    shown = at.error[0].value.replace("\\_", "_")   # the file's name is data: escaped for Markdown
    assert len(at.error) == 1 and f"{capture.name}: a capture trace with no graph replay beside it" in shown
    assert run_queries.run_catalog(empty_store).empty


def test_a_zip_of_the_pair_folder_is_joined_without_being_asked(pages, empty_store):
    """The shared pair's folder zipped as it is (capture, replay, execution_details.json), no box
    ticked and no job name: the files tell which is the capture; the other file is named."""
    replay, capture, files = _files()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data, _ in files:
            z.writestr(f"sglang_decode/{name}", data)
        z.writestr("sglang_decode/execution_details.json", (capture.parent / "execution_details.json").read_bytes())
    at = _upload(pages, [("sglang_decode.zip", buf.getvalue(), "application/zip")], pair=False)
    _check(pages, at, empty_store, replay, capture)
    assert "Left out of the join: execution_details.json (neither a graph capture nor a graph replay trace)" \
        in pages.texts(at)


def test_ordinary_files_are_not_taken_for_a_pair(pages, empty_store):
    from tests.conftest import FIXTURES

    files = [(n, (FIXTURES / n).read_bytes(), "application/json") for n in ("tiny_naive.json", "tiny_inplace.json")]
    at = _upload(pages, files, pair=False)
    assert not at.exception and not at.error
    assert sorted(run_queries.run_catalog(empty_store)["name"]) == ["tiny_inplace.json", "tiny_naive.json"]
