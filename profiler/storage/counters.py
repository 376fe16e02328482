"""Attach Nsight Compute counters to a stored run: match each profiled launch to one of the run's.

A report's rows (profiler/parse/ncu.py) come from another process than the trace (ncu replays
each kernel many times; the trace times it once), so a row is matched to a launch by what both
record: the kernel's **name**, its **grid** and its **block**, then **launch order**. Names are
compared by the kernel's own function name (`base_name`): ncu's demangler and the trace's write
template arguments differently (`void at::<unnamed>::softmax_warp_forward<…, 10, 0, 0>(T2 *, …)`
against `void (anonymous namespace)::softmax_warp_forward<…, 10, false, false>(c10::BFloat16*, …)`)
but agree on the function. Within one (function, grid, block) the k-th row of the report takes the
k-th launch of the run in time order. A row with no launch left is listed as unmatched, never
guessed, and a report that matches nothing is refused. Attaching replaces the run's earlier counters, in one transaction; a bad file raises
before anything is written.
"""
from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

from profiler.errors import NothingMatchedError, StoreError, UnknownRunError
from profiler.parse import demangled
from profiler.parse.ncu import MAX_BYTES, METRICS, CountersFileError, NcuKernel, NcuReport, read_report

COLUMNS = ("run_id", "name", "ts_ns", "report_id", *METRICS, "ncu_limiter")
LAUNCHES_SQL = ("SELECT name, ts_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z FROM kernels "
                "WHERE run_id = $run_id ORDER BY ts_ns, name")


@dataclass(frozen=True)
class Attached:
    run_id: str
    source: str
    report_kernels: int
    matched: int
    unmatched: tuple[dict, ...]   # {"id", "kernel", "grid", "block"} per row that matched no launch


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
    with store.connect() as con:
        if not con.execute("SELECT 1 FROM traces WHERE run_id = ?", [run_id]).fetchone():
            raise UnknownRunError(f"run {run_id} is not in {store.label} (counters attach to runs "
                                  "ingested into the store, not to a job's ranks)")
        launches = con.execute(LAUNCHES_SQL, {"run_id": run_id}).fetchall()
        pairs, unmatched = match(report.kernels, launches)
        if not pairs:
            raise NothingMatchedError(
                f"none of the {len(report.kernels)} kernels in {report.source} matches a launch of run "
                f"{run_id} (same function, grid and block): is it a profile of another program or "
                "shape? Nothing was changed.")
        lost = tuple({"id": r.report_id, "kernel": r.name, "grid": list(r.grid), "block": list(r.block)}
                     for r in unmatched)
        rows = [_row(run_id, kernel, launch) for kernel, launch in pairs]
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("DELETE FROM kernel_counters WHERE run_id = ?", [run_id])
            con.execute("DELETE FROM counter_reports WHERE run_id = ?", [run_id])
            if rows:
                marks = ", ".join("?" for _ in COLUMNS)
                con.executemany(f"INSERT INTO kernel_counters ({', '.join(COLUMNS)}) VALUES ({marks})", rows)
            con.execute("INSERT INTO counter_reports VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [run_id, report.source, dt.datetime.now(dt.UTC).replace(tzinfo=None), ncu_seconds,
                         len(report.kernels), len(pairs), json.dumps(lost)])
            con.execute("COMMIT")
        except BaseException as e:
            con.execute("ROLLBACK")
            if isinstance(e, Exception) and not isinstance(e, StoreError):
                raise StoreError(f"{store.label} could not keep the counters of {report.source}: "
                                 f"{str(e).splitlines()[0][:200]}") from e
            raise
    return Attached(run_id, report.source, len(report.kernels), len(pairs), lost)


def _row(run_id: str, kernel: NcuKernel, launch: tuple) -> list:
    limiter = kernel.limiter()
    return [run_id, launch[0], launch[1], kernel.report_id,
            *(kernel.values.get(key) for key in METRICS), limiter[0] if limiter else None]
