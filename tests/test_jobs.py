"""Jobs of many ranks: ingest on a real local Ray cluster (2 CPUs, started once for this module) and
in process, the Parquet job directory read back through the store, and the job figures checked
against an independent computation from the plain JSON."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
import types
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED_TRACES, real_traces, trace_params
from profiler import errors
from profiler.analysis.findings import job_queries
from profiler.storage import job_layout
from profiler.storage.jobs import engines, job_ingest, jobs
from profiler.storage.store import Store

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []
needs_dlrm = pytest.mark.third_party  # the 7 DLRM rank traces (skipped with the others when missing)
TABLE_ORDER = {
    "traces": "name", "iterations": "iteration", "kernels": "ts_ns, dur_ns, name, correlation",
    "memops": "ts_ns, dur_ns, name, correlation", "launches": "ts_ns, dur_ns, name, correlation, tid",
    "ops": "op_id", "lane_names": "kind, pid, tid", "memory_events": "event_idx",
}


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    engines.start_ray(workers=2)
    yield ray
    ray.shutdown()


@pytest.fixture
def job_store(tmp_path, monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    return Store(tmp_path / "store.duckdb")


def _rows(con, table: str, run_id: str, drop=()) -> list[tuple]:
    """Every row of `table` for one run, in order, read on `con` (a store's cursor, its jobs' ranks
    attached: `Store.connect(jobs=True)`)."""
    rows = con.execute(f"SELECT * EXCLUDE (run_id{''.join(', ' + c for c in drop)}) FROM {table} "
                       f"WHERE run_id = ? ORDER BY {TABLE_ORDER[table]}", [run_id]).fetchall()
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in row) for row in rows]


def _job_files(store: Store) -> list[str]:
    root = Path(job_layout.job_root(store))
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


# --- the 7-rank DLRM job -------------------------------------------------------------------------

@pytest.mark.third_party
@needs_dlrm
def test_dlrm_job_on_ray_reports_the_missing_rank(ray_cluster, job_store):
    result = job_ingest.ingest_job(job_store, [str(p) for p in DLRM], "dlrm", engine="ray", workers=2)
    assert (result.world_size, result.backend) == (8, "nccl")
    assert result.ranks_present == [0, 2, 3, 4, 5, 6, 7] and result.ranks_missing == [[1, 1]]
    assert all(r.rank_from == "distributedInfo" for r in result.ranks)
    report = job_queries.job_report(job_store, "dlrm")
    assert report["ranks_present"] == [0, 2, 3, 4, 5, 6, 7] and report["ranks_missing"] == [[1, 1]]
    ranks = job_store.query("SELECT rank, world_size FROM traces ORDER BY rank")
    assert ranks["rank"].tolist() == [0, 2, 3, 4, 5, 6, 7] and set(ranks["world_size"]) == {8}


def _independent_rank_figures(path: Path) -> dict:
    """Step, GPU busy and collective time of the trace's one ProfilerStep, from plain JSON: GPU
    work counts in the step when the runtime call that launched it (same correlation) starts in
    the step (with no such call it was launched before profiling began: carried, not the step's),
    clipped to the step, merged."""
    events = json.loads(path.read_bytes())["traceEvents"]
    ns = lambda v: round(v * 1000)  # noqa: E731 - DLRM times are integer microseconds
    step = next(e for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")
                and e.get("cat") != "gpu_user_annotation")
    lo, hi = ns(step["ts"]), ns(step["ts"]) + ns(step["dur"])
    launch_ts = {e["args"]["correlation"]: ns(e["ts"]) for e in events
                 if e.get("cat") == "cuda_runtime" and e.get("ph") == "X" and "correlation" in e.get("args", {})}
    busy, coll = [], []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        start = launch_ts.get(e.get("args", {}).get("correlation"))
        if start is None or not lo <= start < hi:
            continue
        s, t = max(ns(e["ts"]), lo), min(ns(e["ts"]) + ns(e["dur"]), hi)
        if t > s:
            busy.append((s, t))
            if e["cat"] == "kernel" and e["name"].lower().startswith("nccl"):
                coll.append((s, t))
    return {"step_us": (hi - lo) / 1e3, "gpu_busy_us": _union(busy) / 1e3, "collective_us": _union(coll) / 1e3}


def _active_us(path: Path) -> float:
    """Union of every GPU interval (whoever launched it) clipped to the trace's one ProfilerStep."""
    events = json.loads(path.read_bytes())["traceEvents"]
    ns = lambda v: round(v * 1000)  # noqa: E731 - DLRM times are integer microseconds
    step = next(e for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")
                and e.get("cat") != "gpu_user_annotation")
    lo, hi = ns(step["ts"]), ns(step["ts"]) + ns(step["dur"])
    spans = [(max(ns(e["ts"]), lo), min(ns(e["ts"]) + ns(e["dur"]), hi)) for e in events
             if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    return _union([(a, b) for a, b in spans if b > a]) / 1e3


def _union(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for s, e in sorted(intervals):
        if reach is None or s > reach:
            total += e - s
            reach = e
        elif e > reach:
            total += e - reach
            reach = e
    return total


@pytest.mark.third_party
@needs_dlrm
def test_dlrm_per_rank_figures_match_plain_json(job_store):
    job_ingest.ingest_job(job_store, [str(p) for p in DLRM], "dlrm", engine="in-process")
    report = job_queries.job_report(job_store, "dlrm")
    by_rank = {row["rank"]: row for row in report["iterations"]}
    expected = {json.loads(p.read_bytes())["distributedInfo"]["rank"]: _independent_rank_figures(p) for p in DLRM}
    path_of = {json.loads(p.read_bytes())["distributedInfo"]["rank"]: p for p in DLRM}
    assert sorted(by_rank) == sorted(expected)
    for rank, want in expected.items():
        got = by_rank[rank]
        assert got["iteration"] == 0
        for key, value in want.items():
            assert got[key] == pytest.approx(value, abs=1e-6), (rank, key)
        # idle: the step with no GPU work at all (own, carried in or unattributed), from plain JSON
        assert got["gpu_idle_us"] == pytest.approx(want["step_us"] - _active_us(path_of[rank]), abs=1e-6)
    longest = max(expected, key=lambda r: expected[r]["step_us"])
    assert {row["longest_step_rank"] for row in report["iterations"]} == {longest}
    steps = sorted(v["step_us"] for v in expected.values())
    assert report["longest_step"][0]["behind_us"] == pytest.approx(steps[-1] - steps[len(steps) // 2])
    # the first collective of each name: start skew across ranks, from the plain JSON too
    first_starts: dict[str, list[int]] = {}
    for p in DLRM:
        seen = set()
        for e in sorted((e for e in json.loads(p.read_bytes())["traceEvents"]
                         if e.get("cat") == "kernel" and e["name"].startswith("nccl")), key=lambda e: e["ts"]):
            if e["name"] not in seen:
                seen.add(e["name"])
                first_starts.setdefault(e["name"], []).append(round(e["ts"] * 1000))
    for c in (c for c in report["collectives"] if c["seq"] == 1):
        starts = first_starts[c["name"]]
        assert c["ranks"] == 7 and c["skew_us"] == pytest.approx((max(starts) - min(starts)) / 1e3)
        assert c["wait_us"] == pytest.approx(sum(max(starts) - s for s in starts) / len(starts) / 1e3)


NS_RESOLUTION = SHARED_TRACES / "hta__ns_resolution__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"


@pytest.mark.third_party
@pytest.mark.third_party
def test_job_figures_are_the_metrics_layers_even_when_computed_under_another_definition(job_store):
    """A rank's figures are the metrics layer's rows of that trace (one definition): the rows its
    worker kept, and the same macro's rows computed on read for a rank kept under another
    definition of metrics.sql. ns_resolution has GPU work carried into its iterations."""
    from profiler.analysis.reads import run_queries

    single = job_store.ingest(NS_RESOLUTION)
    want = run_queries.iteration_metrics(job_store, [single.run_id]).drop(columns="run_id")
    assert (want["carried_ns"] > 0).any() and len(want) > 1
    job_ingest.ingest_job(job_store, [NS_RESOLUTION], "ns", engine="in-process")

    def check():
        got = job_queries.rank_iterations(job_store, "ns")
        assert got["iteration"].tolist() == want["iteration"].tolist()
        for col, source in (("step_us", "wall_ns"), ("gpu_work_us", "gpu_work_ns"), ("gpu_busy_us", "gpu_busy_ns"), ("carried_us", "carried_ns"),
                            ("gpu_idle_us", "gpu_idle_ns"), ("collective_us", "comm_ns")):
            assert got[col].tolist() == pytest.approx((want[source] / 1e3).tolist(), abs=1e-9), col
        rid = got["run_id"][0]
        kept = run_queries.iteration_metrics(job_store, [rid]).drop(columns="run_id")
        assert kept.equals(want)

    check()
    manifest = Path(job_layout.job_root(job_store)) / "manifests" / "ns.json"
    doc = json.loads(manifest.read_text())
    doc["ranks"][0]["metrics_digest"] = "an older one"
    manifest.write_text(json.dumps(doc))
    with job_store.connect(jobs=True) as con:
        assert "iteration_metrics(" in con.execute(
            "SELECT sql FROM duckdb_views() WHERE view_name = 'stored_iteration_metrics'").fetchall()[0][0]
    check()


# element sizes of the types the DLRM traces' nccl:* annotations name, and the NCCL bus factors
DLRM_TYPE_BYTES = {"float": 4, "int": 4, "long int": 8}
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}


def _independent_collective_sizes(paths: list[Path]) -> dict[tuple[str, int], dict]:
    """Per collective (kernel name, n-th of that name in the step) from plain JSON: the message of
    the nccl:* annotation around its launch call (first input's elements x type size), the kernel
    durations of every rank and the collective's kind."""
    out: dict[tuple[str, int], dict] = {}
    for path in paths:
        events = [e for e in json.loads(path.read_bytes())["traceEvents"] if e.get("ph") == "X"]
        step = next(e for e in events if e["name"].startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation")
        launches = {e["args"]["correlation"]: e for e in events
                    if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
        notes = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("nccl:")
                 and e["args"].get("Input Dims", [[]])[0]]
        seen: dict[str, int] = {}
        for k in sorted((e for e in events if e.get("cat") == "kernel" and "nccl" in e["name"].lower()),
                        key=lambda e: e["ts"]):
            launch = launches[k["args"]["correlation"]]
            if not step["ts"] <= launch["ts"] < step["ts"] + step["dur"]:
                continue
            seen[k["name"]] = seq = seen.get(k["name"], 0) + 1
            around = [a for a in notes if a["tid"] == launch["tid"] and a["ts"] <= launch["ts"] < a["ts"] + a["dur"]]
            note = max(around, key=lambda a: a["ts"])
            elements = 1
            for d in note["args"]["Input Dims"][0]:
                elements *= d
            one = out.setdefault((k["name"], seq), {"durs": [], "bytes": set(), "kind": set()})
            one["durs"].append(k["dur"] * 1000)
            one["bytes"].add(elements * DLRM_TYPE_BYTES[note["args"]["Input type"][0]])
            one["kind"].add(note["name"][len("nccl:"):])
    return out


@pytest.mark.third_party
@needs_dlrm
def test_dlrm_collective_bandwidth_matches_plain_json(job_store):
    job_ingest.ingest_job(job_store, [str(p) for p in DLRM], "dlrm", engine="in-process")
    report = job_queries.job_report(job_store, "dlrm")
    want = _independent_collective_sizes(DLRM)
    got = {(c["name"], c["seq"]): c for c in report["collectives"]}
    assert sorted(got) == sorted(want) and {k for w in want.values() for k in w["kind"]} == set(BUS_FACTOR)
    for key, w in want.items():
        c = got[key]
        assert len(w["bytes"]) == 1 and len(w["kind"]) == 1, key  # every rank moves the same buffer
        (size,), (kind,) = w["bytes"], w["kind"]
        algbw = size / (sum(w["durs"]) / len(w["durs"]))  # bytes per ns = GB/s
        assert (c["collective"], c["group_size"], c["bytes"]) == (kind, 8, size), key
        assert c["algbw_gbps"] == pytest.approx(algbw, rel=1e-12), key
        assert c["busbw_gbps"] == pytest.approx(algbw * BUS_FACTOR[kind](8), rel=1e-12), key
    assert json.loads(json.dumps(report))["collectives"][0]["bytes"] == report["collectives"][0]["bytes"]


# --- the two engines and a single upload give the same tables -----------------------------------

def _text(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _rank_named(src: Path, tmp: Path) -> Path:
    """The trace under a name that gives a rank (for traces without distributedInfo)."""
    if jobs.rank_from_name(src.name) is not None or b'"distributedInfo"' in _text(src):
        return src
    named = tmp / f"rank0_{src.name}"
    shutil.copyfile(src, named)
    return named


@pytest.mark.third_party
@pytest.mark.parametrize("path", trace_params(real_traces()))
def test_ray_in_process_and_single_upload_give_identical_tables(ray_cluster, job_store, tmp_path, path):
    src = _rank_named(Path(path), tmp_path)
    single = job_store.ingest(src)
    on_ray = job_ingest.ingest_job(job_store, [src], "on-ray", engine="ray", workers=2).ranks[0]
    here = job_ingest.ingest_job(job_store, [src], "here", engine="in-process").ranks[0]
    assert on_ray.trace_id == here.trace_id == single.run_id
    with job_store.connect(jobs=True) as con:
        for table in job_layout.TABLES:
            drop = ("added_at", "rank") if table == "traces" else ()
            want = _rows(con, table, single.run_id, drop)
            assert want or table in ("memops", "memory_events"), table  # few traces copy memory or record allocations
            assert _rows(con, table, on_ray.run_id, drop) == want, table
            assert _rows(con, table, here.run_id, drop) == want, table


# --- all or nothing -------------------------------------------------------------------------------

@pytest.mark.third_party
@needs_dlrm
@pytest.mark.parametrize("engine", ["in-process", pytest.param("processes", marks=pytest.mark.slow),
                                    pytest.param("ray", marks=pytest.mark.slow)])
def test_bad_file_names_itself_and_nothing_lands_unless_skip_bad(job_store, tmp_path, engine, request):
    if engine == "ray":
        request.getfixturevalue("ray_cluster")
    bad = tmp_path / "rank1.pt.trace.json"
    bad.write_bytes(DLRM[0].read_bytes()[:50_000])  # cut mid-way: truncated JSON
    files = [str(p) for p in DLRM[:2]] + [str(bad)]
    # a worker returns the file's error to the job: it must arrive whole, whatever the engine
    with pytest.raises(jobs.JobError, match=r"rank1\.pt\.trace\.json: is truncated"):
        job_ingest.ingest_job(job_store, files, "cut", engine=engine, workers=2)
    assert _job_files(job_store) == [] and job_queries.job_list(job_store).empty
    result = job_ingest.ingest_job(job_store, files, "cut", engine=engine, workers=2, skip_bad=True)
    assert result.ranks_present == [0, 2] and len(result.skipped) == 1 and "rank1.pt.trace.json" in result.skipped[0]
    assert job_store.query("SELECT count(*) AS n FROM traces")["n"][0] == 2
    with pytest.raises(jobs.JobError, match="already in the store"):
        job_ingest.ingest_job(job_store, files, "cut", engine=engine, workers=2, skip_bad=True)


def test_every_trace_error_survives_the_trip_from_a_worker():
    import pickle

    kinds = [errors.TraceError, *errors.TraceError.__subclasses__()]
    for kind in kinds:
        back = pickle.loads(pickle.dumps(kind("rank7.json", "is truncated")))
        assert (type(back), back.name, back.problem, str(back)) == (kind, "rank7.json", "is truncated",
                                                                    "rank7.json: is truncated")


@pytest.mark.third_party
@needs_dlrm
@pytest.mark.slow
def test_process_pool_engine_gives_the_same_tables(job_store):
    pooled = job_ingest.ingest_job(job_store, [str(p) for p in DLRM[:2]], "pool", engine="processes", workers=2)
    here = job_ingest.ingest_job(job_store, [str(p) for p in DLRM[:2]], "here", engine="in-process")
    assert pooled.ranks_present == here.ranks_present == [0, 2] and pooled.workers == 2
    with job_store.connect(jobs=True) as con:
        for a, b in zip(pooled.ranks, here.ranks):
            for table in job_layout.TABLES:
                drop = ("added_at",) if table == "traces" else ()
                assert _rows(con, table, a.run_id, drop) == _rows(con, table, b.run_id, drop), table


@pytest.mark.third_party
@needs_dlrm
def test_a_broken_manifest_leaves_its_job_out(job_store):
    job_ingest.ingest_job(job_store, [str(DLRM[0])], "gone", engine="in-process")
    manifest = Path(job_layout.job_root(job_store)) / "manifests" / "gone.json"
    manifest.write_text("{not json")
    assert job_store.query("SELECT count(*) AS n FROM kernels")["n"][0] == 0  # the damaged job is left out
    listed = job_queries.job_list(job_store)
    assert listed[["job", "damaged"]].values.tolist() == [["gone", "manifests/gone.json: is not JSON"]]


@pytest.mark.third_party
@needs_dlrm
def test_two_files_claiming_one_rank_are_refused(job_store, tmp_path):
    twin = tmp_path / "copy_of_rank0.json"
    twin.write_bytes(DLRM[0].read_bytes().replace(b'"world_size": 8', b'"world_size": 8 '))
    with pytest.raises(jobs.JobError, match="both say they are rank 0"):
        job_ingest.ingest_job(job_store, [str(DLRM[0]), str(twin)], "twins", engine="in-process")
    assert _job_files(job_store) == []


def _in_thread(job) -> tuple[threading.Thread, dict]:
    """`job()` started on a thread; the dict gets the exception it raised as "error"."""
    outcome: dict = {}

    def run():
        try:
            job()
        except Exception as e:  # noqa: BLE001 - the test inspects it
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def _pids(wanted) -> list[int]:
    """The processes for which `wanted(parent pid, command line bytes)` holds."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = (entry / "cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            if wanted(ppid, cmd):
                pids.append(int(entry.name))
    return pids


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _ours(pid: int) -> bool:
    """`pid` descends from this process (the local Ray cluster's raylet is our child, its workers
    our grandchildren): another test process's cluster, running beside this one, is left alone."""
    for _ in range(16):
        pid = _parent(pid)
        if pid == os.getpid():
            return True
        if pid <= 1:
            return False
    return False


def _ray_task_pids(names: tuple[str, ...] = ("parse_rank", "parse_chunk", "assemble_rank")) -> list[int]:
    """This process's Ray worker processes running one of these tasks (a large file is parsed in
    chunks, then assembled)."""
    return [pid for pid in _pids(lambda _ppid, cmd: any(cmd.startswith(f"ray::{name}".encode()) for name in names))
            if _ours(pid)]


@pytest.mark.third_party
@needs_dlrm
def test_killing_a_worker_mid_job_leaves_the_store_as_it_was(ray_cluster, job_store, tmp_path):
    job_ingest.ingest_job(job_store, [str(p) for p in DLRM[:2]], "before", engine="in-process")
    job_store.ingest(DLRM[2])
    files_before, traces_before = _job_files(job_store), job_store.query("SELECT * FROM traces ORDER BY run_id")
    from bench.make_large_trace import make_large_trace

    big = tmp_path / "rank3.trace.json"
    make_large_trace(big, 100_000_000, SHARED_TRACES)  # two chunks of ~3 s on 2 cores, then ~3 s to assemble
    thread, outcome = _in_thread(lambda: job_ingest.ingest_job(job_store, [str(DLRM[3]), str(big)], "killed", engine="ray", workers=2))
    deadline, killed, seen = time.monotonic() + 120, False, {}
    while time.monotonic() < deadline and thread.is_alive() and not killed:
        for pid in _ray_task_pids():  # a task of the large rank: still running 1 s after it was seen
            if time.monotonic() - seen.setdefault(pid, time.monotonic()) > 1:
                os.kill(pid, signal.SIGKILL)
                killed = True
        time.sleep(0.05)
    thread.join(timeout=120)
    assert killed, "no worker was seen running the job"
    assert isinstance(outcome.get("error"), jobs.JobError) and "stopped" in str(outcome["error"])
    assert _job_files(job_store) == files_before
    assert job_store.query("SELECT * FROM traces ORDER BY run_id").equals(traces_before)
    assert job_queries.job_list(job_store)["job"].tolist() == ["before"]


def _pool_worker_pids() -> list[int]:
    """This process's process-pool workers (spawned children running multiprocessing's spawn_main)."""
    return _pids(lambda ppid, cmd: ppid == os.getpid() and b"spawn_main" in cmd)


def _stack(thread: threading.Thread) -> str:
    frame = sys._current_frames().get(thread.ident)
    return "".join(traceback.format_stack(frame)) if frame else "(ended)"


@pytest.mark.third_party
@needs_dlrm
@pytest.mark.slow
def test_a_killed_pool_worker_is_named_with_its_cause_and_stores_nothing(job_store, tmp_path):
    job_store.ingest(DLRM[2])
    traces_before = job_store.query("SELECT * FROM traces ORDER BY run_id")
    from bench.make_large_trace import make_large_trace

    big = tmp_path / "rank3.trace.json"
    make_large_trace(big, 40_000_000, SHARED_TRACES)
    others = set(_pool_worker_pids())  # spawned before the job: not its workers
    thread, outcome = _in_thread(lambda: job_ingest.ingest_job(job_store, [str(DLRM[0]), str(big)], "killed", engine="processes", workers=2))
    deadline, killed = time.monotonic() + 120, None
    while time.monotonic() < deadline and thread.is_alive() and not killed:
        for pid in [p for p in _pool_worker_pids() if p not in others][:1]:
            os.kill(pid, signal.SIGKILL)
            killed = pid
        time.sleep(0.02)
    thread.join(timeout=120)
    assert killed, "no pool worker was seen running the job"
    assert not thread.is_alive(), f"the job did not end within 120 s of its worker's death; it waits in:\n{_stack(thread)}"
    assert isinstance(outcome.get("error"), jobs.JobError), f"the job ended with {outcome.get('error')!r} after worker {killed} was killed"
    assert "killed by signal 9: out of memory?" in str(outcome["error"])
    assert _job_files(job_store) == []
    assert job_store.query("SELECT * FROM traces ORDER BY run_id").equals(traces_before)


def test_a_worker_death_the_pool_misses_still_ends_the_job(monkeypatch):
    """The pool's own notice of a dead worker is not all a job relies on: a worker found dead for
    DEAD_WORKER_GRACE_S while its task never ends stops the job, naming how the worker ended."""
    import multiprocessing
    from concurrent.futures import Future

    monkeypatch.setattr(engines, "DEAD_WORKER_GRACE_S", 0.3)
    monkeypatch.setattr(engines, "WAIT_STEP_S", 0.05)
    dead = multiprocessing.get_context("spawn").Process(target=os._exit, args=(3,))
    dead.start()
    dead.join()
    pool = engines.Processes(workers=1)
    try:
        real = pool._pool
        pool._pool = types.SimpleNamespace(_processes={dead.pid: dead}, shutdown=real.shutdown)  # a death it missed
        pool._futures[Future()] = ("file", 0, None)  # a task that never ends
        started = time.monotonic()
        with pytest.raises(jobs.JobError, match=r"stopped while parsing.*\(exit status 3\)"):
            pool.next_done(str)
        assert time.monotonic() - started < 5
    finally:
        pool.close()

# --- the job directory: anywhere, and shared --------------------------------------------------------

@pytest.mark.third_party
@needs_dlrm
def test_two_stores_share_one_job_directory(tmp_path, monkeypatch):
    shared = tmp_path / "team-jobs"
    monkeypatch.setenv(job_layout.JOB_ROOT_ENV, str(shared))
    first, second = Store(tmp_path / "a" / "store.duckdb"), Store(tmp_path / "b" / "store.duckdb")
    second.ingest(DLRM[0])  # a run of its own, beside the shared job
    job_ingest.ingest_job(first, [str(p) for p in DLRM[:3]], "shared", engine="in-process")
    assert job_queries.job_list(second)["job"].tolist() == ["shared"]
    n = second.query("SELECT count(*) AS n FROM kernels k JOIN job_ranks r ON r.run_id = k.run_id")["n"][0]
    assert n == sum(json.loads(p.read_bytes())["traceEvents"].__len__() and
                    sum(1 for e in json.loads(p.read_bytes())["traceEvents"] if e.get("cat") == "kernel")
                    for p in DLRM[:3])
    assert second.query("SELECT count(*) AS n FROM traces")["n"][0] == 4  # 3 ranks + its own run
    job_ingest.delete_job(second, "shared")
    assert job_queries.job_list(first).empty and not any(shared.rglob("*.parquet"))


@pytest.mark.third_party
@needs_dlrm
def test_job_directory_as_a_filesystem_uri(tmp_path, monkeypatch):
    monkeypatch.setenv(job_layout.JOB_ROOT_ENV, (tmp_path / "by-uri").as_uri())  # file:///..., read through pyarrow
    store = Store(tmp_path / "store.duckdb")
    job_ingest.ingest_job(store, [str(p) for p in DLRM[:2]], "uri", engine="in-process")
    assert sorted(p.name for p in (tmp_path / "by-uri" / "kernels" / "job=uri").iterdir()) == ["rank=0", "rank=2"]
    assert job_queries.job_report(store, "uri")["ranks_present"] == [0, 2]


@pytest.mark.third_party
@needs_dlrm
def test_zip_and_directory_inputs(job_store, tmp_path):
    import zipfile

    archive = tmp_path / "job.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in DLRM[:2]:
            zf.write(p, f"nested/dir/{p.name}")
        zf.writestr("README.txt", "not a trace")
    assert job_ingest.ingest_job(job_store, [archive], "zipped", engine="in-process").ranks_present == [0, 2]
    folder = tmp_path / "ranks"
    folder.mkdir()
    for p in DLRM[2:4]:
        shutil.copyfile(p, folder / p.name)
    assert job_ingest.ingest_job(job_store, [folder], "folder", engine="in-process").ranks_present == [3, 4]


def test_rank_from_file_names():
    assert jobs.rank_from_name("rank-3.Apr_03.pt.trace.json") == 3
    assert jobs.rank_from_name("worker12_step_12.123.pt.trace.json") == 12
    assert jobs.rank_from_name("trace_rank_07.json.gz") == 7
    assert jobs.rank_from_name("Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz") is None


# --- command line ------------------------------------------------------------------------------------

@pytest.mark.third_party
@needs_dlrm
@pytest.mark.slow
def test_cli_job_json(tmp_path):
    db = tmp_path / "cli.duckdb"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(job_layout.JOB_ROOT_ENV, None)
    run = lambda *a: subprocess.run([sys.executable, "-m", "profiler", *a, "--db", str(db)],  # noqa: E731
                                    capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    ingest = run("ingest", str(DLRM[0].parent), "--job", "dlrm", "--in-process")
    assert ingest.returncode == 1 and "both say they are rank 0" in ingest.stderr  # other rank-0 traces there
    assert "Traceback" not in ingest.stderr
    ingest = run("ingest", *map(str, DLRM), "--job", "dlrm", "--in-process")
    assert ingest.returncode == 0, ingest.stderr
    assert "7 of 8 ranks stored" in ingest.stdout and "missing: 1" in ingest.stdout
    out = run("job", "dlrm", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["world_size"] == 8 and report["ranks_present"] == [0, 2, 3, 4, 5, 6, 7]
    assert report["ranks_missing"] == [[1, 1]]
    assert {tuple(sorted(r)) for r in report["iterations"]} == {tuple(sorted(
        ["rank", "iteration", "step_us", "gpu_work_us", "gpu_busy_us", "carried_us", "gpu_idle_us",
         "collective_us", "longest_step_rank"]))}
    assert all({"name", "bytes", "algbw_gbps", "busbw_gbps"} <= set(c) for c in report["collectives"])
    assert all(c["busbw_gbps"] > 0 for c in report["collectives"])
    text = run("job", "dlrm")
    assert text.returncode == 0 and "busbw GB/s" in text.stdout and "all_reduce" in text.stdout
    compared = run("job", "dlrm", "--compare", "dlrm", "--json")
    assert compared.returncode == 0 and json.loads(compared.stdout)[0]["measure"] == "ranks"
    deleted = run("job", "dlrm", "--delete")
    assert deleted.returncode == 0 and "deleted" in deleted.stdout
    missing = run("job", "nope")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr and "'nope' is not in the store" in missing.stderr


@pytest.mark.third_party
@pytest.mark.third_party
def test_record_param_comms_args_are_stored(job_store):
    """The sizes PyTorch writes on record_param_comms land on the op, as in the plain JSON."""
    run = job_store.ingest(NS_RESOLUTION)
    from decimal import Decimal

    events = json.loads(gzip.decompress(NS_RESOLUTION.read_bytes()), parse_float=Decimal)["traceEvents"]
    want = sorted((int(e["ts"] * 1000), e["args"]["Collective name"], e["args"]["In msg nelems"],
                   e["args"]["Out msg nelems"], e["args"]["dtype"], e["args"]["Group size"])
                  for e in events if e.get("ph") == "X" and e.get("name") == "record_param_comms")
    got = job_store.query("SELECT ts_ns, collective, in_msg_nelems, out_msg_nelems, msg_dtype, group_size FROM ops "
                          "WHERE run_id = ? AND name = 'record_param_comms' ORDER BY ALL", [run.run_id])
    assert len(want) == 45 and [tuple(r) for r in got.itertuples(index=False)] == want
