"""The store on hand-written traces whose expected tables were worked out by hand."""
from __future__ import annotations

from pathlib import Path

import gzip
import json
import threading

import duckdb
import pytest

from profiler import errors
from profiler.storage import connection
from profiler.storage.store import Store, default_db_path
from profiler.storage.migrations import SCHEMA_VERSION
from tests.conftest import FIXTURES


def rows(store: Store, sql: str, *params) -> list[tuple]:
    with store.connect() as con:
        return con.execute(sql, list(params)).fetchall()


@pytest.fixture
def naive(db_path):
    store = Store(db_path)
    return store, store.ingest(FIXTURES / "tiny_naive.json", source="captured")


def test_schema_version_is_recorded(db_path):
    assert Store(db_path).schema_version() == SCHEMA_VERSION


def test_run_count_counts_the_stored_runs(naive, db_path):
    store, _ = naive
    assert store.run_count() == 1 == len(rows(store, "SELECT run_id FROM traces"))
    store.ingest(FIXTURES / "tiny_inplace.json")
    assert Store(db_path).run_count() == 2


def test_default_path_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PROFILER_DB", str(tmp_path / "x.duckdb"))
    assert default_db_path() == tmp_path / "x.duckdb"
    monkeypatch.delenv("PROFILER_DB")
    # the project's data/ folder, whichever folder the app or the CLI was started from
    monkeypatch.chdir(tmp_path)
    assert default_db_path() == Path(__file__).resolve().parent.parent / "data" / "traces.duckdb"


def test_trace_row_carries_device_versions_and_run(naive):
    store, result = naive
    (row,) = rows(store, """SELECT name, source, gpu_name, cuda_version, driver_version, variant, batch,
        heads, seq_len, head_dim, dtype, causal, cold, events, kernels, skipped_events, start_ns, end_ns,
        json_extract_string(device_properties, '$[0].numSms') FROM traces""")
    assert row == ("tiny_naive.json", "captured", "NVIDIA H200", "13.0", "13.0", "naive", 8, 16, 1024, 64,
                   "bf16", True, False, 26, 4, 1, 990_000, 1_200_000, "132")
    assert len(result.run_id) == 16 and result.kernels == 4 and not result.duplicate


def test_kernels_keep_every_argument_and_belong_to_their_launch_iteration(naive):
    store, _ = naive
    got = rows(store, """SELECT name, stream, ts_ns, dur_ns, grid_x, grid_y, block_x, registers_per_thread,
        shared_mem_bytes, blocks_per_sm, warps_per_sm, est_occupancy_pct, correlation, external_id, iteration
        FROM kernels ORDER BY ts_ns""")
    assert got == [
        ("launched_before_window", 7, 990_000, 2_000, 1, 1, 32, None, None, None, None, None, 999, None, None),
        ("sm90_xmma_gemm_bf16bf16_bf16f32", 7, 1_020_000, 30_125, 128, 16, 128, 168, 32768, 1.5, 6.0, 9.0, 11, 4, 0),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::masked_fill>", 7, 1_061_500, 4_000,
         1056, 1, 128, 16, 0, 8.0, 64.0, 100.0, 13, 7, 0),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop", 7, 1_140_000, 25_000, 16, 128, 384, 128, 196608,
         0.0, 0.0, 0.0, 21, 9, 1),
    ]


def test_launches_link_to_what_they_launched(naive):
    store, _ = naive
    got = rows(store, """SELECT api, api_kind, target_kind, target_name, target_ts_ns - api_ts_ns
        FROM launch_targets ORDER BY api_ts_ns""")
    assert got == [
        ("cudaLaunchKernel", "runtime", "kernel", "sm90_xmma_gemm_bf16bf16_bf16f32", 16_000),
        ("cudaMemcpyAsync", "runtime", "memcpy", "Memcpy DtoD (Device -> Device)", 19_000),
        ("cudaLaunchKernel", "runtime", "kernel",
         "void at::native::vectorized_elementwise_kernel<4, at::native::masked_fill>", 15_500),
        ("cuLaunchKernelEx", "driver", "kernel", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop", 10_000),
    ]
    calls = rows(store, "SELECT name, cbid, dur_ns, iteration FROM launches ORDER BY ts_ns")
    assert ("cudaDeviceSynchronize", 165, 15_000, 0) in calls and len(calls) == 5


def test_memops_kind_bytes_and_bandwidth(naive):
    store, _ = naive
    assert rows(store, "SELECT kind, name, bytes, bandwidth_gbps, stream, iteration FROM memops ORDER BY ts_ns") == [
        ("memcpy", "Memcpy DtoD (Device -> Device)", 268435456, 26843.5456, 7, 0),
        ("memset", "Memset (Device)", 4096, 4.096, 8, None),   # no launch call in the trace: unattributed
    ]


def test_ops_nest_with_self_time(naive):
    store, _ = naive
    got = rows(store, """SELECT o.name, p.name, o.depth, o.self_ns, o.iteration
        FROM ops o LEFT JOIN ops p ON p.run_id = o.run_id AND p.op_id = o.parent_id ORDER BY o.ts_ns""")
    assert got == [
        ("ProfilerStep#3", None, 0, 10_000, 0),
        ("attention::naive", "ProfilerStep#3", 1, 40_000, 0),
        ("aten::matmul", "attention::naive", 2, 4_500, 0),
        ("aten::bmm", "aten::matmul", 3, 15_500, 0),
        ("aten::masked_fill", "attention::naive", 2, 12_000, 0),
        ("aten::clone", "aten::masked_fill", 3, 10_000, 0),
        ("aten::masked_fill_", "aten::masked_fill", 3, 8_000, 0),
        ("ProfilerStep#4", None, 0, 60_000, 1),
        ("aten::_cudnn_attention_forward", "ProfilerStep#4", 1, 40_000, 1),
    ]


def test_iterations_are_profiler_steps(naive):
    store, _ = naive
    assert rows(store, "SELECT iteration, name, start_ns, end_ns FROM iterations ORDER BY iteration") == [
        (0, "ProfilerStep#3", 1_000_000, 1_100_000), (1, "ProfilerStep#4", 1_100_000, 1_200_000)]


def test_old_format_bare_array_capitalised_categories(db_path):
    store = Store(db_path)
    result = store.ingest(FIXTURES / "tiny_old_format.json")
    assert result.events == 9 and result.kernels == 1
    assert rows(store, "SELECT name, external_id, warps_per_sm, iteration FROM kernels") == [
        ("implicit_convolve_sgemm", 2, 12.5, 0)]
    assert rows(store, "SELECT kind, bytes, iteration FROM memops ORDER BY ts_ns") == [
        ("memset", 1024, None), ("memcpy", 2048, None)]  # 'Bytes' spelled with a capital; the copies
    # has no launch call in a trace that records them: unattributed, in no step
    assert rows(store, "SELECT DISTINCT cat, tid FROM ops") == [("cpu_op", "140001")]
    assert rows(store, "SELECT gpu_name, variant FROM traces") == [(None, None)]


def test_nanosecond_digits_and_unsigned_64_bit_ids_survive(db_path):
    store = Store(db_path)
    store.ingest(FIXTURES / "tiny_ns_clock.json")
    assert rows(store, "SELECT ts_ns, dur_ns, correlation, external_id, iteration FROM kernels") == [
        (1712195495997120123, 1001, 2**64 - 1, 2**64 - 2, 0)]
    assert rows(store, "SELECT pid, tid FROM ops") == [("Spans", "Traces")]
    assert rows(store, "SELECT rank, world_size FROM traces") == [(3, 8)]


def test_iterations_fall_back_to_repeated_annotation_then_whole_trace(db_path):
    def event(name, cat, ts, dur):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}

    store = Store(db_path)
    steps = [event("attention::sdpa", "user_annotation", t, 10) for t in (0, 20, 40)]
    store.ingest(json.dumps({"traceEvents": steps + [event("aten::add", "cpu_op", 21, 2)]}).encode(), "a.json")
    store.ingest(json.dumps({"traceEvents": [event("aten::add", "cpu_op", 5, 2)]}).encode(), "b.json")
    assert rows(store, """SELECT t.name, i.iteration, i.name, i.start_ns, i.end_ns FROM iterations i
        JOIN traces t USING (run_id) ORDER BY t.name, i.iteration""") == [
        ("a.json", 0, "attention::sdpa", 0, 10_000), ("a.json", 1, "attention::sdpa", 20_000, 30_000),
        ("a.json", 2, "attention::sdpa", 40_000, 50_000), ("b.json", 0, "(whole trace)", 5_000, 7_001)]
    assert rows(store, "SELECT iteration FROM ops WHERE name = 'aten::add' ORDER BY ts_ns") == [(0,), (1,)]


def test_same_bytes_same_id_and_second_ingest_is_a_no_op(naive):
    store, first = naive
    again = store.ingest(FIXTURES / "tiny_naive.json", name="renamed.json")
    assert again.run_id == first.run_id and again.duplicate
    assert rows(store, "SELECT count(*) FROM kernels") == [(4,)]
    assert rows(store, "SELECT name FROM traces") == [("tiny_naive.json",)]


def test_gzip_bytes_and_file_objects_give_the_same_id(naive, tmp_path):
    store, first = naive
    raw = (FIXTURES / "tiny_naive.json").read_bytes()
    gz = tmp_path / "tiny.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(raw))
    assert store.ingest(gz).run_id == first.run_id
    assert store.ingest(raw, "bytes.json").run_id == first.run_id
    with open(gz, "rb") as f:
        assert store.ingest(f).run_id == first.run_id


def test_python_functions_are_opt_in(db_path):
    ev = {"ph": "X", "cat": "python_function", "name": "model.py(12): forward", "pid": 1, "tid": 1, "ts": 1, "dur": 5}
    data = json.dumps({"traceEvents": [ev]}).encode()
    store = Store(db_path)
    store.ingest(data, "without.json")
    assert rows(store, "SELECT count(*) FROM ops") == [(0,)]
    other = json.dumps({"traceEvents": [ev], "traceName": "x"}).encode()
    store.ingest(other, "with.json", keep_python=True)
    assert rows(store, "SELECT cat, name FROM ops") == [("python_function", "model.py(12): forward")]


def test_threads_ingest_and_query_at_once_without_losing_rows(db_path):
    store = Store(db_path)
    base = json.loads((FIXTURES / "tiny_naive.json").read_text())
    failures: list[BaseException] = []

    def ingest(i: int) -> None:
        try:
            for j in range(3):
                variant = dict(base, traceName=f"copy-{i}-{j}")
                store.ingest(json.dumps(variant).encode(), f"copy-{i}-{j}.json")
                store.query("SELECT count(*) FROM kernels")
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            failures.append(e)

    threads = [threading.Thread(target=ingest, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert rows(store, "SELECT count(*), count(DISTINCT run_id) FROM kernels") == [(48, 12)]
    assert rows(store, "SELECT count(*) FROM traces") == [(12,)]


def test_a_read_only_handle_reads_while_this_process_writes(naive):
    """The app's threads hold a writing database while the command line, in the same process,
    reads: DuckDB refuses a second database on the file with other settings, so the read uses
    the one open."""
    store, result = naive
    reader = Store(store.path, read_only=True)
    with store.connect():
        assert reader.query("SELECT run_id FROM traces")["run_id"].tolist() == [result.run_id]
    with pytest.raises(errors.StoreError, match="read-only"):
        reader.ingest(FIXTURES / "tiny_inplace.json")
    assert rows(store, "SELECT count(*) FROM traces") == [(1,)]


def test_a_writer_waits_for_a_read_only_database_of_this_process(naive):
    store, _ = naive
    reader = Store(store.path, read_only=True)
    held, release, wrote = threading.Event(), threading.Event(), []

    def read() -> None:
        with reader.connect():
            held.set()
            release.wait(10)

    thread = threading.Thread(target=read)
    thread.start()
    held.wait(10)
    writer = threading.Thread(target=lambda: wrote.append(store.ingest(FIXTURES / "tiny_inplace.json")))
    writer.start()
    writer.join(0.3)
    assert writer.is_alive() and wrote == []  # waiting for the read to end
    release.set()
    thread.join()
    writer.join(10)
    assert len(wrote) == 1 and rows(store, "SELECT count(*) FROM traces") == [(2,)]


def test_a_writer_gives_up_on_a_read_only_database_held_too_long(naive):
    store, _ = naive
    impatient = Store(store.path, lock_timeout_s=0.2)
    with Store(store.path, read_only=True).connect():
        with pytest.raises(errors.StoreLockedError, match="open read-only in this process"):
            impatient.ingest(FIXTURES / "tiny_inplace.json")
    assert rows(store, "SELECT count(*) FROM traces") == [(1,)]


def test_newer_schema_is_refused_with_a_clear_error(db_path):
    Store(db_path).schema_version()
    con = duckdb.connect(str(db_path))
    con.execute("UPDATE store_meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(errors.StoreError, match="schema version 99"):
        Store(db_path).schema_version()


def test_an_older_store_is_migrated_in_order(db_path, monkeypatch):
    import profiler.storage.migrations as migrations_module

    Store(db_path).ingest(FIXTURES / "tiny_inplace.json")
    monkeypatch.setattr(migrations_module, "SCHEMA_VERSION", SCHEMA_VERSION + 2)
    monkeypatch.setattr(migrations_module, "MIGRATIONS", {
        SCHEMA_VERSION + 1: "ALTER TABLE traces ADD COLUMN note VARCHAR",
        SCHEMA_VERSION + 2: "UPDATE traces SET note = 'migrated'",
    })
    store = Store(db_path)
    assert store.schema_version() == SCHEMA_VERSION + 2
    assert rows(store, "SELECT note, variant FROM traces") == [("migrated", "naive_inplace")]


def test_a_version_1_store_gains_the_record_shapes_columns(db_path):
    import duckdb

    Store(db_path).ingest(FIXTURES / "tiny_inplace.json")
    con = duckdb.connect(str(db_path))   # make it a version-1 store, as written before the cost model
    for column in ("input_dims", "input_types", "concrete_inputs"):
        con.execute(f"ALTER TABLE ops DROP COLUMN {column}")
    con.execute("UPDATE store_meta SET value = '1' WHERE key = 'schema_version'")
    con.close()
    store = Store(db_path)
    assert store.schema_version() == SCHEMA_VERSION
    assert rows(store, "SELECT count(*), count(input_dims) FROM ops")[0][1] == 0   # old rows: NULL
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0,
          "args": {"External id": 7, "Input Dims": [[4, 3], [3, 5]], "Input type": ["float", "float"],
                   "Concrete Inputs": ["", ""]}}
    store.ingest(json.dumps({"traceEvents": [op]}).encode(), name="shapes.json")
    (kept,) = rows(store, "SELECT input_dims, input_types, concrete_inputs FROM ops WHERE name = 'aten::mm'")
    assert [json.loads(text) for text in kept] == [[[4, 3], [3, 5]], ["float", "float"], ["", ""]]


def test_a_version_1_store_gets_the_collective_columns(db_path):
    """Schema version 2 adds the collective sizes to ops; a version-1 store keeps its rows."""
    store = Store(db_path)
    store.ingest(FIXTURES / "tiny_naive.json", source="captured")
    added = ("collective", "in_msg_nelems", "out_msg_nelems", "msg_dtype", "group_size")
    before = rows(store, "SELECT * EXCLUDE (" + ", ".join(added) + ") FROM ops ORDER BY op_id")
    con = duckdb.connect(str(db_path))
    for column in added:
        con.execute(f"ALTER TABLE ops DROP COLUMN {column}")
    con.execute("UPDATE store_meta SET value = '1' WHERE key = 'schema_version'")
    con.close()
    store = Store(db_path)
    assert store.schema_version() == SCHEMA_VERSION
    assert rows(store, "SELECT * EXCLUDE (" + ", ".join(added) + ") FROM ops ORDER BY op_id") == before
    assert rows(store, "SELECT count(*) FROM ops WHERE collective IS NOT NULL") == [(0,)]
    store.ingest(FIXTURES / "tiny_inplace.json")  # and new rows land in the migrated table
    assert rows(store, "SELECT count(DISTINCT run_id) FROM ops") == [(2,)]


def test_duckdb_gets_its_threads_and_128_mb_for_each(tmp_path, monkeypatch):
    monkeypatch.delenv(connection.MEMORY_ENV, raising=False)
    for threads, limit in ((1, 256), (2, 256), (3, 384), (16, 2048)):
        with Store(tmp_path / f"t{threads}.duckdb", threads=threads).connect() as con:
            got = con.execute("SELECT current_setting('threads'), current_setting('memory_limit')").fetchone()
        assert got[0] == threads
        assert _mib(got[1]) == pytest.approx(limit * 1e6 / 2**20, rel=0.03), (threads, got)
    monkeypatch.setenv(connection.MEMORY_ENV, "1GB")
    with Store(tmp_path / "env.duckdb", threads=16).connect() as con:
        assert _mib(con.execute("SELECT current_setting('memory_limit')").fetchone()[0]) == pytest.approx(1e9 / 2**20, rel=0.03)


def _mib(text: str) -> float:
    """DuckDB's memory setting as it prints it ('244.1 MiB', '1.9 GiB'), in MiB."""
    number, unit = text.split()
    return float(number) * {"MiB": 1, "GiB": 1024, "KiB": 1 / 1024}[unit]



def test_a_writing_handle_loads_the_metrics_macros_again_only_when_they_are_missing(tmp_path, monkeypatch):
    """A store keeps the metrics layer's macros: a writing handle opening a store whose macros were
    loaded under the current definition does not load them again; one whose macros are gone loads
    them, and the kept metrics read the same."""
    from profiler.storage import metrics

    class Counted:  # a part of the metrics layer whose reads are counted
        def __init__(self, path):
            self.path = path

        def read_text(self, **kwargs):
            reads.append(self.path.name)
            return self.path.read_text(**kwargs)

    path = tmp_path / "s.duckdb"
    run = Store(path).ingest(FIXTURES / "tiny_naive.json").run_id
    before = Store(path, read_only=True).query("SELECT * FROM run_metrics([$r])", {"r": run})
    reads: list[str] = []
    monkeypatch.setattr(metrics, "PARTS", tuple(Counted(p) for p in metrics.PARTS))
    with Store(path).connect():
        pass
    digests = len(reads)                             # the definitions' digests only: nothing loaded
    assert digests % len(metrics.PARTS) == 0
    with duckdb.connect(str(path)) as con:
        con.execute("DROP MACRO TABLE run_metrics")
    reads.clear()
    with Store(path).connect():
        pass
    assert len(reads) == digests + len(metrics.PARTS)  # the digests, then every part loaded
    after = Store(path, read_only=True).query("SELECT * FROM run_metrics([$r])", {"r": run})
    assert before.equals(after)


def test_a_writing_handle_runs_the_schema_again_only_for_a_store_made_from_another(tmp_path, monkeypatch):
    """A store at this schema version whose tables were made from this schema.sql (its digest in
    store_meta) is not written when a writing handle opens it; one made from another schema.sql
    (a table added without a version, here one dropped and the digest changed) gets it run again."""
    from profiler.storage import migrations

    path = tmp_path / "s.duckdb"
    run = Store(path).ingest(FIXTURES / "tiny_naive.json").run_id
    ran: list[str] = []

    class Counted:  # schema.sql, its runs counted
        def __init__(self, real):
            self.real = real

        def read_text(self, **kwargs):
            ran.append("schema")
            return self.real.read_text(**kwargs)

        def read_bytes(self):
            return self.real.read_bytes()

    monkeypatch.setattr(migrations, "SCHEMA_SQL", Counted(migrations.SCHEMA_SQL))
    with duckdb.connect(str(path), read_only=True) as con:
        kept = dict(con.execute("SELECT key, value FROM store_meta").fetchall())
    assert kept[migrations.SCHEMA_KEY] == migrations.schema_digest()
    with Store(path).connect():
        pass
    assert ran == []
    with duckdb.connect(str(path)) as con:
        con.execute("DROP VIEW launch_targets")
        con.execute("UPDATE store_meta SET value = 'another' WHERE key = ?", [migrations.SCHEMA_KEY])
    with Store(path).connect():
        pass
    assert ran == ["schema"]
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT value FROM store_meta WHERE key = ?",
                           [migrations.SCHEMA_KEY]).fetchone()[0] == migrations.schema_digest()
        assert con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'launch_targets'").fetchone()[0] == 1
    assert Store(path, read_only=True).query("SELECT run_id FROM traces")["run_id"].tolist() == [run]
