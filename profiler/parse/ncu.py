"""Nsight Compute's raw CSV export (`ncu --csv --page raw`) to one typed row per kernel launch.

The export has a header row of metric names, a row of their units, then one row per profiled
kernel launch, in the order ncu profiled them (its "ID" column). Nothing is guessed:

* a metric is found under its name in `METRICS` or, from other Nsight Compute versions, under one
  of its `ALIASES` (`dram__throughput…` for `gpu__dram_throughput…`); a metric the export lacks
  is missing for every kernel;
* the units row is required and honoured (`ncu_units.py`): a duration written in `usecond` is
  stored in ns, a size in `Kbyte` in bytes; a unit that is not one its metric is written in is refused;
* numbers may carry thousands separators ("97,856"); "n/a" or "no data" is missing; anything
  infinite, negative, a share above 100 or a fractional count of blocks is refused;
* the GPU it profiled (name, SM count, clock, from the device attributes ncu writes on every row)
  is kept so the store can refuse a report of another GPU (`NcuReport.device`);
* theoretical occupancy is ncu's own (per SM, from the limiter); where the export lacks it, it is
  derived the same way from the occupancy limits (`theoretical_pct`); a row whose achieved
  occupancy is above it says why (`NcuKernel.occupancy_note`).

`Kernel Name`, `Grid Size` and `Block Size` are required: they are what a launch is matched by
(profiler/storage/counters.py). Every problem raises `CountersFileError` naming the file and what
is wrong; nothing is half-read.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from profiler.errors import CountersFileError
from profiler.parse import ncu_cells as cells
from profiler.parse import ncu_units as units

MAX_BYTES = 64 * 2**20      # a raw export of thousands of kernels with every section is a few MB
MAX_KERNELS = 100_000
MAX_CELL_CHARS = 64 * 1024  # a kernel name longer than this is not a name
MAX_WHOLE = 2**31 - 1       # registers and occupancy limits are stored as INTEGER
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
    "dram_bytes": "dram__bytes.sum",  # bytes read and written in DRAM by the launch
}
# how `capture --counters` asks for METRICS: one ncu run per group. The first group is what Nsight
# Compute's Occupancy and SpeedOfLight sections read for these columns, counted without the rest
# (with all of METRICS in one run, a few-microsecond kernel read 1-2.5 pt less achieved occupancy)
FIRST_RUN = ("occupancy_achieved_pct", "occupancy_theoretical_ncu_pct", "sm_throughput_pct", "dram_throughput_pct")
METRIC_RUNS = [[METRICS[k] for k in FIRST_RUN], [m for k, m in METRICS.items() if k not in FIRST_RUN]]
# the same metric under the names other Nsight Compute versions give it, tried in this order after
# METRICS' name (the first one the export holds is read)
ALIASES = {
    "dram_throughput_pct": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",),
    "tensor_pipe_active_pct": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",),
    "ncu_duration_ns": ("gpu__time_duration.avg",),
    "local_load_instructions": ("smsp__sass_inst_executed_op_local_ld.sum",),
    "local_store_instructions": ("smsp__sass_inst_executed_op_local_st.sum",),
    "dram_bytes": ("dram__bytes_read.sum",),
}
PERCENTS = tuple(k for k in METRICS if k.endswith("_pct"))
KIND = {**{k: units.PERCENT for k in PERCENTS}, "ncu_duration_ns": units.TIME, "dram_bytes": units.BYTES}
WHOLE = ("registers_per_thread", "limit_registers", "limit_shared_mem", "limit_warps", "limit_blocks",
         "limit_barriers")
# the occupancy limits ncu reports (blocks per SM each resource allows), in the words we use
LIMIT_WORDS = {"limit_registers": "registers", "limit_shared_mem": "shared memory",
               "limit_warps": "warps", "limit_blocks": "blocks", "limit_barriers": "barriers"}
# what an export says of the GPU it profiled (ncu writes the device attributes on every row)
DEVICE_COLUMNS = {"name": ("device__attribute_display_name",),
                  "sms": ("device__attribute_multiprocessor_count", "launch__sm_count"),
                  "clock_khz": ("device__attribute_clock_rate",),
                  "max_warps_per_sm": ("device__attribute_max_warps_per_multiprocessor",)}
MISSING = cells.MISSING
OVER_THEORETICAL_PT = 0.01  # ncu writes shares to 2 decimals: achieved may equal theoretical
_DIMS = re.compile(r"^\(\s*([0-9]{1,10})\s*,\s*([0-9]{1,10})\s*,\s*([0-9]{1,10})\s*\)$")
_ID = re.compile(r"^[0-9]{1,12}$")  # ASCII digits only: str.isdigit() also takes "²"


@dataclass(frozen=True)
class CsvDevice:
    """The GPU an export profiled, as far as it says (each part None where it does not)."""

    name: str | None
    sms: int | None
    clock_khz: int | None

    def text(self) -> str:
        parts = [self.name or "an unnamed GPU"]
        if self.sms:
            parts.append(f"{self.sms} SMs")
        return ", ".join(parts)


@dataclass(frozen=True)
class NcuKernel:
    """One profiled launch: its place in the report, what it is, and the counters read."""

    report_id: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    values: dict  # METRICS key -> float | None (in the store's units: %, ns, bytes, counts)
    # why achieved occupancy is above theoretical, or where theoretical came from ('' when ncu's)
    occupancy_note: str = ""

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
    device: CsvDevice | None = None  # the GPU it profiled; None when the export does not say


@dataclass(frozen=True)
class _Layout:
    """Where each read metric sits in a row and what multiplies it into the store's unit."""

    column: dict      # header name -> index
    metrics: dict     # METRICS key -> (column index, factor, the name found)
    device: dict      # DEVICE_COLUMNS key -> column index


def theoretical_pct(limits: list[float], threads_per_block: int, max_warps_per_sm: float | None) -> float | None:
    """Theoretical occupancy as Nsight Compute defines it: per SM, the warps of the blocks its
    limiter allows (the fewest blocks any resource allows) over the SM's maximum warps."""
    if not limits or not max_warps_per_sm or threads_per_block <= 0:
        return None
    warps = min(limits) * -(-threads_per_block // 32)
    return min(100.0, 100.0 * warps / max_warps_per_sm)


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
    if not _is_units_row(rows[1], column):
        raise CountersFileError(name, "has no units row under its header, so its durations and sizes "
                                      "cannot be read without guessing; export with `ncu --import REPORT "
                                      "--csv --page raw --print-units base`")
    layout = _layout(column, rows[1], name)
    body = rows[2:]
    if len(body) > MAX_KERNELS:
        raise CountersFileError(name, f"has {len(body):,} kernel rows; at most {MAX_KERNELS:,} are read")
    kernels = _kernels(body, layout, name)
    if not kernels:
        raise CountersFileError(name, "holds no profiled kernel")
    return NcuReport(name, kernels, tuple(layout.metrics), _device(body, layout, name))


def _layout(column: dict, units_row: list[str], name: str) -> _Layout:
    metrics = {}
    for key, first in METRICS.items():
        found = next((m for m in (first, *ALIASES.get(key, ())) if m in column), None)
        if found is None:
            continue
        unit = units_row[column[found]].strip() if column[found] < len(units_row) else ""
        kind = KIND.get(key, units.COUNT)
        factor = units.factor(kind, unit)
        if factor is None:
            raise CountersFileError(name, f"writes {found} in {unit[:40]!r}, not a unit it can read "
                                          f"({units.expected(kind)})")
        metrics[key] = (column[found], factor, found)
    device = {key: next((column[c] for c in names if c in column), None) for key, names in DEVICE_COLUMNS.items()}
    return _Layout(column, metrics, {k: i for k, i in device.items() if i is not None})


def _device(body: list[list[str]], layout: _Layout, name: str) -> CsvDevice | None:
    """The one GPU every row was profiled on (refused when rows name several)."""
    at = [layout.device.get(k) for k in ("name", "sms", "clock_khz")]
    raw = {tuple(row[i] if i is not None and i < len(row) else "" for i in at) for row in body}
    seen = {((n.strip() or None), _whole(sms.strip()), _whole(clock.strip())) for n, sms, clock in raw}
    if len(seen) > 1:
        listed = "; ".join(sorted(CsvDevice(*d).text() for d in seen))[:200]
        raise CountersFileError(name, f"profiles kernels on several GPUs ({listed}); export one GPU's kernels")
    device = CsvDevice(*seen.pop())
    return None if device == CsvDevice(None, None, None) else device


def _whole(text: str | None) -> int | None:
    text = (text or "").replace(",", "")
    return int(text) if _ID.match(text) else None


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
    return all(column[c] < len(row) and row[column[c]].strip() == "" for c in ("ID", "Kernel Name"))


def _kernels(body: list[list[str]], layout: _Layout, name: str) -> tuple[NcuKernel, ...]:
    """Every row as an NcuKernel, the metrics read a column at a time (`ncu_cells`)."""
    column = layout.column
    used = {"ID": column["ID"], "kernel name": column["Kernel Name"], "grid size": column["Grid Size"],
            "block size": column["Block Size"], **{found: i for i, _, found in layout.metrics.values()}}
    widest = max(used.values())
    for line, row in enumerate(body, start=3):
        if len(row) <= widest:
            what = next(w for w, i in used.items() if i >= len(row))
            raise CountersFileError(name, f"row {line} has {len(row)} cells; its {what} is missing")
    values = {key: cells.numbers([row[i] for row in body], factor, {
        "share": key in PERCENTS, "whole": MAX_WHOLE if key in WHOLE else None, "start": 3}, name, found)
        for key, (i, factor, found) in layout.metrics.items()}
    dims: dict[str, tuple] = {}
    kernels = []
    for k, row in enumerate(body):
        line = k + 3
        ident = row[column["ID"]].strip()
        if not _ID.match(ident):
            raise CountersFileError(name, f"row {line}: ID {ident[:40]!r} is not a whole number")
        kernel = row[column["Kernel Name"]].strip()
        if not kernel:
            raise CountersFileError(name, f"row {line} has an empty kernel name")
        mine = {key: column_values[k] for key, column_values in values.items()}
        block = _dims(row[column["Block Size"]], dims, name, line, "block size")
        note = _theoretical(mine, block, row, layout)
        kernels.append(NcuKernel(int(ident), kernel, _dims(row[column["Grid Size"]], dims, name, line, "grid size"),
                                 block, mine, note))
    return tuple(kernels)


def _theoretical(values: dict, block: tuple, row: list[str], layout: _Layout) -> str:
    """Fill theoretical occupancy from the limiter where ncu's own value is missing; say why when
    achieved is above theoretical (it never should be: both are per active SM)."""
    note = ""
    if values.get("occupancy_theoretical_ncu_pct") is None:
        index = layout.device.get("max_warps_per_sm")
        max_warps = _whole(row[index].strip()) if index is not None and index < len(row) else None
        limits = [values[k] for k in LIMIT_WORDS if values.get(k) is not None]
        derived = theoretical_pct(limits, block[0] * block[1] * block[2], max_warps)
        if derived is not None:
            values["occupancy_theoretical_ncu_pct"] = round(derived, 2)
            note = "theoretical derived from ncu's occupancy limits (the export lacks sm__maximum_warps_per_active_cycle_pct)"
    achieved, theory = values.get("occupancy_achieved_pct"), values.get("occupancy_theoretical_ncu_pct")
    if achieved is not None and theory is not None and achieved > theory + OVER_THEORETICAL_PT:
        note = (f"achieved {achieved:.2f} % is above theoretical {theory:.2f} %: the counted launch kept more "
                "warps resident than its limiter allows, so one of the two was not measured on this launch")
    return note


def _dims(text: str, seen: dict, name: str, line: int, what: str) -> tuple[int, int, int]:
    text = text.strip()
    if text in seen:
        return seen[text]
    match = _DIMS.match(text)
    if not match:
        raise CountersFileError(name, f"row {line}: {what} {text[:40]!r} is not of the form (x, y, z)")
    seen[text] = tuple(int(g) for g in match.groups())
    return seen[text]
