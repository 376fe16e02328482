"""`capture --counters` against a plain Nsight Compute run, from the raw exports an H100 wrote
(data/samples_h100/counters_paired/, `python -m bench.gpu_issue38_check --paired`): each workload
of every mode counted three times the capture's way (two ncu runs joined, `counters.join_reports`)
and three times with ncu's own Occupancy and SpeedOfLight sections, in turns, both with
`--clock-control none --cache-control all`. Recomputed here with the csv module alone."""
from __future__ import annotations

import csv
import io
import json
import re
import statistics
import tarfile
from collections import defaultdict
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "data" / "samples_h100" / "counters_paired"
METRICS = {"achieved": "sm__warps_active.avg.pct_of_peak_sustained_active",
           "theoretical": "sm__maximum_warps_per_active_cycle_pct",
           "sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"}
NAME = re.compile(r"paired_(.+)_(tool|plain)(\d)\.csv$")


def _rows(text: str) -> list[dict]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    header, _units, *rows = csv.reader(io.StringIO("\n".join(lines[start:])))
    return [dict(zip(header, r)) for r in rows]


def _differences(export: Path = HERE / "two_runs_csv.tgz", rounds: int = 3) -> dict[tuple[str, int, str], float]:
    """(workload, kernel index, metric) -> median of the capture's runs minus median of the plain runs."""
    runs: dict[tuple[str, str], list[list[dict]]] = defaultdict(list)
    with tarfile.open(export) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            got = NAME.search(member.name)
            runs[got.group(1), got.group(2)].append(_rows(tar.extractfile(member).read().decode()))
    out = {}
    for workload in {w for w, _ in runs}:
        tool, plain = runs[workload, "tool"], runs[workload, "plain"]
        assert len(tool) == len(plain) == rounds
        for k, row in enumerate(tool[0]):
            assert all(r[k]["Kernel Name"] == row["Kernel Name"] for r in tool + plain)  # the same kernels
            for key, metric in METRICS.items():
                ours = statistics.median(float(r[k][metric]) for r in tool)
                theirs = statistics.median(float(r[k][metric]) for r in plain)
                out[workload, k, key] = ours - theirs
    return out


@pytest.fixture(scope="module")
def differences():
    return _differences()


def test_every_mode_was_counted_both_ways(differences):
    workloads = {w for w, _, _ in differences}
    assert len(workloads) == 7
    for mode in ("decode", "train", "w1024", "kv8_s2048", "v512x1536"):   # decode, train, window, GQA, packed
        assert any(mode in w for w in workloads), mode
    assert len({(w, k) for w, k, _ in differences}) == 20


def test_occupancy_agrees_with_nsight_computes_own_section_within_half_a_point(differences):
    worst = max(abs(v) for (_, _, key), v in differences.items() if key in ("achieved", "theoretical"))
    assert worst <= 0.5, worst


def test_sm_and_dram_throughput_agree_within_a_point_but_one_short_kernels_dram(differences):
    over = sorted((w, k, key, round(v, 2)) for (w, k, key), v in differences.items()
                  if key in ("sm", "dram") and abs(v) > 1.0)
    # flash's backward pre-pass (dot(dO, O), a few microseconds) read DRAM 1.19 pt apart; its plain
    # runs alone spread up to 1.77 pt (one_run.json)
    assert len(over) <= 1 and all(key == "dram" and abs(v) < 1.5 for _, _, key, v in over), over


def test_five_rounds_of_train_put_flash_backwards_pre_pass_within_a_point():
    """The one kernel over a point in three rounds (flash backward's dot(dO, O) pre-pass, DRAM
    1.19 pt) counted again five rounds each way on an H100 (train_5_rounds_csv.tgz): every metric
    of all six train kernels within 1 pt."""
    found = _differences(HERE / "train_5_rounds_csv.tgz", rounds=5)
    assert len({k for _, k, _ in found}) == 6 and {w for w, _, _ in found} == {"sdpa_flash_train_b8_h16_s1024_d64"}
    worst = max(found.items(), key=lambda kv: abs(kv[1]))
    assert abs(worst[1]) <= 1.0, worst


H200_DIR = HERE.parents[1] / "samples_H200" / "counters_paired"
H200 = H200_DIR / "two_runs.json"


def test_the_h200s_paired_summary_covers_every_mode_with_occupancy_within_half_a_point():
    """The H200's paired check (three rounds each way; only its summary came back from the GPU
    machine): 20 kernels of the 7 workloads, occupancy within 0.5 pt, and any metric over a
    point is one the plain runs alone spread over more than a point."""
    found = json.loads(H200.read_text())
    kernels = [k for w in found.values() for k in w["kernels"]]
    assert len(found) == 7 and len(kernels) == 20 and all(w["rounds"] == 3 for w in found.values())
    for k in kernels:
        diffs, spread = k["tool_minus_plain_pt"], k["plain_spread_pt"]
        assert abs(diffs["occupancy_achieved"]) <= 0.5 and abs(diffs["occupancy_theoretical"]) <= 0.5, k
        over = {m: d for m, d in diffs.items() if abs(d) > 1.0}
        assert all(spread[m] > 1.0 for m in over), k
        assert k["ok"] == (not over)
    assert sum(k["ok"] for k in kernels) >= 19


def test_six_rounds_of_cudnn_decode_on_the_h200_put_its_dram_within_a_point():
    """The H200's one kernel over a point in three rounds (cuDNN's decode kernel, DRAM +1.23 pt)
    counted again six rounds each way on an H200 (cudnn_decode_6_rounds_csv.tgz): both decode
    kernels within 1 pt on every metric, recomputed from the raw exports."""
    found = _differences(H200_DIR / "cudnn_decode_6_rounds_csv.tgz", rounds=6)
    assert {w for w, _, _ in found} == {"sdpa_cudnn_decode_b8_h32_kv8_s1_L8192"} and len({k for _, k, _ in found}) == 2
    worst = max(found.items(), key=lambda kv: abs(kv[1]))
    assert abs(worst[1]) <= 1.0, worst
