"""Nsight Compute counters: the raw CSV exports captured on the H200 for the shipped default-shape
samples (data/samples/default/*.ncu.csv) are read, joined to the samples' launches and shown.

Every expected number here is read from the CSV with the csv module and from the trace JSON
itself, independently of profiler/parse/ncu.py and the store's join.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.analysis.findings import findings
from profiler.analysis.reads import kernel_queries
from profiler.cli.main import main
from profiler.parse.ncu import METRICS, CountersFileError, read_report
from profiler.storage import catalog
from profiler.storage.counters import NothingMatchedError, base_name, match
from profiler.storage.store import Store

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "data" / "samples" / "default"
SHAPE = "b8_h16_s1024_d64_bf16_causal_warm"
WITH_COUNTERS = ("naive", "naive_inplace", "naive_compiled", "sdpa_math", "sdpa_efficient", "sdpa_flash",
                 "sdpa_cudnn", "sdpa_auto", "flex")


def _trace(variant: str) -> Path:
    return DEFAULT / f"{variant}_{SHAPE}.json.gz"


def _csv(variant: str) -> Path:
    return DEFAULT / f"{variant}_{SHAPE}.ncu.csv"


def _rows(variant: str) -> list[dict]:
    """The export's kernel rows as {column: text}, read with the csv module alone."""
    with _csv(variant).open(newline="") as f:
        header, _units, *rows = list(csv.reader(f))
    return [dict(zip(header, row)) for row in rows]


def _value(row: dict, key: str) -> float:
    return float(row[METRICS[key]].replace(",", ""))


def _launches(variant: str) -> list[dict]:
    """The trace's kernel events in time order."""
    with gzip.open(_trace(variant), "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    return sorted(events, key=lambda e: (e["ts"], e["name"]))


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    """A store of the samples that ship with counters, each with its CSV attached."""
    store = Store(tmp_path_factory.mktemp("counted") / "store.duckdb")
    ids = {}
    for variant in WITH_COUNTERS:
        ids[variant] = store.ingest(_trace(variant), name=variant).run_id
        store.attach_counters(ids[variant], _csv(variant))
    return store, ids


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ── reading an export ────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize("variant", WITH_COUNTERS)
def test_every_metric_is_read_as_the_export_writes_it(variant):
    report = read_report(_csv(variant).read_bytes(), _csv(variant).name)
    rows = _rows(variant)
    assert len(report.kernels) == len(rows) >= 1
    for kernel, row in zip(report.kernels, rows):
        assert kernel.report_id == int(row["ID"]) and kernel.name == row["Kernel Name"]
        assert f"({', '.join(map(str, kernel.grid))})" == row["Grid Size"]
        assert f"({', '.join(map(str, kernel.block))})" == row["Block Size"]
        for key in METRICS:
            if METRICS[key] in row:   # dram__bytes.sum was asked for after these were counted
                assert kernel.values[key] == _value(row, key), key


def test_the_limiter_is_every_resource_allowing_the_fewest_blocks():
    [flash] = read_report(_csv("sdpa_flash").read_bytes(), "x").kernels
    row = _rows("sdpa_flash")[0]
    limits = {word: int(row[f"launch__occupancy_limit_{key}"]) for word, key in
              (("registers", "registers"), ("shared memory", "shared_mem"), ("warps", "warps"),
               ("blocks", "blocks"), ("barriers", "barriers"))}
    least = min(limits.values())
    assert flash.limiter() == (" and ".join(w for w, v in limits.items() if v == least), least)
    assert flash.limiter() == ("registers and shared memory", 2)   # FlashAttention-2: 255 regs, 48 KiB smem


@pytest.mark.parametrize("kernel, base", [
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>, false>(pytorch_flash::Flash_fwd_params)", "flash_fwd_kernel"),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, 0, 0, bfloat16_t>>(Flash_fwd_params)", "flash_fwd_kernel"),
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, int)", "softmax_warp_forward"),
    ("void <unnamed>::softmax_warp_forward<float, float, float, 10, 0, 0>(T2 *, const T1 *)", "softmax_warp_forward"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(AttentionKernel<bfloat16_t, Sm80, 1>::Params)", "fmha_cutlassF_bf16_aligned_64x64_rf_sm80"),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"),
])
def test_both_demanglers_give_the_same_function_name(kernel, base):
    assert base_name(kernel) == base


def test_rows_pair_with_launches_in_order_within_name_grid_and_block():
    from profiler.parse.ncu import NcuKernel

    def row(i, name, grid):
        return NcuKernel(i, name, grid, (128, 1, 1), {})
    launches = [(f"void at::k<{t}>(int)", t, *grid, 128, 1, 1)
                for t, grid in ((10, (4, 1, 1)), (20, (8, 1, 1)), (30, (4, 1, 1)), (40, (4, 1, 1)))]
    rows = (row(0, "void k<0>(int)", (4, 1, 1)), row(1, "void k<0>(int)", (8, 1, 1)),
            row(2, "void k<0>(int)", (4, 1, 1)), row(3, "void k<0>(int)", (16, 1, 1)))
    pairs, unmatched = match(rows, launches)
    assert [(r.report_id, launch[1]) for r, launch in pairs] == [(0, 10), (1, 20), (2, 30)]
    assert [r.report_id for r in unmatched] == [3]      # no launch of that grid: listed, never guessed


# ── the join on real traces ──────────────────────────────────────────────────────────────────

@pytest.mark.parametrize("variant", WITH_COUNTERS)
def test_each_row_joins_the_launch_of_the_first_counted_call(counted, variant):
    store, ids = counted
    rows = _rows(variant)
    stored = store.query("SELECT * FROM kernel_counters WHERE run_id = ? ORDER BY report_id", [ids[variant]])
    assert len(stored) == len(rows)
    launches = _launches(variant)
    for (_, got), row in zip(stored.iterrows(), rows):
        grid, block = row["Grid Size"], row["Block Size"]
        same = [e for e in launches if base_name(e["name"]) == base_name(row["Kernel Name"])
                and f"({', '.join(map(str, e['args']['grid']))})" == grid
                and f"({', '.join(map(str, e['args']['block']))})" == block]
        k = sum(1 for r in rows[:int(row["ID"])] if base_name(r["Kernel Name"]) == base_name(row["Kernel Name"])
                and (r["Grid Size"], r["Block Size"]) == (grid, block))
        assert got["name"] == same[k]["name"]                                  # the k-th such launch
        assert got["ts_ns"] == round(same[k]["ts"] * 1000)
        assert got["occupancy_achieved_pct"] == _value(row, "occupancy_achieved_pct")
    report = store.query("SELECT * FROM counter_reports WHERE run_id = ?", [ids[variant]]).iloc[0]
    assert (report["report_kernels"], report["matched"], json.loads(report["unmatched"])) == (len(rows), len(rows), [])


def test_kernel_details_show_the_counters_weighted_by_time_under_ncu(counted):
    store, ids = counted
    details = kernel_queries.kernel_details(store, [ids["sdpa_math"]])
    rows = _rows("sdpa_math")
    stored = store.query("SELECT name, report_id FROM kernel_counters WHERE run_id = ?", [ids["sdpa_math"]])
    by_name: dict[str, list[dict]] = {}
    for name, report_id in stored.itertuples(index=False):
        by_name.setdefault(name, []).append(rows[report_id])
    assert len(by_name) < len(rows)   # some kernels ran more than once per call: averaged
    for name, mine in by_name.items():
        got = details[details["kernel"] == name].iloc[0]
        weights = [_value(r, "ncu_duration_ns") for r in mine]
        for key in ("occupancy_achieved_pct", "dram_throughput_pct", "sm_throughput_pct", "tensor_pipe_active_pct"):
            expected = sum(_value(r, key) * w for r, w in zip(mine, weights)) / sum(weights)
            assert got[key] == pytest.approx(expected, abs=5e-5), (name, key)
        assert got["counted_launches"] == len(mine)


def test_compare_json_gives_achieved_beside_reported_and_theoretical(counted, capsys):
    store, ids = counted
    assert main(["compare", ids["sdpa_flash"], ids["sdpa_cudnn"], "--json", "--db", str(store.path)]) == 0
    report = json.loads(capsys.readouterr().out)
    kernels = {k["family"]: k for k in report["kernels"]}
    flash, cudnn = kernels["flash_fwd_kernel"], kernels["cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7"]
    f_row, c_row = _rows("sdpa_flash")[0], _rows("sdpa_cudnn")[0]
    assert flash["occupancy_achieved_pct"] == {"a": _value(f_row, "occupancy_achieved_pct"), "b": None}
    assert cudnn["occupancy_achieved_pct"] == {"a": None, "b": _value(c_row, "occupancy_achieved_pct")}
    assert cudnn["occupancy_reported_pct"]["b"] == 0.0                      # Kineto's static estimate
    assert cudnn["occupancy_theoretical_pct"]["b"] == _value(c_row, "occupancy_theoretical_ncu_pct")
    for key in ("dram_throughput_pct", "sm_throughput_pct", "l2_throughput_pct", "tensor_pipe_active_pct"):
        assert flash[key]["a"] == _value(f_row, key) and cudnn[key]["b"] == _value(c_row, key)
    for kernel, side, row in ((flash, "a", f_row), (cudnn, "b", c_row)):
        local = _value(row, "local_load_instructions") + _value(row, "local_store_instructions")
        assert kernel["local_memory_instructions"][side] == local
    assert flash["ncu_limiter"]["a"] == "registers and shared memory" and flash["ncu_limit_blocks_per_sm"]["a"] == 2
    # the finding names both kernels with the counters of the CSVs, the faster run first
    [finding] = [e for e in report["evidence"] if e["kind"] == "counters"]
    assert finding["faster"] == ids["sdpa_cudnn"]
    [text] = [t for t in report["findings"] if t.startswith("Hardware counters")]
    for row in (c_row, f_row):
        for key in ("occupancy_achieved_pct", "dram_throughput_pct"):
            assert f"{_value(row, key):.1f} %" in text
    assert text.index(f"{_value(c_row, 'occupancy_achieved_pct'):.1f} %") < text.index(f"{_value(f_row, 'occupancy_achieved_pct'):.1f} %")


def test_a_run_alone_gets_the_counters_of_its_main_kernel(counted):
    store, ids = counted
    found = [f for f in findings.run_findings(store, ids["sdpa_efficient"]) if f.kind == "counters"]
    row = _rows("sdpa_efficient")[0]
    assert len(found) == 1 and f"{_value(row, 'occupancy_achieved_pct'):.1f} % of warps active" in found[0].text
    assert "fmha_cutlassF_bf16_aligned_64x64_rf_sm80" in found[0].text


def test_runs_without_counters_look_as_before(counted, tmp_path):
    store = Store(tmp_path / "plain.duckdb")
    run = store.ingest(_trace("sdpa_flash")).run_id
    details = kernel_queries.kernel_details(store, [run])
    assert details["occupancy_achieved_pct"].isna().all() and details["ncu_limiter"].isna().all()
    assert not [f for f in findings.run_findings(store, run) if f.kind == "counters"]


def test_counters_attached_later_are_shown_at_once_and_leave_with_the_run(tmp_path):
    store = Store(tmp_path / "later.duckdb")
    run = store.ingest(_trace("sdpa_cudnn")).run_id
    assert kernel_queries.kernel_details(store, [run])["occupancy_achieved_pct"].isna().all()   # now kept
    store.attach_counters(run, _csv("sdpa_cudnn"))
    assert kernel_queries.kernel_details(store, [run])["occupancy_achieved_pct"].tolist() == \
        [_value(_rows("sdpa_cudnn")[0], "occupancy_achieved_pct")]
    store.attach_counters(run, _csv("sdpa_auto"))   # the same cuDNN kernel: replaces, never adds
    assert store.query("SELECT count(*) AS n FROM kernel_counters")["n"][0] == 1
    catalog.delete_runs(store, [run])
    assert store.query("SELECT (SELECT count(*) FROM kernel_counters) + (SELECT count(*) FROM counter_reports) AS n")["n"][0] == 0


def test_seeding_attaches_the_samples_counters(tmp_path):
    from profiler.capture.samples import seed_if_empty

    folder = tmp_path / "samples"
    folder.mkdir()
    for variant in ("sdpa_flash", "naive"):
        for path in (_trace(variant), _csv(variant)):
            (folder / path.name).write_bytes(path.read_bytes())
    (folder / _trace("flex").name).write_bytes(_trace("flex").read_bytes())   # a sample without counters
    store = Store(tmp_path / "seeded.duckdb")
    assert seed_if_empty(store, folder) == 3
    got = store.query("SELECT t.variant, r.matched FROM counter_reports r JOIN traces t USING (run_id) ORDER BY 1")
    assert got.values.tolist() == [["naive", len(_rows("naive"))], ["sdpa_flash", 1]]


# ── bad files: one line, exit 1, the store unchanged ─────────────────────────────────────────

def _bad_exports(tmp_path: Path) -> dict[str, bytes]:
    good = _csv("sdpa_flash").read_text()
    header, units, row = good.splitlines()[:3]
    cells = next(csv.reader([row]))
    names = next(csv.reader([header]))

    def with_cell(column: str, value: str) -> bytes:
        changed = list(cells)
        changed[names.index(column)] = value
        out = [header, units, ",".join(f'"{c}"' for c in changed)]
        return "\n".join(out).encode()
    return {
        "empty": b"",
        "binary report": gzip.compress(b"NVIDIA Nsight Compute report") + b"\x00\x01",
        "not utf-8": b"\xff\xfe\xfa" * 10,
        "a trace instead": _trace("sdpa_flash").read_bytes(),
        "json": b'{"traceEvents": []}',
        "header only": header.encode(),
        "no kernel name column": "\n".join(line.replace('"Kernel Name"', '"Name"') for line in (header, units, row)).encode(),
        "id not a number": with_cell("ID", "seven"),
        "grid not (x, y, z)": with_cell("Grid Size", "(8, 8)"),
        "share above 100": with_cell(METRICS["occupancy_achieved_pct"], "250"),
        "huge exponent": with_cell(METRICS["dram_throughput_pct"], "1e" + "9" * 100000),
        "words as a number": with_cell(METRICS["sm_throughput_pct"], "fast"),
        "over the size limit": b'"ID"' + b" " * (64 * 2**20 + 10),
    }


def test_every_bad_export_is_refused_in_one_line_and_changes_nothing(counted, tmp_path, capsys):
    store, ids = counted
    before = store.query("SELECT * FROM kernel_counters ORDER BY run_id, report_id")
    for what, data in _bad_exports(tmp_path).items():
        path = tmp_path / "bad.csv"
        path.write_bytes(data)
        with pytest.raises(CountersFileError) as caught:
            read_report(data, "bad.csv")
        assert str(caught.value).startswith("bad.csv: ") and "\n" not in str(caught.value), what
        digest = _digest(store.path)
        assert main(["counters", ids["sdpa_flash"], str(path), "--db", str(store.path)]) == 1, what
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and err.startswith("error: bad.csv: "), (what, err)
        assert _digest(store.path) == digest, what
    assert store.query("SELECT * FROM kernel_counters ORDER BY run_id, report_id").equals(before)


def test_a_report_of_another_program_is_refused(counted, tmp_path):
    store, ids = counted
    with pytest.raises(NothingMatchedError, match="none of the 7 kernels in .* matches a launch"):
        store.attach_counters(ids["sdpa_flash"], _csv("naive"))
    assert store.query("SELECT count(*) AS n FROM kernel_counters WHERE run_id = ?", [ids["sdpa_flash"]])["n"][0] == 1


@pytest.mark.slow  # a subprocess
def test_the_command_line_attaches_and_lists_what_did_not_match(tmp_path):
    db = tmp_path / "cli.duckdb"
    run = Store(db).ingest(_trace("naive")).run_id
    mixed = tmp_path / "mixed.csv"
    lines = _csv("naive").read_text().splitlines()
    extra = _csv("sdpa_flash").read_text().splitlines()[2].replace('"0"', '"7"', 1)   # flash's row as ID 7
    mixed.write_text("\n".join([*lines, extra]) + "\n")
    done = subprocess.run([sys.executable, "-m", "profiler", "counters", run[:8], str(mixed), "--db", str(db)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    first, second = done.stdout.splitlines()
    assert first == f"{run}  counters of 7 of 8 kernels in mixed.csv attached; 1 matched no launch of the run"
    assert second.startswith("  unmatched  #7  grid (8, 8, 16)  block (128, 1, 1)  void flash_fwd_kernel<")
    as_json = subprocess.run([sys.executable, "-m", "profiler", "counters", run, str(mixed), "--json", "--db", str(db)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    got = json.loads(as_json.stdout)
    assert (got["matched"], got["report_kernels"], [u["id"] for u in got["unmatched"]]) == (7, 8, [7])
