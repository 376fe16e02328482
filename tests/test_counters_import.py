"""Attaching an Nsight Compute CSV never guesses: metric names of other ncu versions, the units row,
another GPU's report, theoretical occupancy per SM from the limiter, and cells that are no numbers.

Every CSV here is made in the test from a shipped export (data/samples/default/*.ncu.csv) with the
csv module: a column renamed, a unit rewritten and its values scaled, a device attribute changed.
Expected values are read from the original export, not from the code under test.
"""
from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

import pytest

from profiler.cli.main import main
from profiler.errors import CountersFileError, OtherDeviceError
from profiler.parse.ncu import METRICS, read_report, theoretical_pct
from profiler.storage.store import Store

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "data" / "samples" / "default"
SHAPE = "b8_h16_s1024_d64_bf16_causal_warm"
FLASH_CSV = DEFAULT / f"sdpa_flash_{SHAPE}.ncu.csv"
FLASH_TRACE = DEFAULT / f"sdpa_flash_{SHAPE}.json.gz"


def _table(path: Path = FLASH_CSV) -> tuple[list[str], list[str], list[list[str]]]:
    header, units, *rows = list(csv.reader(path.open(newline="")))
    return header, units, rows


def _write(header, units, rows) -> bytes:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([header, units, *rows])
    return out.getvalue().encode()


def _original(column: str) -> str:
    header, _, rows = _table()
    return rows[0][header.index(column)]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _changed(column: str, value: str | None = None, unit: str | None = None, rename: str | None = None) -> bytes:
    header, units, rows = _table()
    i = header.index(column)
    if value is not None:
        rows[0][i] = value
    if unit is not None:
        units[i] = unit
    if rename is not None:
        header[i] = rename
    return _write(header, units, rows)


def _without(*columns: str) -> bytes:
    header, units, rows = _table()
    keep = [i for i, h in enumerate(header) if h not in columns and not any(h.startswith(c) for c in columns)]
    return _write([header[i] for i in keep], [units[i] for i in keep], [[r[i] for i in keep] for r in rows])


# ── metric names of other Nsight Compute versions ───────────────────────────────────────────

@pytest.mark.parametrize("key, other", [
    ("dram_throughput_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("tensor_pipe_active_pct", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
    ("local_load_instructions", "smsp__sass_inst_executed_op_local_ld.sum"),
])
def test_a_metric_under_another_versions_name_is_read(key, other):
    data = _changed(METRICS[key], rename=other)
    [kernel] = read_report(data, "renamed.csv").kernels
    assert kernel.values[key] == _number(_original(METRICS[key])) and kernel.values[key] is not None


def test_a_metric_absent_under_every_name_is_missing_not_zero():
    [kernel] = read_report(_without(METRICS["dram_throughput_pct"]), "x.csv").kernels
    assert kernel.values.get("dram_throughput_pct") is None


# ── the units row ───────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize("unit, scale", [("ns", 1), ("nsecond", 1), ("usecond", 1e3), ("us", 1e3),
                                         ("msecond", 1e6), ("ms", 1e6), ("second", 1e9), ("s", 1e9)])
def test_a_duration_is_stored_in_ns_whatever_unit_it_was_exported_in(unit, scale):
    ns = _number(_original(METRICS["ncu_duration_ns"]))           # 92,736 ns in the export
    data = _changed(METRICS["ncu_duration_ns"], value=repr(ns / scale), unit=unit)
    [kernel] = read_report(data, "units.csv").kernels
    assert kernel.values["ncu_duration_ns"] == pytest.approx(ns, rel=1e-12)


@pytest.mark.parametrize("unit, scale", [("byte", 1), ("Kbyte", 1e3), ("Mbyte", 1e6), ("Gbyte", 1e9),
                                         ("KB", 1e3), ("MB", 1e6), ("KiB", 1024)])
def test_a_size_is_stored_in_bytes(unit, scale):
    header, units, rows = _table()
    header, units = header + ["dram__bytes.sum"], units + [unit]
    rows[0] = rows[0] + [repr(5_000_000 / scale)]
    [kernel] = read_report(_write(header, units, rows), "bytes.csv").kernels
    assert kernel.values["dram_bytes"] == pytest.approx(5_000_000, rel=1e-12)


@pytest.mark.parametrize("column, unit", [(METRICS["ncu_duration_ns"], "cycle"),
                                          (METRICS["ncu_duration_ns"], ""),
                                          (METRICS["dram_throughput_pct"], "ns"),
                                          (METRICS["limit_warps"], "byte")])
def test_a_unit_its_metric_is_not_written_in_is_refused_naming_both(column, unit):
    with pytest.raises(CountersFileError, match=f"writes {column} in {unit!r}, not a unit it can read"):
        read_report(_changed(column, unit=unit), "odd.csv")


def test_an_export_without_a_units_row_is_refused():
    header, _, rows = _table()
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows([header, *rows])
    with pytest.raises(CountersFileError, match="has no units row .* --print-units base"):
        read_report(out.getvalue().encode(), "nounits.csv")


# ── theoretical occupancy: per SM, from the limiter ─────────────────────────────────────────

def test_theoretical_from_the_limits_is_ncus_own_value():
    ncu = _number(_original(METRICS["occupancy_theoretical_ncu_pct"]))   # 12.50: 2 blocks of 4 warps of 64
    [kernel] = read_report(_without(METRICS["occupancy_theoretical_ncu_pct"]), "derived.csv").kernels
    assert kernel.values["occupancy_theoretical_ncu_pct"] == ncu
    assert kernel.occupancy_note.startswith("theoretical derived from ncu's occupancy limits")


def test_a_small_grid_keeps_its_per_sm_theoretical_above_what_it_achieved():
    """flash's split-KV combine kernel: 64 blocks of 4 warps on 132 SMs. Averaged over the whole GPU
    that is 256 of 132 x 64 warps (3.03 %); ncu's achieved (6.25 %: one block on each active SM) is
    per active SM, and so is the theoretical it is compared with."""
    header, units, rows = _table()
    row = list(rows[0])
    put = {"Kernel Name": "void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<64>>(Flash_fwd_params)",
           "Grid Size": "(64, 1, 1)", "Block Size": "(128, 1, 1)",
           METRICS["occupancy_achieved_pct"]: "6.25", "launch__occupancy_limit_registers": "8",
           "launch__occupancy_limit_shared_mem": "32", "launch__occupancy_limit_warps": "16",
           "launch__occupancy_limit_blocks": "32", "launch__occupancy_limit_barriers": "32"}
    for column, value in put.items():
        row[header.index(column)] = value
    drop = header.index(METRICS["occupancy_theoretical_ncu_pct"])
    data = _write([h for i, h in enumerate(header) if i != drop], [u for i, u in enumerate(units) if i != drop],
                  [[c for i, c in enumerate(row) if i != drop]])
    [kernel] = read_report(data, "combine.csv").kernels
    theory = kernel.values["occupancy_theoretical_ncu_pct"]
    assert theory == 100 * 8 * 4 / 64 and kernel.values["occupancy_achieved_pct"] <= theory
    assert 100 * 64 * 4 / (132 * 64) < kernel.values["occupancy_achieved_pct"]   # the whole-GPU average is lower


def test_achieved_above_theoretical_says_why():
    data = _changed(METRICS["occupancy_achieved_pct"], value="20.00")     # theoretical 12.50
    [kernel] = read_report(data, "over.csv").kernels
    assert kernel.occupancy_note.startswith("achieved 20.00 % is above theoretical 12.50 %")


@pytest.mark.parametrize("limits, threads, max_warps, want", [
    ([2, 2, 16, 32], 128, 64, 12.5), ([16, 32], 128, 64, 100.0), ([1], 1024, 64, 50.0),
    ([3], 96, 48, 18.75), ([], 128, 64, None), ([4], 128, None, None)])
def test_theoretical_rule(limits, threads, max_warps, want):
    assert theoretical_pct(limits, threads, max_warps) == want


# ── cells that are not what they claim ──────────────────────────────────────────────────────

@pytest.mark.parametrize("column, value, says", [
    ("ID", "²", "ID '²' is not a whole number"),
    ("ID", "٣", "ID '٣' is not a whole number"),
    ("launch__occupancy_limit_registers", "1e999", "not a finite number"),
    ("gpu__time_duration.sum", "1e999", "not a finite number"),
    ("launch__occupancy_limit_warps", "-7", "below zero"),
    ("launch__occupancy_limit_blocks", "2.5", "not a whole number"),
    ("launch__registers_per_thread", "3e9", "not a whole number up to"),
    (METRICS["dram_throughput_pct"], "-0.5", "below zero"),
])
def test_bad_cells_are_refused_in_one_line(column, value, says):
    with pytest.raises(CountersFileError) as caught:
        read_report(_changed(column, value=value), "bad.csv")
    assert says in str(caught.value) and str(caught.value).startswith("bad.csv: row 3") and "\n" not in str(caught.value)


# ── the GPU the export measured ─────────────────────────────────────────────────────────────

def _flash(path) -> str:
    return Store(path).ingest(FLASH_TRACE, name="flash").run_id


@pytest.fixture
def flash_run(tmp_path, template_store):
    """(store, run id) of the flash sample: a copy of a store ingested once per test process."""
    run_id = template_store("flash-sample", _flash, tmp_path / "s.duckdb")
    return Store(tmp_path / "s.duckdb"), run_id


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_export_names_the_gpu_it_profiled():
    device = read_report(FLASH_CSV.read_bytes(), "x.csv").device
    assert (device.name, device.sms) == (_original("device__attribute_display_name"),
                                         int(_original("device__attribute_multiprocessor_count")))


def test_a_report_of_another_gpu_is_refused_naming_both_and_the_file_is_unchanged(flash_run, tmp_path, capsys):
    store, run = flash_run
    other = tmp_path / "a100.csv"
    header, units, rows = _table()
    for column, value in (("device__attribute_display_name", "NVIDIA A100-SXM4-80GB"),
                          ("device__attribute_multiprocessor_count", "108"), ("launch__sm_count", "108")):
        rows[0][header.index(column)] = value
    other.write_bytes(_write(header, units, rows))
    with pytest.raises(OtherDeviceError, match="a100.csv was measured on NVIDIA A100-SXM4-80GB, 108 SMs; run "
                                               f"{run} ran on NVIDIA H200, 132 SMs"):
        store.attach_counters(run, other)
    digest = _digest(store.path)
    assert main(["counters", run, str(other), "--db", str(store.path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NVIDIA A100-SXM4-80GB" in err and "NVIDIA H200" in err
    assert _digest(store.path) == digest
    assert store.query("SELECT count(*) AS n FROM kernel_counters")["n"][0] == 0


def test_a_report_that_names_no_gpu_attaches_and_says_it_cannot_tell(flash_run, tmp_path):
    store, run = flash_run
    bare = tmp_path / "bare.csv"
    bare.write_bytes(_without("device__attribute_", "launch__sm_count"))
    attached = store.attach_counters(run, bare)
    assert attached.matched == 1 and attached.device_check.startswith("cannot tell: the export names no GPU")
    kept = store.query("SELECT device_check FROM counter_reports WHERE run_id = ?", [run])["device_check"][0]
    assert kept == attached.device_check
    same = store.attach_counters(run, FLASH_CSV)
    assert same.device_check == "same GPU: NVIDIA H200, 132 SMs"


def test_a_refused_match_leaves_the_store_file_byte_identical(flash_run, capsys):
    store, run = flash_run
    digest = _digest(store.path)
    naive = DEFAULT / f"naive_{SHAPE}.ncu.csv"
    assert main(["counters", run, str(naive), "--db", str(store.path)]) == 1
    assert "none of the" in capsys.readouterr().err
    assert _digest(store.path) == digest
