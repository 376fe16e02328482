"""`python -m profiler counters` on 99,999 matching rows (issue 39: it took 80.8 s).

Generates a trace of 99,999 launches of one kernel (grid and block as flash's) and an export of
99,999 rows of the metric columns ncu writes for it (header and units from the shipped
data/samples/default/sdpa_flash_*.ncu.csv), ingests the trace, then times in process: reading the
export (`read_report`), and `main(["counters", ...])` (read, plan on a read-only handle, insert).

Usage: python -m bench.counters_attach [--rows 99999] [--write-results]
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.results import commit_of, run_report, write_section
from profiler.cli.main import main
from profiler.parse.ncu import ALIASES, DEVICE_COLUMNS, METRICS, REQUIRED, read_report
from profiler.storage.store import Store

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = ROOT / "data/samples/default/sdpa_flash_b8_h16_s1024_d64_bf16_causal_warm.ncu.csv"
KERNEL = "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>(Flash_fwd_params)"


def make_trace(path: Path, n: int) -> None:
    events = [{"ph": "X", "cat": "kernel", "name": KERNEL, "ts": 1000 + 10 * i, "dur": 5, "pid": 0, "tid": 7,
               "args": {"device": 0, "stream": 7, "correlation": i + 1, "grid": [8, 8, 16], "block": [128, 1, 1],
                        "registers per thread": 255, "shared memory": 49152}} for i in range(n)]
    props = [{"id": 0, "name": "NVIDIA H200", "numSms": 132}]
    with gzip.open(path, "wt", compresslevel=1) as f:
        json.dump({"deviceProperties": props, "traceEvents": events}, f)


def make_export(path: Path, n: int) -> None:
    header, units, row = list(csv.reader(SAMPLE.open(newline="")))[:3]
    wanted = set(REQUIRED) | set(METRICS.values()) | {a for names in ALIASES.values() for a in names}
    wanted |= {c for names in DEVICE_COLUMNS.values() for c in names}
    keep = [i for i, h in enumerate(header) if h in wanted]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows([[header[i] for i in keep], [units[i] for i in keep]])
    at = header.index("ID")
    for k in range(n):
        cells = [row[i] for i in keep]
        cells[keep.index(at)] = str(k)
        writer.writerow(cells)
    path.write_text(out.getvalue())


def main_(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=99_999)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    code = commit_of()
    with tempfile.TemporaryDirectory() as tmp:
        trace, export, db = Path(tmp) / "many.json.gz", Path(tmp) / "many.ncu.csv", Path(tmp) / "s.duckdb"
        make_trace(trace, args.rows)
        make_export(export, args.rows)
        run = Store(db).ingest(trace, name="many").run_id
        started = time.perf_counter()
        report = read_report(export.read_bytes(), export.name)
        read_s = time.perf_counter() - started
        started = time.perf_counter()
        status = main(["counters", run, str(export), "--db", str(db)])
        attach_s = time.perf_counter() - started
        matched = Store(db, read_only=True).query("SELECT count(*) AS n FROM kernel_counters")["n"][0]
        size_mb = export.stat().st_size / 1e6
    lines = [f"- export: {args.rows:,} rows, {size_mb:.1f} MB; `read_report`: {read_s:.2f} s "
             f"({len(report.kernels):,} kernels)",
             f"- `counters RUN export.csv` in process (read, plan read-only, insert): {attach_s:.2f} s, "
             f"exit {status}, {matched:,} rows stored (was 80.8 s in issue 39: executemany row by row)"]
    print("\n".join(lines))
    if args.write_results:
        after = os.getloadavg()
        text = run_report("Counters attach, 99,999 rows", "counters_attach.py", code,
                          f"{os.cpu_count()} cores, load {load[0]:.2f}", f"load {after[0]:.2f}", lines)
        write_section("Counters attach, 99,999 rows", text)
    return 0 if status == 0 and matched == args.rows else 1


if __name__ == "__main__":
    sys.exit(main_(sys.argv[1:]))
