"""A batch of ranks in one task (profiler/storage/rank_task.parse_ranks): its scratch store in
memory, each table read out once for the batch and cut into the ranks' files. Checked file by file
against the same files parsed one to a task (`parse_rank`, the path a large file takes), on real
DLRM ranks and a trace without distributedInfo; a bad file in a batch is named in its place; the
rows each rank brings back for the job's summary are checked against its written files, filtered
here with their own reading of the filters' definitions."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from profiler import errors
from profiler.storage import job_layout
from profiler.storage.jobs import jobs, rank_task
from tests.conftest import SHARED_TRACES

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []
RESNET = SHARED_TRACES / "kineto__tb_plugin__resnet50_num_workers_0__worker0.pt.trace.json.gz"
needs_traces = pytest.mark.skipif(len(DLRM) != 7 or not RESNET.is_file(), reason="needs the shared traces")
COMMUNICATION = re.compile(r"(?i)nccl|rccl|multimem|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all")


def _sorted(table: pa.Table) -> pa.Table:
    keys = [(n, "ascending") for n in table.column_names
            if not pa.types.is_nested(table.schema.field(n).type)]
    return table.sort_by(keys)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """4 DLRM ranks, a trace that says no rank (named so that its name gives one) and a bad file,
    in one batch; and the same good files one to a task."""
    tmp = tmp_path_factory.mktemp("batch")
    named = tmp / "rank9_resnet.pt.trace.json.gz"
    shutil.copyfile(RESNET, named)
    bad = tmp / "rank5.pt.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "x", "ts": "never"')
    files = [str(p) for p in DLRM[:2]] + [str(bad), str(named)] + [str(p) for p in DLRM[2:4]]
    batched = rank_task.parse_ranks(files, str(tmp / "batched"), "k", sharing=2)
    alone = [rank_task.parse_rank(f, str(tmp / "alone"), "k") for f in files]
    return files, batched, alone


@pytest.mark.third_party
@needs_traces
def test_a_batch_writes_the_files_a_rank_alone_writes(batch):
    _, batched, alone = batch
    assert [type(o) for o in batched] == [type(o) for o in alone]
    assert isinstance(batched[2], errors.TraceError) and "rank5.pt.trace.json" in str(batched[2])
    assert str(batched[2]) == str(alone[2])
    good = [(b, a) for b, a in zip(batched, alone) if isinstance(b, jobs.RankResult)]
    assert [b.rank for b, _ in good] == [0, 2, 9, 3, 4] and good[2][0].rank_from == "file name"
    for b, a in good:
        assert (b.run_id, b.trace_id, b.world_size, b.events, b.kernels, b.notes, b.backend) == \
               (a.run_id, a.trace_id, a.world_size, a.events, a.kernels, a.notes, a.backend)
        assert sorted(b.files) == sorted(a.files) == sorted(job_layout.WRITTEN)
        for table in job_layout.WRITTEN:
            assert Path(b.files[table]).name == Path(a.files[table]).name == f"{b.run_id}.parquet"
            got, want = pq.read_table(b.files[table]), pq.read_table(a.files[table])
            assert got.schema == want.schema, table
            if table == "traces":  # the time of the ingest differs
                assert got["rank"].to_pylist() == [b.rank]
                got, want = got.drop_columns(["added_at"]), want.drop_columns(["added_at"])
            assert got.num_rows == want.num_rows and _sorted(got).equals(_sorted(want)), table
    assert sum(pq.read_metadata(b.files["kernels"]).num_rows for b, _ in good) > 9000  # not empty files


@pytest.mark.third_party
@needs_traces
def test_each_rank_brings_back_the_rows_the_summary_reads(batch):
    _, batched, alone = batch
    good = [o for o in batched if isinstance(o, jobs.RankResult)]
    assert all(r.summary_rows is good[0].summary_rows for r in good)  # one dict for the batch, sent once
    assert set(good[0].summary_rows["traces"]["run_id"].to_pylist()) == {r.run_id for r in good}
    for r in good + [o for o in alone if isinstance(o, jobs.RankResult)]:
        assert sorted(r.summary_rows) == sorted(jobs.SUMMARY_INPUTS)
        rows = {t: v.filter(pc.equal(v["run_id"], r.run_id)) for t, v in r.summary_rows.items()}
        kernels = pq.read_table(r.files["kernels"])
        comm = np.array([bool(COMMUNICATION.search(n)) for n in kernels["name"].to_pylist()], dtype=bool)
        want = kernels.filter(pc.and_(pa.array(comm), pc.is_valid(kernels["iteration"])))
        assert _sorted(rows["kernels"]).equals(_sorted(want))
        correlations = set(want["correlation"].to_pylist())
        launches = pq.read_table(r.files["launches"])
        assert sorted(rows["launches"]["correlation"].to_pylist()) == \
               sorted(c for c in launches["correlation"].to_pylist() if c in correlations)
        ops = pq.read_table(r.files["ops"])
        assert _sorted(rows["ops"]).equals(_sorted(ops.filter(pc.is_valid(ops["in_msg_nelems"]))))
        for table in ("traces", job_layout.METRICS_TABLE):
            assert _sorted(rows[table]).equals(_sorted(pq.read_table(r.files[table]))), table
        if r.rank in (0, 2, 3, 4):  # the DLRM ranks run collectives
            assert rows["kernels"].num_rows > 0 and rows["ops"].num_rows > 0
