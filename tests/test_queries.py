"""queries.py on the hand-written store of tests/tiny_store.py (every number checked by hand)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from profiler.analysis.reads import kernel_queries, pair_queries, queries as q, run_queries, timeline_queries
from profiler import errors
from profiler.analysis.reads.units import binary_size
from profiler.errors import UnknownRunError
from tests.tiny_store import RUNS



def test_run_iterations_gives_whole_trace_to_runs_without_steps(tiny):
    it = run_queries.run_iterations(tiny, RUNS)
    assert it[["run_id", "iteration", "dur_us"]].values.tolist() == [
        ["runa", 0, 100.0], ["runa", 1, 100.0], ["runb", 0, 50.0]]
    assert it.loc[2, "name"] == "(whole trace)"


def test_iteration_bounds_clips_to_last_iteration(tiny):
    b = run_queries.iteration_bounds(tiny, RUNS, 5)
    assert b[["run_id", "iteration", "start_ns"]].values.tolist() == [["runa", 1, 100_000],
                                                                     ["runb", 0, 0]]
    assert run_queries.iteration_bounds(tiny, ["runb", "runa"], 0)["run_id"].tolist() == ["runb", "runa"]


def test_run_labels_in_requested_order(tiny):
    labels = run_queries.run_labels(tiny, ["runb", "runa"])
    assert labels["run_id"].tolist() == ["runb", "runa"]
    assert labels.loc[1, "label"].startswith("cudnn bf16 L=1024 (cold)")


def test_kernel_table_per_iteration(tiny):
    k = kernel_queries.kernel_table(tiny, RUNS).set_index("run_id")
    assert k.loc["runa", ["calls", "calls_per_iter", "us_per_iter", "mean_us"]].tolist() == [
        2, 1.0, 15.0, 15.0]
    assert k.loc["runb", ["calls", "calls_per_iter", "us_per_iter", "mean_us"]].tolist() == [
        2, 2.0, 10.0, 5.0]
    assert k.loc["runa", "grid"] == "8×1×1" and k.loc["runb", "block"] == "64×1×1"
    assert k["gpu_time_share_pct"].tolist() == [100.0, 100.0]


def test_a_kernels_launch_configuration_is_one_the_most_calls_used(tiny):
    """Grid, block, registers and shared memory come from the same launches: the configuration
    most calls used (3 of 7 here), not each field's own most common value, which would read
    grid 2×1×1, block 128×1×1 and 64 registers (a mix that 2 launches used). Of configurations
    used as often, the one with the most GPU time (one answer, whatever order the rows come in)."""
    mixed = [((4, 1, 1), (128, 1, 1), 32, 0, 1000)] * 3 + [((2, 1, 1), (256, 1, 1), 64, 1024, 1000)] * 2 \
        + [((2, 1, 1), (128, 1, 1), 64, 1024, 1000)] * 2
    tied = [((8, 1, 1), (64, 1, 1), 40, 0, 1000)] * 2 + [((16, 1, 1), (32, 1, 1), 48, 0, 3000)] * 2
    with tiny.connect() as con:
        con.executemany("INSERT INTO kernels (run_id, name, device, stream, ts_ns, dur_ns, grid_x, grid_y, grid_z,"
                        " block_x, block_y, block_z, registers_per_thread, shared_mem_bytes, iteration)"
                        " VALUES ('runa', ?, 0, 7, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                        [(name, 100_000 + i * 5000, dur, *grid, *block, regs, smem)
                         for name, launches in (("mixed", mixed), ("tied", tied))
                         for i, (grid, block, regs, smem, dur) in enumerate(launches)])
    k = kernel_queries.kernel_table(tiny, ["runa"]).set_index("kernel")
    got = k.loc[["mixed", "tied"], ["grid", "block", "registers_per_thread", "shared_mem_bytes"]]
    assert got.values.tolist() == [["4×1×1", "128×1×1", 32, 0], ["16×1×1", "32×1×1", 48, 0]]
    assert (k.loc["mixed", "threads_per_block"], k.loc["mixed", "grid_blocks"], k.loc["mixed", "calls"]) == (128, 4, 7)


H200 = {"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0, "numSms": 132,
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 233472, "sharedMemPerBlockOptin": 232448}


def test_kernel_details_adds_theoretical_occupancy_and_math_class(tiny):
    with tiny.connect() as con:
        con.execute("UPDATE traces SET device_properties = ? WHERE run_id = 'runa'",
                    [json.dumps([H200])])
    k = kernel_queries.kernel_details(tiny, RUNS).set_index("run_id")
    # per SM as Nsight Compute defines it: ~100 KB of shared memory allows 2 blocks of 4 warps of 64
    # (8 blocks over 132 SMs lower the GPU's average, not the occupancy of an SM that runs one)
    assert k.loc["runa", "occupancy_limiter"] == "shared memory"
    assert k.loc["runa", "theory_occupancy_pct"] == pytest.approx(100 * 2 * 4 / 64)
    assert k.loc["runb", "occupancy_limiter"] == "unknown"    # no device described
    assert {"tc_engine", "tc_precision"} <= set(k.columns)


def test_occupancy_per_name_is_time_weighted_over_launch_configs(tiny):
    with tiny.connect() as con:     # runa's second cudnn_fwd (10 of its 30 µs): 264 blocks, 12.5 %
        con.execute("UPDATE traces SET device_properties = ? WHERE run_id = 'runa'", [json.dumps([H200])])
        con.execute("UPDATE kernels SET grid_x = 264, est_occupancy_pct = 12.5 WHERE run_id = 'runa' "
                    "AND ts_ns = 120000")
    k = kernel_queries.kernel_details(tiny, ["runa"]).iloc[0]
    assert k["est_occupancy_pct"] == pytest.approx((0 * 20 + 12.5 * 10) / 30)
    # per SM both configurations run 2 blocks of 4 warps (shared memory allows 2): 12.5 % each
    assert k["theory_occupancy_pct"] == pytest.approx(12.5)
    assert k["launch_configs"] == 2
    assert k["launch_config_list"] == ("grid 8×1×1 block 128×1×1 168 regs 97.7 KiB smem: 1×; "
                                       "grid 264×1×1 block 128×1×1 168 regs 97.7 KiB smem: 1×")
    assert binary_size(131 * 1024) == "131.0 KiB" and binary_size(3 * 2**20) == "3.0 MiB"


def test_kernel_details_of_runs_without_kernels(tiny):
    with tiny.connect() as con:
        con.execute("DELETE FROM kernels WHERE run_id = 'runb'")
    k = kernel_queries.kernel_details(tiny, ["runb"])
    assert k.empty and {"kernel", "theory_occupancy_pct", "tc_engine"} <= set(k.columns)


def test_timeline_marks_are_relative_to_the_origin(tiny):
    m = timeline_queries.timeline_marks(tiny, "runa", 100_000, (0, 100_000))
    kernel = m[m["kind"] == "kernel"].iloc[0]
    assert (kernel["start_us"], kernel["end_us"], kernel["launch_api"]) == (20.0, 30.0, "cuLaunchKernel")
    assert kernel["registers_per_thread"] == 168 and kernel["shared_mem_bytes"] == 100_000
    assert set(m["lane"]) == {"thread 7 · depth 0", "thread 7 · depth 1", "thread 7 · depth 2",
                              "thread 7 · API", "GPU 0 · stream 7"}
    assert len(m) == 8 and (m["events"] == 1).all()


def test_timeline_marks_share_correlation_between_launch_and_kernel(tiny):
    m = timeline_queries.timeline_marks(tiny, "runa", 0, (0, 100_000))
    pair = m[m["correlation"] == 1]
    assert sorted(pair["kind"]) == ["driver", "kernel"]


def test_timeline_merges_sub_pixel_events(tiny):
    m = timeline_queries.timeline_marks(tiny, "runa", 0, (0, 100_000), width_px=4)   # 25 µs buckets
    merged = m[m["kind"] == "merged"]
    # two API calls in one bucket; a kernel (30–50 µs) and a copy (50–55 µs), each alone in its
    # bucket but in buckets next to each other, merge into one mark too
    assert sorted(merged[["lane", "events", "start_us"]].values.tolist()) == [
        ["GPU 0 · stream 7", 2, 30.0], ["thread 7 · API", 2, 16.0]]


def test_timeline_caps_marks_longest_first(tiny):
    m = timeline_queries.timeline_marks(tiny, "runa", 0, (0, 200_000), max_marks=3)
    assert len(m) == 3 and m["marks_before_cap"].iloc[0] == 6 + 5 + 2 + 2   # ops, APIs, kernels, copies
    assert m["dur_us"].tolist() == sorted(m["dur_us"], reverse=True)


def test_timeline_panels_read_every_run_in_one_query(tiny):
    shared = timeline_queries.timeline_panels(tiny, ["runb", "runa"], 0, (0, 100_000), shared_scale=True)
    assert [(run, step, domain) for run, step, domain, *_ in shared] == [
        ("runb", "(whole trace)", (0.0, 100.0)), ("runa", "ProfilerStep#1", (0.0, 100.0))]
    runb_marks = shared[0][3]
    assert sorted(runb_marks["kind"]) == ["kernel", "kernel", "op", "runtime", "runtime"]
    assert "run_id" not in runb_marks.columns
    own = timeline_queries.timeline_panels(tiny, ["runb", "runa"], 0, (0, 100_000), shared_scale=False)
    # each run its own scale: the window is a share of each run's own iteration (runb: 50 µs
    # long, runa: 100 µs), so the whole window shows each run whole
    assert own[0].domain == (0.0, 50.0) and own[1].domain == (0.0, 100.0)
    capped = timeline_queries.timeline_panels(tiny, RUNS, 1, (0, 100_000), True, max_marks_total=600)
    assert [len(p.marks) for p in capped] == [8, 5]   # 300 per panel: nothing is cut here


def test_timeline_rejects_an_empty_window(tiny):
    with pytest.raises(errors.QueryError, match="empty"):
        timeline_queries.timeline_marks(tiny, "runa", 0, (500, 500))


def test_launch_api_table(tiny):
    a = q.launch_api_table(tiny, RUNS).set_index(["run_id", "api"])
    assert a.loc[("runa", "cuLaunchKernel"), ["category", "api_kind", "kernels_launched_per_iter"]].tolist() == [
        "launch", "driver", 1]
    assert a.loc[("runa", "cudaMemcpyAsync"), ["category", "memops_launched_per_iter"]].tolist() == ["memcpy", 1]
    sync = a.loc[("runa", "cudaDeviceSynchronize")]
    assert (sync["category"], sync["calls_per_iter"], sync["api_us_per_iter"]) == ("sync", 0.5, 20.0)


def test_launch_targets_and_latency(tiny):
    t = q.launch_targets_table(tiny, RUNS)
    assert t[["run_id", "api", "target_name", "launches"]].values.tolist()[0] == [
        "runa", "cuLaunchKernel", "cudnn_fwd", 2]
    s = q.launch_latency_stats(tiny, RUNS).set_index("run_id")
    assert s.loc["runa", "p50_us"] == pytest.approx(10.5)    # latencies 14 and 7 µs
    assert s.loc["runb", "max_us"] == pytest.approx(14.0)    # 10-2 = 8 and 20-6 = 14 µs
    h = q.launch_latency_histogram(tiny, RUNS)
    assert h.groupby("run_id")["launches"].sum().tolist() == [2, 2]
    assert ((h["bin_start_us"] <= 14.0) & (h["bin_end_us"] > 7.0)).all()


def test_iteration_cpu_gpu(tiny):
    it = q.iteration_cpu_gpu(tiny, RUNS)
    cols = ["cpu_op_self_us", "launch_api_us", "sync_us", "gpu_kernel_us", "gpu_memop_us",
            "gpu_busy_us", "gpu_idle_us", "cpu_busy_us"]
    # runa step 1: the sdpa op (20 µs) and the 40 µs sync on the launching thread: 60 µs busy
    assert it[cols].values.tolist() == [[30.0, 2.0, 0.0, 20.0, 5.0, 25.0, 75.0, 30.0],
                                        [20.0, 1.0, 40.0, 10.0, 5.0, 15.0, 85.0, 60.0],
                                        [8.0, 4.0, 0.0, 10.0, 0.0, 10.0, 40.0, 8.0]]


def test_run_metrics_per_iteration_means_and_verdict(tiny):
    m = run_queries.run_metrics(tiny, ["runb", "runa"])
    assert m["run_id"].tolist() == ["runb", "runa"]
    a = m.set_index("run_id").loc["runa"]
    assert (a["iterations"], a["wall_us_per_iter"], a["gpu_busy_us_per_iter"]) == (2, 100.0, 20.0)
    assert (a["kernel_us_per_iter"], a["copy_us_per_iter"], a["exposed_copy_us_per_iter"]) == (15.0, 5.0, 5.0)
    assert (a["gpu_busy_pct"], a["gpu_idle_pct"], a["carried_pct"]) == (20.0, 80.0, 0.0)
    assert (a["sync_us_per_iter"], a["launch_api_us_per_iter"], a["kernels_per_iter"]) == (20.0, 1.5, 1.0)
    # the idle time split by what the host did (idle_causes.sql): 40 µs in the second iteration's
    # cudaDeviceSynchronize (150-190 µs), 30 µs in ops (beyond launch calls), 3 µs in launch calls,
    # the rest (87 µs) nothing recorded: over half of it unrecorded, so no verdict
    assert (a["idle_sync_us_per_iter"], a["idle_cpu_us_per_iter"], a["idle_launch_us_per_iter"]) == (20.0, 15.0, 1.5)
    assert a["idle_unrecorded_us_per_iter"] == 43.5 and a["bound"] == "unrecorded"


def test_op_self_time_limit_and_shares(tiny):
    ops = q.op_self_time(tiny, RUNS, limit=1)
    assert ops[["run_id", "op", "self_us_per_iter"]].values.tolist() == [
        ["runa", "aten::scaled_dot_product_attention", 17.5],
        ["runb", "aten::_flash_attention_forward", 8.0]]
    assert ops["self_share_pct"].tolist() == [70.0, 100.0]


def test_run_cpu_summary_first_vs_later(tiny):
    s = q.run_cpu_summary(tiny, RUNS).set_index("run_id")
    assert s.loc["runa", ["first_iter_cpu_us", "later_iter_cpu_us", "iterations"]].tolist() == [
        30.0, 20.0, 2]
    assert s.loc["runa", "gpu_busy_us"] == 20.0                # 15 µs kernels + 5 µs copies
    assert s.loc["runa", ["cpu_busy_us", "sync_us", "gpu_busy_pct"]].tolist() == [45.0, 20.0, 20.0]
    assert pd.isna(s.loc["runb", "later_iter_cpu_us"])
    # over half of either run's idle time has nothing recorded on the host: no verdict (test above)
    assert s.loc["runa", "bound"] == "unrecorded" and s.loc["runb", "bound"] == "unrecorded"


def test_cold_warm_table_pairs_runs_of_one_shape(tiny):
    with tiny.connect() as con:     # runw: runa's variant and shape, warm, 0.4 µs of CPU
        con.execute("INSERT INTO traces (run_id, name, source, added_at, size_bytes, events,"
                    " kernels, skipped_events, variant, seq_len, dtype, cold, start_ns, end_ns)"
                    " VALUES ('runw', 'w', 'captured', now(), 1, 1, 1, 0, 'cudnn', 1024, 'bf16',"
                    " false, 0, 1000)")
        con.execute("INSERT INTO ops (run_id, op_id, depth, cat, name, ts_ns, dur_ns, self_ns)"
                    " VALUES ('runw', 1, 0, 'cpu_op', 'aten::x', 0, 500, 400)")
    tiny.upkeep()
    t = q.cold_warm_table(tiny, ["runa", "runb", "runw"])
    assert t[["variant", "seq_len", "cold_runs", "warm_runs"]].values.tolist() == [["cudnn", 1024, 1, 1]]
    # runa (cold): (30 + 20) / 2 µs of CPU per iteration; runw (warm): 0.4 µs
    assert t.loc[0, ["cold_cpu_op_self_us", "warm_cpu_op_self_us", "cpu_cold_over_warm"]].tolist() == [
        25.0, 0.4, pytest.approx(62.5)]
    assert q.cold_warm_table(tiny, RUNS).empty       # runb is an upload: no pair


def test_cudnn_op_time_counts_outermost_ops_and_their_kernels(tiny):
    c = q.cudnn_op_time(tiny, RUNS)
    assert c[["run_id", "iteration", "cudnn_calls", "cudnn_cpu_us", "cudnn_kernel_us"]].values.tolist() == [
        ["runa", 0, 1, 10.0, 20.0], ["runa", 1, 1, 5.0, 10.0]]


def test_kernel_sequence_of_one_iteration(tiny):
    a = pair_queries.kernel_sequence(tiny, "runa", 1)
    assert a[["seq", "name", "start_us", "launch_api"]].values.tolist() == [
        [0, "cudnn_fwd", 20.0, "cuLaunchKernel"],
        [1, "Memcpy DtoD (Device -> Device)", 35.0, "cudaMemcpyAsync"]]


def test_kernel_alignment_marks_work_in_one_run_only(tiny):
    with tiny.connect() as con:     # runc: runa's iteration 1 without the copy
        con.execute("INSERT INTO traces (run_id, name, source, added_at, size_bytes, events,"
                    " kernels, skipped_events, start_ns, end_ns)"
                    " VALUES ('runc', 'c.json', 'uploaded', now(), 1, 1, 1, 0, 0, 100000)")
        con.execute("INSERT INTO kernels (run_id, name, ts_ns, dur_ns, correlation)"
                    " VALUES ('runc', 'cudnn_fwd', 5000, 9000, 1)")
    tiny.upkeep()
    aligned = pair_queries.kernel_alignment(tiny, "runa", "runc", 1)
    assert aligned["status"].tolist() == ["same", "only in a"]
    assert aligned.loc[1, "name_a"].startswith("Memcpy") and pd.isna(aligned.loc[1, "name_b"])
    assert aligned.loc[0, ["dur_us_a", "dur_us_b"]].tolist() == [10.0, 9.0]


def test_kernel_sequence_of_an_unknown_run(tiny):
    with pytest.raises(UnknownRunError, match="nope"):
        pair_queries.kernel_sequence(tiny, "nope", 0)


def test_kernel_and_api_deltas(tiny):
    k = pair_queries.kernel_delta(tiny, "runa", "runb").set_index("kernel")
    assert k.loc["flash_fwd", ["calls_b", "us_b", "presence"]].tolist() == [2.0, 10.0, "only in b"]
    assert k.loc["cudnn_fwd", ["calls_a", "us_delta", "presence"]].tolist() == [1.0, -15.0, "only in a"]
    api = pair_queries.launch_api_delta(tiny, "runa", "runb").set_index("api")
    assert api.loc["cudaLaunchKernel", "calls_delta"] == 2.0
    assert api.loc["cuLaunchKernel", "presence"] == "only in a"
    with pytest.raises(errors.QueryError, match="two different runs"):
        pair_queries.kernel_delta(tiny, "runa", "runa")


def test_kernel_details_flags_a_reported_zero_that_really_ran(fixture_store):
    store, ids = fixture_store
    details = kernel_queries.kernel_details(store, [ids["tiny_naive.json"]]).set_index("kernel")
    cudnn = details.loc["cudnn_generated_fort_native_sdpa_sm90_flash_fprop"]
    # 196,608 B of shared memory per block: Kineto's 48 KB default fits none, so it reports 0 %
    assert cudnn["est_occupancy_pct"] == 0 and cudnn["theory_occupancy_pct"] > 0
    assert bool(cudnn["reads_zero_but_ran"])
    assert not details["reads_zero_but_ran"].drop(index=cudnn.name).any()
