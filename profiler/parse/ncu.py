"""Nsight Compute's raw CSV export (`ncu --csv --page raw`) to one typed row per kernel launch.

The export has a header row of metric names, a row of their units, then one row per profiled
kernel launch, in the order ncu profiled them (its "ID" column). Numbers may carry thousands
separators ("97,856") and a metric ncu could not collect reads "n/a" or "no data" (stored as
missing). Only the fixed set in `METRICS` is read; other columns are ignored, and a metric the
export lacks is missing for every kernel. `Kernel Name`, `Grid Size` and `Block Size` are required:
they are what a launch is matched by (profiler/storage/counters.py).

Every problem raises `CountersFileError` naming the file and what is wrong; nothing is half-read.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from profiler.errors import CountersFileError

MAX_BYTES = 64 * 2**20      # a raw export of thousands of kernels with every section is a few MB
MAX_KERNELS = 100_000
MAX_CELL_CHARS = 64 * 1024  # a kernel name longer than this is not a name
REQUIRED = ("ID", "Kernel Name", "Grid Size", "Block Size")
# column in the store -> the ncu metric it holds (`ncu --metrics` asks for exactly these)
METRICS = {
    "occupancy_achieved_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "occupancy_theoretical_ncu_pct": "sm__maximum_warps_per_active_cycle_pct",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_throughput_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_throughput_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "tensor_pipe_active_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "ncu_duration_ns": "gpu__time_duration.sum",
    "registers_per_thread": "launch__registers_per_thread",
    # local-memory traffic: register spills (and arrays the compiler put in local memory)
    "local_load_instructions": "smsp__inst_executed_op_local_ld.sum",
    "local_store_instructions": "smsp__inst_executed_op_local_st.sum",
    "limit_registers": "launch__occupancy_limit_registers",
    "limit_shared_mem": "launch__occupancy_limit_shared_mem",
    "limit_warps": "launch__occupancy_limit_warps",
    "limit_blocks": "launch__occupancy_limit_blocks",
    "limit_barriers": "launch__occupancy_limit_barriers",
}
PERCENTS = tuple(k for k in METRICS if k.endswith("_pct"))
# the occupancy limits ncu reports (blocks per SM each resource allows), in the words we use
LIMIT_WORDS = {"limit_registers": "registers", "limit_shared_mem": "shared memory",
               "limit_warps": "warps", "limit_blocks": "blocks", "limit_barriers": "barriers"}
MISSING = {"", "n/a", "no data", "N/A"}
_DIMS = re.compile(r"^\(\s*(\d{1,10})\s*,\s*(\d{1,10})\s*,\s*(\d{1,10})\s*\)$")
_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d{1,3})?$")


@dataclass(frozen=True)
class NcuKernel:
    """One profiled launch: its place in the report, what it is, and the counters read."""

    report_id: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    values: dict  # METRICS key -> float | None

    def limiter(self) -> tuple[str, int] | None:
        """(the resources that allow the fewest blocks per SM, joined with "and", that count)."""
        limits = {word: self.values.get(key) for key, word in LIMIT_WORDS.items()}
        limits = {word: int(v) for word, v in limits.items() if v is not None}
        if not limits:
            return None
        least = min(limits.values())
        return " and ".join(w for w, v in limits.items() if v == least), least


@dataclass(frozen=True)
class NcuReport:
    source: str                    # the file's name (never a server path)
    kernels: tuple[NcuKernel, ...]
    metrics_found: tuple[str, ...]  # METRICS keys the export holds


def read_report(data: bytes, name: str) -> NcuReport:
    """Parse an export's bytes; `name` is how errors and the store refer to the file."""
    if len(data) > MAX_BYTES:
        raise CountersFileError(name, f"is {len(data) / 2**20:.0f} MB; an Nsight Compute export of "
                                      f"at most {MAX_BYTES // 2**20} MB is read")
    text = _text(data, name)
    rows = _rows(text, name)
    if len(rows) < 2:
        raise CountersFileError(name, "is not an Nsight Compute raw CSV export (expected a header row "
                                      "and a units row; export with `ncu --import REPORT --csv --page raw`)")
    header = [h.strip() for h in rows[0]]
    absent = [c for c in REQUIRED if c not in header]
    if absent:
        raise CountersFileError(name, f"has no {', '.join(repr(c) for c in absent)} column; export "
                                      "it with `ncu --import REPORT --csv --page raw`")
    column = {h: i for i, h in enumerate(header)}
    found = tuple(k for k, metric in METRICS.items() if metric in column)
    body = rows[2:] if _is_units_row(rows[1], column) else rows[1:]
    if len(body) > MAX_KERNELS:
        raise CountersFileError(name, f"has {len(body):,} kernel rows; at most {MAX_KERNELS:,} are read")
    kernels = tuple(_kernel(row, column, found, name, line) for line, row in enumerate(body, start=3))
    if not kernels:
        raise CountersFileError(name, "holds no profiled kernel")
    return NcuReport(name, kernels, found)


def _text(data: bytes, name: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CountersFileError(name, "is not UTF-8 text (is it the binary .ncu-rep report? export "
                                      "it with `ncu --import REPORT --csv --page raw`)") from None
    if "\x00" in text:
        raise CountersFileError(name, "holds NUL bytes: it is not a CSV export")
    # ncu prints its own lines ("==PROF== ...", "==WARNING== ...") before the table when the CSV
    # went to the same stream as its log
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith('"ID"')), 0)
    return "".join(lines[start:])


def _rows(text: str, name: str) -> list[list[str]]:
    csv.field_size_limit(MAX_CELL_CHARS)
    try:
        return [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    except csv.Error as e:
        raise CountersFileError(name, f"is not a readable CSV ({e})") from None


def _is_units_row(row: list[str], column: dict) -> bool:
    return row[column["ID"]].strip() == "" and row[column["Kernel Name"]].strip() == ""


def _cell(row: list[str], index: int, name: str, line: int, what: str) -> str:
    if index >= len(row):
        raise CountersFileError(name, f"row {line} has {len(row)} cells; its {what} is missing")
    return row[index].strip()


def _kernel(row: list[str], column: dict, found: tuple[str, ...], name: str, line: int) -> NcuKernel:
    ident = _cell(row, column["ID"], name, line, "ID")
    if not ident.isdigit() or len(ident) > 12:
        raise CountersFileError(name, f"row {line}: ID {ident[:40]!r} is not a whole number")
    kernel = _cell(row, column["Kernel Name"], name, line, "kernel name")
    if not kernel:
        raise CountersFileError(name, f"row {line} has an empty kernel name")
    values = {key: _number(_cell(row, column[METRICS[key]], name, line, METRICS[key]), name, line, key)
              for key in found}
    for key in PERCENTS:
        value = values.get(key)
        if value is not None and not 0.0 <= value <= 100.0:
            raise CountersFileError(name, f"row {line}: {METRICS[key]} is {value}, not a share between 0 and 100")
    return NcuKernel(int(ident), kernel, _dims(row, column["Grid Size"], name, line, "grid size"),
                     _dims(row, column["Block Size"], name, line, "block size"), values)


def _dims(row: list[str], index: int, name: str, line: int, what: str) -> tuple[int, int, int]:
    text = _cell(row, index, name, line, what)
    match = _DIMS.match(text)
    if not match:
        raise CountersFileError(name, f"row {line}: {what} {text[:40]!r} is not of the form (x, y, z)")
    return tuple(int(g) for g in match.groups())  # type: ignore[return-value]


def _number(text: str, name: str, line: int, key: str) -> float | None:
    if text in MISSING:
        return None
    if len(text) > 40 or not _NUMBER.match(text):
        raise CountersFileError(name, f"row {line}: {METRICS[key]} reads {text[:40]!r}, not a number")
    return float(text.replace(",", ""))
