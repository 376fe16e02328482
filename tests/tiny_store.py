"""A hand-written store whose every number can be checked by hand (rows inserted directly).

Run ``runa`` (captured, cold, cuDNN): two iterations of 100 µs; each launches one ``cudnn_fwd``
kernel with ``cuLaunchKernel`` and one DtoD memcpy; iteration 1 ends with a 40 µs
``cudaDeviceSynchronize``. Run ``runb`` (uploaded, flash): no iterations, two ``flash_fwd``
kernels launched with ``cudaLaunchKernel``. Times below are nanoseconds. Used by test_queries,
test_charts and test_narrative through the ``tiny`` and ``labels`` fixtures of conftest.py.
"""
from __future__ import annotations

RUNS = ["runa", "runb"]
TRACES = [
    # run_id, name, source, variant, seq_len, dtype, cold, start_ns, end_ns
    ("runa", "cudnn.json", "captured", "cudnn", 1024, "bf16", True, 0, 200_000),
    ("runb", "flash.json", "uploaded", None, None, None, None, 0, 50_000),
]
ITERATIONS = [("runa", 0, "ProfilerStep#1", 0, 100_000), ("runa", 1, "ProfilerStep#2", 100_000, 200_000)]
# run_id, op_id, parent_id, depth, cat, name, tid, ts_ns, dur_ns, self_ns, external_id, iteration
OPS = [
    ("runa", 1, None, 0, "user_annotation", "ProfilerStep#1", "7", 0, 100_000, 70_000, 1, 0),
    ("runa", 2, 1, 1, "cpu_op", "aten::scaled_dot_product_attention", "7", 10_000, 30_000, 20_000, 2, 0),
    ("runa", 3, 2, 2, "cpu_op", "aten::_cudnn_attention_forward", "7", 15_000, 10_000, 10_000, 3, 0),
    ("runa", 4, None, 0, "user_annotation", "ProfilerStep#2", "7", 100_000, 100_000, 80_000, 4, 1),
    ("runa", 5, 4, 1, "cpu_op", "aten::scaled_dot_product_attention", "7", 110_000, 20_000, 15_000, 5, 1),
    ("runa", 6, 5, 2, "cpu_op", "aten::_cudnn_attention_forward", "7", 112_000, 5_000, 5_000, 6, 1),
    ("runb", 1, None, 0, "cpu_op", "aten::_flash_attention_forward", "9", 1_000, 8_000, 8_000, 11, None),
]
# run_id, name, api_kind, tid, ts_ns, dur_ns, correlation, external_id, iteration
LAUNCHES = [
    ("runa", "cuLaunchKernel", "driver", "7", 16_000, 2_000, 1, 3, 0),
    ("runa", "cudaMemcpyAsync", "runtime", "7", 20_000, 1_000, 2, 3, 0),
    ("runa", "cuLaunchKernel", "driver", "7", 113_000, 1_000, 3, 6, 1),
    ("runa", "cudaMemcpyAsync", "runtime", "7", 115_000, 1_000, 4, 6, 1),
    ("runa", "cudaDeviceSynchronize", "runtime", "7", 150_000, 40_000, 5, None, 1),
    ("runb", "cudaLaunchKernel", "runtime", "9", 2_000, 3_000, 21, 11, None),
    ("runb", "cudaLaunchKernel", "runtime", "9", 6_000, 1_000, 22, 11, None),
]
# run_id, name, stream, ts_ns, dur_ns, grid, block, regs, smem, occ, correlation, external_id, iteration
KERNELS = [
    ("runa", "cudnn_fwd", 7, 30_000, 20_000, (8, 1, 1), (128, 1, 1), 168, 100_000, 0.0, 1, 3, 0),
    ("runa", "cudnn_fwd", 7, 120_000, 10_000, (8, 1, 1), (128, 1, 1), 168, 100_000, 0.0, 3, 6, 1),
    ("runb", "flash_fwd", 7, 10_000, 4_000, (4, 2, 1), (64, 1, 1), 96, 20_000, 25.0, 21, 11, None),
    ("runb", "flash_fwd", 7, 20_000, 6_000, (4, 2, 1), (64, 1, 1), 96, 20_000, 25.0, 22, 11, None),
]
# run_id, kind, name, stream, ts_ns, dur_ns, bytes, correlation, iteration
MEMOPS = [
    ("runa", "memcpy", "Memcpy DtoD (Device -> Device)", 7, 50_000, 5_000, 4096, 2, 0),
    ("runa", "memcpy", "Memcpy DtoD (Device -> Device)", 7, 135_000, 5_000, 4096, 4, 1),
]


def insert_tiny(con) -> None:
    for t in TRACES:
        con.execute("INSERT INTO traces (run_id, name, source, added_at, size_bytes, events, kernels,"
                    " skipped_events, variant, seq_len, dtype, cold, start_ns, end_ns)"
                    " VALUES (?, ?, ?, now(), 1, 1, 1, 0, ?, ?, ?, ?, ?, ?)", list(t))
    con.executemany("INSERT INTO iterations VALUES (?, ?, ?, ?, ?)", ITERATIONS)
    con.executemany("INSERT INTO ops (run_id, op_id, parent_id, depth, cat, name, tid, ts_ns, dur_ns,"
                    " self_ns, external_id, iteration) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", OPS)
    con.executemany("INSERT INTO launches (run_id, name, api_kind, tid, ts_ns, dur_ns, correlation,"
                    " external_id, iteration) VALUES (?,?,?,?,?,?,?,?,?)", LAUNCHES)
    con.executemany("INSERT INTO kernels (run_id, name, device, stream, ts_ns, dur_ns, grid_x, grid_y,"
                    " grid_z, block_x, block_y, block_z, registers_per_thread, shared_mem_bytes,"
                    " est_occupancy_pct, correlation, external_id, iteration)"
                    " VALUES (?,?,0,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [(k[0], k[1], k[2], k[3], k[4], *k[5], *k[6], *k[7:]) for k in KERNELS])
    con.executemany("INSERT INTO memops (run_id, kind, name, device, stream, ts_ns, dur_ns, bytes,"
                    " correlation, iteration) VALUES (?,?,?,0,?,?,?,?,?,?)", MEMOPS)
    from profiler.storage import metrics  # rows inserted by hand: compute what ingest would keep

    metrics.store_runs(con, [t[0] for t in TRACES])
