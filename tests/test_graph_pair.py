"""Issue 37, item 2: a graph replay and its capture stored as one joined run from two files in
any order (profiler/storage/graph_pair.py, which `ingest REPLAY --capture CAPTURE` and the Upload
page share), the same run as the command line's; wrong pairs refused naming the files."""
from __future__ import annotations

import shutil

import pytest

from profiler.errors import TraceError
from profiler.storage import graph_pair
from profiler.storage.store import Store
from tests.test_graphs_described import G, PAIRS, raw_replay

pytestmark = [pytest.mark.third_party, pytest.mark.skipif(not G.is_dir(), reason="needs the shared graph pairs")]


def test_the_pair_is_told_apart_in_either_order_and_joined_as_the_command_line_joins_it(tmp_path, capsys):
    from profiler.cli.main import main

    replay, capture = PAIRS["sglang"]
    assert graph_pair.pair([capture, replay]) == (replay, capture)
    assert graph_pair.pair([replay, capture]) == (replay, capture)
    store = Store(tmp_path / "s.duckdb")
    result, joined = graph_pair.ingest(store, *graph_pair.pair([capture, replay]))
    _, replayed = raw_replay(replay)
    assert (joined.replayed, joined.matched) == (replayed, replayed)
    assert result.name == f"{replay.name} (joined with {capture.name})"
    other = Store(tmp_path / "cli.duckdb")
    assert main(["ingest", str(replay), "--capture", str(capture), "--db", str(other.path)]) == 0
    assert capsys.readouterr().out.split()[0] == result.run_id


def test_wrong_pairs_are_refused_with_the_files_named(tmp_path):
    replay, capture = PAIRS["sglang"]
    with pytest.raises(TraceError, match="1 were given"):
        graph_pair.pair([replay])
    with pytest.raises(TraceError, match="exactly one of the two must be a capture trace.*0 are"):
        graph_pair.pair([replay, shutil.copy(replay, tmp_path / "again.json.gz")])
    with pytest.raises(TraceError, match="2 are"):
        graph_pair.pair([capture, shutil.copy(capture, tmp_path / "again.json.gz")])
    broken = tmp_path / "cut.json.gz"
    broken.write_bytes(capture.read_bytes()[:500])
    with pytest.raises(TraceError, match="cut.json.gz"):
        graph_pair.pair([replay, broken])


def test_several_files_give_their_pair_and_name_the_others(tmp_path):
    """An upload's files: one capture and one replay among other files (the shared folder's
    execution_details.json is no trace of either kind) are the pair, the rest named."""
    replay, capture = PAIRS["sglang"]
    details = capture.parent / "execution_details.json"
    kinds = graph_pair.classify([details, capture, replay])
    assert kinds == {details: None, capture: "capture", replay: "replay"}
    assert graph_pair.pair_of(kinds) == (replay, capture, [details])


def test_an_unpaired_upload_is_refused_saying_what_is_missing(tmp_path):
    replay, capture = PAIRS["sglang"]
    with pytest.raises(TraceError, match=r"bs_32_rank0.json.gz: a capture trace with no graph replay beside it"):
        graph_pair.pair_of(graph_pair.classify([capture]))
    with pytest.raises(TraceError, match=r"no capture trace among them \(one recorded while the graph was captured"):
        graph_pair.pair_of(graph_pair.classify([replay]))
    twice = shutil.copy(capture, tmp_path / "again.json.gz")
    with pytest.raises(TraceError, match="2 capture traces among the files: join one replay with its capture"):
        graph_pair.pair_of(graph_pair.classify([capture, twice, replay]))
    with pytest.raises(TraceError, match="nor a graph replay"):
        graph_pair.pair_of(graph_pair.classify([capture.parent / "execution_details.json"]))


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_the_pairs_folder_is_ingested_as_one_joined_run_with_the_other_files_left_out(name, tmp_path, capsys):
    """`ingest --graph-pair FOLDER`: the shared pair's folder as it is (the replay, capture/ with
    its trace and execution_details.json, reference/ with CSVs): the traces say which is which, the
    same run as `--capture` gives, the other JSON named as left out."""
    from profiler.cli.main import main

    replay, capture = PAIRS[name]
    folder = replay.parent
    assert (folder / "capture" / "execution_details.json").is_file()
    db = str(tmp_path / "s.duckdb")
    assert main(["ingest", "--graph-pair", str(folder), "--db", db]) == 0
    out = capsys.readouterr().out
    assert f"left out: {folder / 'capture' / 'execution_details.json'}" in out
    assert f"replay {replay}, capture {capture}" in out
    _, replayed = raw_replay(replay)
    assert f"{replayed} of {replayed} replayed GPU events matched" in out
    run_id = out.split("\n")[2].split()[0]
    other = str(tmp_path / "cli.duckdb")
    assert main(["ingest", str(replay), "--capture", str(capture), "--db", other]) == 0
    assert capsys.readouterr().out.split()[0] == run_id


def test_a_folder_without_its_replay_is_refused_naming_what_is_missing(tmp_path, capsys):
    from profiler.cli.main import main

    replay, capture = PAIRS["sglang"]
    db = tmp_path / "s.duckdb"
    assert main(["ingest", "--graph-pair", str(capture.parent), "--db", str(db)]) == 1
    assert f"FAILED  {capture.name}: a capture trace with no graph replay beside it" in capsys.readouterr().out
    assert main(["ingest", "--graph-pair", str(tmp_path / "nowhere"), "--db", str(db)]) == 1
    assert "no such file or folder" in capsys.readouterr().out
    assert main(["ingest", "--graph-pair", str(replay), "--capture", str(capture), "--db", str(db)]) == 2
