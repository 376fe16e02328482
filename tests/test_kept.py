"""Results kept between page runs (profiler/analysis/reads/kept.py): the same rows as the queries give
uncached, in the same order; a rename shows in kept findings; a deleted run is never served from
what was kept; a session answers a repeated read once and forgets it after a write."""
from __future__ import annotations

import pandas as pd
import pytest

from profiler.analysis.findings import findings, rank_why
from profiler.analysis.reads import kept, kernel_queries, query_files, run_queries
from profiler.errors import UnknownRunError
from profiler.storage import catalog


def uncached(monkeypatch, call):
    """``call()`` with nothing kept (every read goes to the store)."""
    with monkeypatch.context() as m:
        m.setattr(kept, "per_run", lambda store, name, run_ids, compute, order="given", bulk=None:
                  compute(list(dict.fromkeys(map(str, run_ids)))))
        m.setattr(kept, "value", lambda store, key, run_ids, compute: compute())
        return call()


@pytest.mark.parametrize("name", ["run_metrics", "run_iterations", "kernel_table", "memop_table",
                                  "iteration_cpu_gpu", "launch_api_table", "kernel_configs"])
def test_kept_rows_equal_the_query(fixture_store, monkeypatch, name):
    store, ids = fixture_store
    runs = list(ids.values())
    for selection in (runs, runs[::-1], runs[1:], [runs[2], runs[0]]):
        want = uncached(monkeypatch, lambda: query_files.run(store, name, run_ids=selection))
        for _ in range(2):  # computed, then kept
            got = query_files.run(store, name, run_ids=selection)
            pd.testing.assert_frame_equal(got, want.reset_index(drop=True), check_dtype=False)


def test_a_query_over_more_runs_than_sql_bulk_is_read_straight_and_keeps_nothing(fixture_store, monkeypatch):
    store, ids = fixture_store
    runs = list(ids.values())
    assert len(runs) == 3
    monkeypatch.setattr(kept, "SQL_BULK", 2)
    for name in ("run_metrics", "kernel_table"):
        want = uncached(monkeypatch, lambda: query_files.run(store, name, run_ids=runs))
        held = len(store.cache)
        pd.testing.assert_frame_equal(query_files.run(store, name, run_ids=runs), want)
        assert len(store.cache) == held, "three runs, over SQL_BULK: nothing kept"
        query_files.run(store, name, run_ids=runs[:2])
        assert len(store.cache) == held + 2, "two runs: one kept piece each"


def test_gpu_work_of_more_runs_than_sql_bulk_is_kept_for_the_reads_that_follow(fixture_store, monkeypatch):
    """A ranking or a sweep reads every run's GPU work in one query before its sets and points
    each read theirs: kept per run however many (up to `kept.BULK`), so those reads query nothing."""
    store, ids = fixture_store
    runs = list(ids.values())
    monkeypatch.setattr(kept, "SQL_BULK", 2)
    want = uncached(monkeypatch, lambda: rank_why.work(store, runs))
    held = len(store.cache)
    pd.testing.assert_frame_equal(rank_why.work(store, runs), want)
    assert len(store.cache) == held + 3
    monkeypatch.setattr(query_files, "read", lambda *a, **k: pytest.fail("a kept run read again"))
    pd.testing.assert_frame_equal(rank_why.work(store, runs[1:]), want[want["run_id"].isin(runs[1:])].reset_index(drop=True))


def test_kernel_details_kept_per_run(fixture_store, monkeypatch):
    store, ids = fixture_store
    runs = list(ids.values())
    want = uncached(monkeypatch, lambda: kernel_queries.kernel_details(store, runs))
    kernel_queries.kernel_details(store, runs[:1])          # one run kept, the others computed together
    pd.testing.assert_frame_equal(kernel_queries.kernel_details(store, runs), want, check_dtype=False)


def test_a_caller_changing_a_kept_frame_changes_nothing_kept(fixture_store):
    store, ids = fixture_store
    runs = list(ids.values())
    first = run_queries.run_metrics(store, runs)
    first["gpu_busy_us_per_iter"] = -1.0
    assert (run_queries.run_metrics(store, runs)["gpu_busy_us_per_iter"] >= 0).all()


def test_a_rename_shows_in_kept_findings(fixture_store):
    store, ids = fixture_store
    upload = ids["tiny_old_format.json"]            # an upload's label is its name
    before = " ".join(f.text for f in findings.run_findings(store, upload))
    catalog.rename_run(store, upload, "renamed-run")
    after = " ".join(f.text for f in findings.run_findings(store, upload))
    assert "renamed-run" in after and "renamed-run" not in before


def test_a_rename_shows_in_the_kept_labels_and_the_other_runs_keep_theirs(fixture_store):
    store, ids = fixture_store
    upload, other = ids["tiny_old_format.json"], ids["tiny_naive.json"]
    before = run_queries.run_labels(store, [other, upload]).set_index("run_id")["label"]
    catalog.rename_run(store, upload, "renamed-run")
    after = run_queries.run_labels(store, [upload, other])
    assert after["run_id"].tolist() == [upload, other]      # in the order asked, kept or not
    labels = after.set_index("run_id")["label"]
    assert labels[upload].startswith("renamed-run") and not before[upload].startswith("renamed-run")
    assert labels[other] == before[other]
    with store.session() as fresh:   # what was kept reads as a read of the stored rows does
        fresh.cache.clear()
        read = run_queries.run_labels(fresh, [upload, other])
    pd.testing.assert_frame_equal(read, after, check_dtype=False)
    # the upload's GPU is not recorded: kept apart and joined, it is missing the way a read says it
    assert after["gpu_name"].isna().tolist() == [True, False]
    assert after["gpu_name"].astype(str).tolist() == read["gpu_name"].astype(str).tolist()


def test_a_deleted_run_is_not_served_from_what_was_kept(fixture_store):
    store, ids = fixture_store
    run = ids["tiny_naive.json"]
    assert len(kernel_queries.kernel_table(store, [run])) and findings.run_findings(store, run)
    catalog.delete_runs(store, [run])
    assert kernel_queries.kernel_table(store, [run]).empty
    with pytest.raises(UnknownRunError):
        findings.run_findings(store, run)


def test_a_session_reads_once_and_forgets_after_a_write(fixture_store):
    store, _ = fixture_store
    with store.session() as db:
        first = db.query("SELECT count(*) AS n FROM traces")
        assert db.query("SELECT count(*) AS n FROM traces") is not first   # a copy
        db.query("CREATE TEMP TABLE t AS SELECT 1 AS x")
        db.query("INSERT INTO t VALUES (2)")
        assert db.query("SELECT count(*) AS n FROM t")["n"][0] == 2
        db.query("INSERT INTO t VALUES (3)")
        assert db.query("SELECT count(*) AS n FROM t")["n"][0] == 3


def test_kept_frames_stay_under_the_byte_limit(fixture_store, monkeypatch):
    store, ids = fixture_store
    runs = list(ids.values())
    monkeypatch.setattr(store.cache, "max_bytes", 1)   # every new frame pushes the older ones out
    first = kernel_queries.kernel_table(store, runs)
    again = kernel_queries.kernel_table(store, runs)
    pd.testing.assert_frame_equal(first, again)
    assert len(store.cache) == 1


def test_a_run_ingested_again_with_other_rows_gets_fresh_op_costs(tmp_path):
    """Op costs are kept in the store's one per-run cache, keyed by run id and stamp: a run
    deleted and ingested again (here with its kernels then made twice as long, as other ingest
    options could) is modelled afresh, never served the first ingest's costs."""
    from profiler.analysis.reads import op_costs
    from profiler.storage.store import Store
    from tests.conftest import SAMPLES

    trace = SAMPLES / "default" / "sdpa_flash_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
    store = Store(tmp_path / "again.duckdb")
    run = store.ingest(trace).run_id
    first = op_costs.ops_columns(store, [run])
    assert op_costs.ops_columns(store, [run])["kernel_ns"].tolist() == first["kernel_ns"].tolist()  # kept
    catalog.delete_runs(store, [run])
    assert store.ingest(trace).run_id == run
    with store.connect() as con:
        con.execute("UPDATE kernels SET dur_ns = 2 * dur_ns WHERE run_id = ?", [run])
    again = op_costs.ops_columns(store, [run])
    assert again["kernel_ns"].tolist() == [2 * ns for ns in first["kernel_ns"].tolist()]
    uncached = op_costs.ops_columns(Store(store.path), [run])   # a new handle keeps nothing yet
    assert again["kernel_ns"].tolist() == uncached["kernel_ns"].tolist()


def test_a_kept_chart_is_built_once_and_again_after_a_rename(fixture_store):
    """The charts of a page's later visits come from what was kept (profiler/present/ui/tables.py: kept_chart
    draws `kept.value` of the chart); a renamed run's chart (its legend names the run) is built
    afresh, and a chart's frames count towards the byte limit."""
    import altair as alt

    store, ids = fixture_store
    runs = list(ids.values())
    built = []

    def build():
        labels = run_queries.run_labels(store, runs)
        built.append(1)
        return alt.Chart(labels).mark_point().encode(x="run_id", color="label")

    first = kept.value(store, ("chart", "test"), runs, build)
    assert kept.value(store, ("chart", "test"), runs, build) is first and len(built) == 1
    upload = ids["tiny_old_format.json"]          # an upload's label is its name
    catalog.rename_run(store, upload, "renamed run")
    again = kept.value(store, ("chart", "test"), runs, build)
    assert len(built) == 2 and any(label.startswith("renamed run") for label in again.data["label"])
    assert kept.frame_size(again) == len(again.data) * len(again.data.columns) * kept.CELL_BYTES > 0


def _joined_pieces(frame: pd.DataFrame, ordered: list[str]) -> pd.DataFrame:
    """What per_run returned before it kept the rows computed together whole: each run's rows by a
    groupby, reset, joined in order (an empty frame when no run has rows)."""
    parts = dict(tuple(frame.groupby("run_id", sort=False))) if len(frame) else {}
    pieces = [parts.get(r, frame.iloc[0:0]).reset_index(drop=True) for r in ordered]
    return pd.concat([p for p in pieces if len(p)] or [pieces[0]], ignore_index=True)


@pytest.mark.parametrize("order", ["given", "run_id"])
def test_rows_computed_together_come_back_as_the_kept_pieces_do(fixture_store, order):
    store, ids = fixture_store
    runs = sorted(ids.values())

    def compute(asked):  # rows of the runs interleaved, none for runs[1]; a number, a float and a text column
        rows = [(asked[i % len(asked)], i, i / 3, f"k{i}") for i in range(11) if asked[i % len(asked)] != runs[1]]
        return pd.DataFrame(rows, columns=["run_id", "n", "x", "name"])

    for case, selection in enumerate((runs, runs[::-1], [runs[2], runs[0]], [runs[1]])):
        name = ("interleaved", order, case)
        want = _joined_pieces(compute(selection), sorted(selection) if order == "run_id" else selection)
        cold = kept.per_run(store, name, selection, compute, order)   # computed together, not joined again
        warm = kept.per_run(store, name, selection, compute, order)   # the kept pieces, joined
        pd.testing.assert_frame_equal(cold, want)
        pd.testing.assert_frame_equal(warm, want)
    assert len(kept.per_run(store, ("interleaved", order, 3), [runs[1]], compute, order)) == 0
