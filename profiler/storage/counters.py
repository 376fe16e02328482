"""Attach Nsight Compute counters to a stored run: match each profiled launch to one of the run's.

A report's rows (profiler/parse/ncu.py) come from another process than the trace (ncu replays
each kernel many times; the trace times it once), so a row is matched to a launch by what both
record: the kernel's **name**, its **grid** and its **block**, then **launch order**. Names are
compared by the kernel's own function name (`base_name`): ncu's demangler and the trace's write
template arguments differently (`void at::<unnamed>::softmax_warp_forward<…, 10, 0, 0>(T2 *, …)`
against `void (anonymous namespace)::softmax_warp_forward<…, 10, false, false>(c10::BFloat16*, …)`)
but agree on the function. Within one (function, grid, block) the k-th row of the report takes the
k-th launch of the run in time order. A row with no launch left is listed as unmatched, never
guessed, and a report that matches nothing is refused.

The report's GPU (`NcuReport.device`: name, SM count) is checked against the run's (its GPU name
and deviceProperties): a report of another GPU is refused naming both; where either side does not
say, the attach goes on and `device_check` says it could not tell. Everything that can refuse
(the run, the GPU, the match) is decided on a read-only handle before the store is opened for
writing, so a refused attach leaves the store file's bytes as they were. Attaching replaces the
run's earlier counters in one transaction; the rows go in as one Arrow table (100,000 launches
in a second or two, not row by row).
"""
from __future__ import annotations

import datetime as dt
import functools
import json
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

from profiler.errors import NothingMatchedError, OtherDeviceError, StoreError, StoreOutdatedError, UnknownRunError
from profiler.parse import demangled
from profiler.parse.ncu import MAX_BYTES, METRICS, CountersFileError, CsvDevice, NcuKernel, NcuReport, read_report

COLUMNS = ("run_id", "name", "ts_ns", "report_id", *METRICS, "ncu_limiter", "occupancy_note")
LAUNCHES_SQL = ("SELECT name, ts_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z FROM kernels "
                "WHERE run_id = $run_id ORDER BY ts_ns, name")
RUN_DEVICE_SQL = "SELECT gpu_name, device_properties FROM traces WHERE run_id = ?"


@dataclass(frozen=True)
class Attached:
    run_id: str
    source: str
    report_kernels: int
    matched: int
    unmatched: tuple[dict, ...]   # {"id", "kernel", "grid", "block"} per row that matched no launch
    device_check: str = ""        # "same GPU: …" or "cannot tell: …" (a report of another GPU is refused)


@dataclass(frozen=True)
class _Plan:
    rows: list
    lost: tuple[dict, ...]
    device_check: str
    matched: int


def read_file(path: Path) -> NcuReport:
    """The parsed export at ``path`` (`CountersFileError` naming the file when it cannot be read)."""
    try:
        if not path.is_file():
            raise CountersFileError(path.name, "is not a file" if path.exists() else "does not exist")
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise CountersFileError(path.name, f"cannot be read ({e.strerror or e})") from None
    return read_report(data, path.name)


@functools.lru_cache(maxsize=4096)
def base_name(kernel: str) -> str:
    """The kernel's own function name, the same from either demangler (`parse.demangled`):
    `void at::native::elementwise_kernel<128, 4, …>(int, …)` -> `elementwise_kernel`."""
    return demangled.parse(kernel).function or kernel.strip()


def match(rows: tuple[NcuKernel, ...], launches: list[tuple]) -> tuple[list[tuple[NcuKernel, tuple]], list[NcuKernel]]:
    """Pair report rows with launches (name, ts_ns, gx, gy, gz, bx, by, bz; in time order):
    (pairs, unmatched rows). See the module docstring."""
    queues: dict[tuple, deque] = defaultdict(deque)
    for launch in launches:
        queues[(base_name(launch[0]), tuple(launch[2:5]), tuple(launch[5:8]))].append(launch)
    pairs, unmatched = [], []
    for row in sorted(rows, key=lambda r: r.report_id):
        queue = queues.get((base_name(row.name), row.grid, row.block))
        if queue:
            pairs.append((row, queue.popleft()))
        else:
            unmatched.append(row)
    return pairs, unmatched


def attach(store, run_id: str, report: NcuReport, ncu_seconds: float | None = None) -> Attached:
    """Match `report` to the run's launches and store the counters (replacing earlier ones)."""
    plan = _plan(read_handle(store), run_id, report)
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("DELETE FROM kernel_counters WHERE run_id = ?", [run_id])
            con.execute("DELETE FROM counter_reports WHERE run_id = ?", [run_id])
            _insert(con, plan.rows)
            con.execute("INSERT INTO counter_reports (run_id, source, attached_at, ncu_seconds, report_kernels, "
                        "matched, unmatched, device_check) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [run_id, report.source, dt.datetime.now(dt.UTC).replace(tzinfo=None), ncu_seconds,
                         len(report.kernels), plan.matched, json.dumps(plan.lost), plan.device_check])
            con.execute("COMMIT")
        except BaseException as e:
            con.execute("ROLLBACK")
            if isinstance(e, Exception) and not isinstance(e, StoreError):
                raise StoreError(f"{store.label} could not keep the counters of {report.source}: "
                                 f"{str(e).splitlines()[0][:200]}") from e
            raise
    return Attached(run_id, report.source, len(report.kernels), plan.matched, plan.lost, plan.device_check)


def read_handle(store):
    """A read-only handle on the same file, so that deciding whether to attach writes nothing
    (a writing handle's first open does upkeep); the store itself where that cannot be had."""
    if getattr(store, "read_only", True) or getattr(store, "in_memory", False) or not store.path.is_file():
        return store
    reader = type(store)(store.path, read_only=True)
    try:
        reader.schema_version()
    except StoreOutdatedError:
        return store
    return reader


def _plan(store, run_id: str, report: NcuReport) -> _Plan:
    """Everything the attach decides, read-only: raises when the run, the GPU or the match refuse."""
    with store.connect() as con:
        if not con.execute("SELECT 1 FROM traces WHERE run_id = ?", [run_id]).fetchone():
            raise UnknownRunError(f"run {run_id} is not in {store.label} (counters attach to runs "
                                  "ingested into the store, not to a job's ranks)")
        gpu_name, props = con.execute(RUN_DEVICE_SQL, [run_id]).fetchone()
        launches = con.execute(LAUNCHES_SQL, {"run_id": run_id}).fetchall()
    checked = device_check(report, run_id, gpu_name, props)
    pairs, unmatched = match(report.kernels, launches)
    if not pairs:
        raise NothingMatchedError(
            f"none of the {len(report.kernels)} kernels in {report.source} matches a launch of run "
            f"{run_id} (same function, grid and block): is it a profile of another program or "
            "shape? Nothing was changed.")
    lost = tuple({"id": r.report_id, "kernel": r.name, "grid": list(r.grid), "block": list(r.block)}
                 for r in unmatched)
    return _Plan([_row(run_id, kernel, launch) for kernel, launch in pairs], lost, checked, len(pairs))


def _same_name(a: str, b: str) -> bool:
    def norm(n: str) -> str:
        n = " ".join(n.lower().split())
        return n.removeprefix("nvidia ")
    return norm(a) == norm(b)


def run_gpu(gpu_name, props) -> CsvDevice:
    """The run's GPU as its trace says (name, SM count of the first device with one)."""
    try:
        devices = json.loads(props) if isinstance(props, str) else (props or [])
    except ValueError:
        devices = []
    first = next((d for d in devices if isinstance(d, dict)), {}) if isinstance(devices, list) else {}
    sms = first.get("numSms")
    return CsvDevice(gpu_name or first.get("name") or None, sms if isinstance(sms, int) else None, None)


def device_check(report: NcuReport, run_id: str, gpu_name, props) -> str:
    """'same GPU: …' or 'cannot tell: …'; raises `OtherDeviceError` naming both GPUs when the
    report's GPU is not the run's (by name, else by SM count)."""
    theirs, ours = report.device, run_gpu(gpu_name, props)
    if theirs is None:
        return "cannot tell: the export names no GPU (no device__attribute_* columns)"
    names = theirs.name is not None and ours.name is not None
    sms = theirs.sms is not None and ours.sms is not None
    if not names and not sms:
        return f"cannot tell: the run records no GPU name or SM count (the export's: {theirs.text()})"
    if (names and not _same_name(theirs.name, ours.name)) or (sms and theirs.sms != ours.sms):
        raise OtherDeviceError(
            f"{report.source} was measured on {theirs.text()}; run {run_id} ran on {ours.text()}: counters "
            "of another GPU are not attached. Nothing was changed.")
    return f"same GPU: {theirs.text()}" + ("" if names else " (by SM count; the run names no GPU)")


def _insert(con, rows: list) -> None:
    """The matched rows into kernel_counters as one Arrow table (executemany takes a minute for 100,000)."""
    import pyarrow as pa

    if not rows:
        return
    table = pa.table({c: [r[i] for r in rows] for i, c in enumerate(COLUMNS)})
    con.register("_new_counters", table)
    try:
        con.execute(f"INSERT INTO kernel_counters ({', '.join(COLUMNS)}) SELECT {', '.join(COLUMNS)} FROM _new_counters")
    finally:
        con.unregister("_new_counters")


def _row(run_id: str, kernel: NcuKernel, launch: tuple) -> list:
    limiter = kernel.limiter()
    return [run_id, launch[0], launch[1], kernel.report_id,
            *(kernel.values.get(key) for key in METRICS), limiter[0] if limiter else None,
            kernel.occupancy_note or None]
