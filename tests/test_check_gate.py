"""`check` as a CI gate with statistics, on repeat sets built from the shipped samples (k = 3 per
side, from the length sweep's repeats at L=1024): exit 0 within noise, 1 for a real slowdown,
2 with one sentence when it cannot judge; its JSON holds the interval, the repeats and the noise.
The slowdown is recomputed here from the raw trace JSON."""
from __future__ import annotations

import contextlib
import io
import json
import statistics

import pytest

from profiler.analysis.findings import repeats
from profiler.cli.main import main
from profiler.storage.store import Store
from tests import raw_trace
from tests.cli_run import cli
from tests.conftest import SAMPLES

SWEEP = SAMPLES / "sweep"
DECODE = SAMPLES / "modes" / "decode_sweep"


def _repeats(variant: str, folder=SWEEP, shape="b8_h16_s1024_d64") -> list:
    return sorted(folder.glob(f"{variant}_{shape}_bf16_causal_warm_r*.json.gz"))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("gate") / "s.duckdb")
    files = {v: _repeats(v) for v in ("sdpa_cudnn", "sdpa_auto", "sdpa_flash", "naive")}
    files["decode"] = _repeats("sdpa_cudnn", DECODE, "decode_b8_h32_kv8_s1_L32768_d128")
    ids = {k: ",".join(store.ingest(p).run_id for p in v) for k, v in files.items()}
    return store, ids, files


def _check(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", *argv])
    return code, out.getvalue(), err.getvalue()


def _median_us(paths) -> float:
    return statistics.median(raw_trace.us_per_step(raw_trace.load(p)["traceEvents"], raw_trace.GPU_WORK) for p in paths)


def _copies(paths, folder) -> list:
    """The same traces with another traceName: other run ids, the same measurements (a second
    repeat set of the same variant)."""

    folder.mkdir()
    out = []
    for p in paths:
        trace = raw_trace.load(p)
        trace["traceName"] = f"copy of {p.name}"
        out.append(folder / p.name.removesuffix(".gz"))
        out[-1].write_text(json.dumps(trace))
    return out


def test_two_repeat_sets_of_the_same_variant_pass(store, tmp_path):
    store, ids, files = store
    copies = _copies(files["sdpa_flash"], tmp_path / "again")
    code, out, _ = _check(ids["sdpa_flash"], ",".join(map(str, copies)), "--json", "--db", str(store.path))
    got = json.loads(out)
    assert code == 0 and got["status"] == "ok" and got["baseline_repeats"] == got["candidate_repeats"] == 3
    assert set(got["baseline"]).isdisjoint(got["candidate"])
    assert got["ratio"] == pytest.approx(1.0) and got["ratio_interval"][0] < 1 < got["ratio_interval"][1]
    spread = [raw_trace.us_per_step(raw_trace.load(p)["traceEvents"], raw_trace.GPU_WORK) for p in files["sdpa_flash"]]
    assert got["noise_floor_pct"] == pytest.approx(100 * (max(spread) - min(spread)) / statistics.median(spread), rel=1e-3)


def test_a_slowdown_above_the_bound_but_inside_the_noise_passes():
    from profiler.analysis.findings import gate, repeats

    base, cand = repeats.figure([100.0, 103.0, 106.0]), repeats.figure([104.0, 107.0, 110.0])
    v = gate.Verdict(["a"], ["b"], base, cand, repeats.pair_noise(base, cand), 2.0, "GPU", ("w", "w"))
    assert v.slowdown_pct == pytest.approx(100 * (107 / 103 - 1)) and v.slowdown_pct > 2
    assert not v.failed and v.status == "within noise"          # the repeats overlap
    far = repeats.figure([120.0, 121.0, 122.0])
    assert gate.Verdict(["a"], ["b"], base, far, repeats.pair_noise(base, far), 2.0, "GPU", ("w", "w")).failed


def test_the_same_kernel_dispatched_by_sdpa_auto_is_compared_by_its_repeats(store):
    """sdpa_auto runs cuDNN's kernel; over these repeats it is 1.6 % slower, beyond their spread
    (57.2-57.7 against 57.9-58.6 µs): a 0.1 % bound fails, the default 5 % passes."""
    store, ids, files = store
    code, out, _ = _check(ids["sdpa_cudnn"], ids["sdpa_auto"], "--max-slowdown", "0.1%", "--json", "--db", str(store.path))
    got = json.loads(out)
    slower = 100 * (_median_us(files["sdpa_auto"]) / _median_us(files["sdpa_cudnn"]) - 1)
    assert got["slowdown_pct"] == pytest.approx(slower, abs=0.05)
    assert code == 1 and got["outside_noise"] is True and got["ratio_interval"][0] > 1
    code, out, _ = _check(ids["sdpa_cudnn"], ids["sdpa_auto"], "--db", str(store.path))
    assert code == 0 and out.startswith("ok: ")


def test_flash_to_naive_fails_and_names_the_interval(store):
    store, ids, files = store
    code, out, _ = _check(ids["sdpa_flash"], ids["naive"], "--json", "--db", str(store.path))
    got = json.loads(out)
    slower = 100 * (_median_us(files["naive"]) / _median_us(files["sdpa_flash"]) - 1)
    assert code == 1 and got["status"] == "fail" and got["slowdown_pct"] == pytest.approx(slower, rel=1e-3)
    assert got["ratio_interval"][0] > 1 and got["outside_noise"] is True
    assert got["baseline_interval_us"][0] <= got["baseline_us_per_call"] <= got["baseline_interval_us"][1]
    assert got["grew"] and any("masked_fill" in k["kernel"] or "elementwise" in k["kernel"] for k in got["grew"])


def test_check_takes_files_and_folders_into_a_temporary_store(store, tmp_path):
    store, ids, files = store
    before = store.query("SELECT count(*) AS n FROM traces")["n"].iloc[0]
    folder = tmp_path / "candidate"
    folder.mkdir()
    for p in files["naive"]:
        (folder / p.name).write_bytes(p.read_bytes())
    code, out, _ = _check(",".join(map(str, files["sdpa_flash"])), str(folder), "--db", str(store.path))
    assert code == 1 and out.startswith("FAIL: ")
    code, _, _ = _check(ids["sdpa_flash"], str(folder), "--db", str(store.path))   # ids beside files
    assert code == 1
    assert store.query("SELECT count(*) AS n FROM traces")["n"].iloc[0] == before   # the user's store untouched


def test_prefill_against_decode_is_refused_unless_allowed(store):
    store, ids, _ = store
    code, out, err = _check(ids["sdpa_cudnn"], ids["decode"], "--db", str(store.path))
    assert code == 2 and out == "" and "different workloads" in err and "decode" in err and "Traceback" not in err
    code, out, _ = _check(ids["sdpa_cudnn"], ids["decode"], "--allow-different-workloads", "--json",
                          "--db", str(store.path))
    assert code == 1 and json.loads(out)["workloads"][0] != json.loads(out)["workloads"][1]


def test_no_time_and_unknown_runs_are_a_clear_refusal(store, tmp_path):
    store, ids, _ = store
    empty = tmp_path / "no_gpu.json"
    empty.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0, "dur": 5, "pid": 1, "tid": 1}]}))
    code, _, err = _check(ids["sdpa_cudnn"], str(empty), "--db", str(store.path))
    assert code == 2 and "no time per call" in err and "0 µs" in err
    code, out, err = _check("no-such-run", ids["naive"], "--json", "--db", str(store.path))
    assert code == 2 and json.loads(out)["status"] == "refused" and "no-such-run" in err


@pytest.mark.slow  # a CPU capture by the command (in this process: tests/cli_run.py)
def test_cpu_runs_rank_and_check_by_the_attention_calls_cpu_time(tmp_path):
    db = tmp_path / "cpu.duckdb"
    done = cli("capture", "--device", "cpu", "--variants", "naive,sdpa_flash", "--batch", "1", "--heads", "4",
               "--seq", "256", "--head-dim", "32", "--dtype", "fp32", "--no-cold", "--no-isolate", "--timing-calls",
               "1", "--repeats", "3", "--out-dir", str(tmp_path), "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["rank", "naive", "sdpa_flash", "--json", "--db", str(db)]) == 0
    got = json.loads(out.getvalue())
    raw = {}
    for path in sorted(tmp_path.glob("*.json.gz")):
        trace = raw_trace.load(path)
        variant = trace["attention_run"]["variant"]
        windows = raw_trace.steps(trace["traceEvents"])
        calls = [e["dur"] for e in trace["traceEvents"] if e.get("name") == f"attention:{variant}"
                 and e.get("cat") == "user_annotation" and any(s <= e["ts"] < t for s, t in windows)]
        raw.setdefault(variant, []).append(sum(calls) / len(windows))
    for row in got["runs"]:
        assert row["timed_on"] == "CPU attention call" and row["us_per_call"] > 0
        assert row["us_min"] <= row["us_per_call"] <= row["us_max"]
        # the group's figure is the median of its repeats once an outlier is set aside (on a loaded
        # CPU one repeat can be far off): the same statistic over the raw per-repeat times
        want = repeats.figure(raw[row["variant"]])
        assert (row["us_per_call"], row["us_min"], row["us_max"]) == pytest.approx((want.median, want.lo, want.hi), rel=1e-3)
        assert row["repeats"] == want.n and len(row["outliers"]) == len(want.outliers)
    assert "nan" not in got["sentence"] and "CPU time of the attention call" in got["sentence"]
    ids = {r["variant"]: ",".join(r["run_ids"]) for r in got["runs"]}
    code, out, err = _check(ids["sdpa_flash"], ids["naive"], "--json", "--db", str(db))
    assert code in (0, 1) and "Traceback" not in err
    assert json.loads(out)["timed_on"] == "CPU attention call"
