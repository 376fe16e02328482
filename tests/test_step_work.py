"""Issue 35: one step time everywhere. A step's GPU work is what the step launched (joined through
the launch calls' correlation ids), wherever it ran; checked per step against tests/raw_step_work.py
(plain json over the raw trace, not the code under test) on every shared trace and the default and
training samples, and read back from every output that shows it: summary --json, compare --json
(header and kernel table), rank --json, ops --json, the runs page's catalog and the kernel table.
"""
from __future__ import annotations

import json

import pytest

from profiler.analysis.reads import kernel_queries, run_queries
from profiler.analysis.findings import timings, verdict
from profiler.cli.main import main
from tests import raw_step_work as raw
from tests.conftest import SAMPLES, SHARED_TRACES, real_traces

SAMPLE_TRACES = sorted((SAMPLES / "default").glob("*.json.gz")) + sorted((SAMPLES / "modes" / "train").glob("*.json.gz"))
V100 = SHARED_TRACES / "hta__ns_resolution__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
MI250 = SHARED_TRACES / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"


@pytest.fixture(scope="module")
def stored(real_and_samples):
    """The real traces and SAMPLE_TRACES, in a copy of the store of every real trace and sample
    (tests/conftest.py: built once per test process): the store, {path: run id} of these."""
    db, ids = real_and_samples
    return db, {p: ids[p] for p in [*real_traces(), *SAMPLE_TRACES]}


def _cli(capsys, *argv) -> object:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_each_steps_gpu_work_is_what_it_launched(stored):
    db, ids = stored
    for path, run in ids.items():
        want = raw.step_work(path)["steps"]
        got = run_queries.iteration_metrics(db, [run])
        assert [int(v) for v in got["gpu_work_ns"]] == [s["work"] for s in want], path.name
        assert [int(v) for v in got["gpu_work_sum_ns"]] == [s["sum"] for s in want], path.name
        # the step's end: the store's window may differ from ts + dur by the rounding of either
        assert [int(v) for v in got["spilled_ns"]] == pytest.approx([s["spilled"] for s in want], abs=1_000), path.name


@pytest.mark.third_party
@pytest.mark.skipif(not V100.exists(), reason=f"needs {V100.name} in the shared traces")
def test_ns_resolution_step_needs_its_launched_work_not_the_part_inside_it(stored):
    """The CPU runs ahead: each step launches ~94.5 ms of GPU work, most of it running after the
    step's window; the figure is within 1 % of the raw per-step launched work, per step."""
    db, ids = stored
    want = [s["work"] / 1e3 for s in raw.step_work(V100)["steps"]]
    run = run_queries.run_metrics(db, [ids[V100]]).iloc[0]
    assert run["gpu_work_us_per_iter"] == pytest.approx(sum(want) / len(want), rel=0.01)
    assert run["gpu_work_min_us"] == pytest.approx(min(want), rel=0.01)
    assert run["gpu_work_max_us"] == pytest.approx(max(want), rel=0.01)
    assert run["gpu_busy_us_per_iter"] < 0.2 * run["gpu_work_us_per_iter"]   # the old figure: a part
    assert run["gpu_busy_pct"] <= 100 and run["spilled_us_per_iter"] > 0


def test_one_step_gpu_work_figure_per_run_in_every_output(stored, capsys):
    db, ids = stored
    runs = list(ids.values())
    summary = {r["run_id"]: r for r in _cli(capsys, "summary", "--json", "--db", str(db.path))}
    catalog = run_queries.run_catalog(db).set_index("run_id")
    per_call = timings.run_timings(db, runs).set_index("run_id")
    kernel_table = kernel_queries.kernel_table(db, runs).groupby("run_id")["us_per_iter"].sum()
    out = _cli(capsys, "rank", *runs, "--json", "--db", str(db.path))
    sets = out.get("sets", [out])   # rank groups repeats: each group shows the repeat nearest its median
    ranked = {r["run_id"]: r for g in sets for r in g["runs"]}
    grouped = {x for g in sets for r in g["runs"] for x in r["run_ids"]}
    alone = {a if isinstance(a, str) else a.get("run_id") for a in out.get("alone", [])}
    assert set(runs) <= grouped | alone and set(ranked) <= set(runs)
    for path, run in ids.items():
        figure = summary[run]["gpu_work_us_per_iter"]
        assert figure == pytest.approx(catalog.loc[run, "gpu_work_us_per_iter"], rel=1e-9), path.name
        per = per_call.loc[run, "gpu_us_per_call"]   # a run that launched nothing has no time per call
        assert (per == pytest.approx(figure, rel=1e-9)) if figure else per != per, path.name
        if run in ranked:
            assert ranked[run]["gpu_us_per_call"] == (pytest.approx(figure, rel=1e-9) if figure else None), path.name
        # the Kernels table's per-iteration rows add up to the step's summed kernel work
        kernels = kernel_table.get(run, 0.0)
        assert kernels == pytest.approx(run_queries.run_metrics(db, [run]).iloc[0]["kernel_sum_us_per_iter"], rel=1e-9)
        # ops --json: every modelled op's row carries the run's one figure
        for row in _cli(capsys, "ops", run, "--json", "--db", str(db.path)):
            assert row["gpu_work_us_per_iter"] == pytest.approx(figure, rel=1e-9), path.name
    for a, b in zip(runs[:-1:4], runs[1::4]):   # compare: header and kernel table of one run agree
        report = _cli(capsys, "compare", a, b, "--json", "--db", str(db.path))
        for side, run in (("a", a), ("b", b)):
            m = report["metrics"][side]
            assert m["gpu_work_us_per_iter"] == pytest.approx(summary[run]["gpu_work_us_per_iter"], rel=1e-9)
            table = sum(k[f"us_{side}"] for k in report["kernels"])
            assert table == pytest.approx(m["gpu_work_sum_us_per_iter"], rel=1e-6, abs=1e-6), run


@pytest.mark.third_party
@pytest.mark.skipif(not MI250.exists(), reason=f"needs {MI250.name} in the shared traces")
def test_mi250_no_part_larger_than_its_whole(stored):
    """Launch time is a part of the launching threads' recorded CPU time, over the same threads
    and window: checked on the raw trace by hand (every thread that launches, unions clipped to
    the steps), and the sentence never states the part above its whole."""
    db, ids = stored
    run = run_queries.run_metrics(db, [ids[MI250]]).iloc[0]
    evs = raw.events(MI250)
    steps = [(raw._ns(e["ts"]), raw._ns(e["ts"]) + raw._ns(e["dur"])) for e in evs
             if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation"]
    api = [e for e in evs if str(e.get("cat", "")).lower() in raw.API_CATS]
    threads = {(str(e.get("pid")), str(e.get("tid"))) for e in api if "launch" in e["name"].lower()}
    mine = lambda e: (str(e.get("pid")), str(e.get("tid"))) in threads  # noqa: E731
    def clipped(picked):
        return sum(raw.union((max(raw._ns(e["ts"]), lo), min(raw._ns(e["ts"]) + raw._ns(e["dur"]), hi))
                             for e in picked if raw._ns(e["ts"]) < hi and raw._ns(e["ts"]) + raw._ns(e["dur"]) > lo)
                   for lo, hi in steps) / len(steps) / 1e3
    launch = clipped([e for e in api if "launch" in e["name"].lower()])
    cpu = clipped([e for e in evs if mine(e) and (str(e.get("cat", "")).lower() in raw.API_CATS or (
        e.get("cat") == "cpu_op" and not str(e["name"]).startswith("ProfilerStep#")))])
    assert run["launch_api_us_per_iter"] == pytest.approx(launch, rel=1e-6)
    assert run["cpu_busy_us_per_iter"] == pytest.approx(cpu, rel=1e-6)
    assert launch <= cpu <= run["wall_us_per_iter"]
    assert run["launching_threads"] == len(threads)
    parts = [run[c] for c in ("idle_sync_us_per_iter", "idle_collective_us_per_iter", "idle_input_us_per_iter",
                              "idle_launch_us_per_iter", "idle_cpu_us_per_iter", "idle_annotation_us_per_iter",
                              "idle_unrecorded_us_per_iter")]
    assert min(parts) >= 0 and sum(parts) == pytest.approx(run["gpu_idle_us_per_iter"], rel=1e-9)
    # the longest idle gap lies in one step: never longer than the longest step of the raw trace, and
    # a gap longer than the mean iteration the sentence sets it beside says it lies in a longer step
    mean_step = sum(hi - lo for lo, hi in steps) / len(steps) / 1e3
    assert run["max_gap_us"] <= max(hi - lo for lo, hi in steps) / 1e3
    said = verdict.bound_sentence(run.to_dict(), "mi250")
    longest = f"the longest {run['max_gap_us']:,.1f} µs"
    assert longest in said
    assert (run["max_gap_us"] > mean_step) == (f"{longest}, in a step longer than the mean" in said)
