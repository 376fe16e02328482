"""Op-level cost model: hand-computed FLOPs and bytes on small shapes; the Qwen H100 trace's SDPA
against a hand value and its own kernel times (plain json); the H200 samples' bytes and engines."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.analysis.model import costmodel as cm
from profiler.analysis.reads import op_costs, op_tree
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES

BF16, F32 = "c10::BFloat16", "float"
QWEN = SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def test_attention_not_causal_by_hand():
    # 2 matmuls x 2 FLOPs x (1*2*4*4 = 32 scores) x 8 = 1024; Q, K, V, O: 4 x 1*2*4*8 bf16 = 512 bytes
    cost = cm.op_cost("aten::scaled_dot_product_attention", [[1, 2, 4, 8]] * 3 + [[]],
                      [BF16] * 3 + [""], ["", "", "", "", "0.", "False", "", "False"])
    assert (cost.flops, cost.bytes, cost.dtype, cost.kind) == (1024, 512, "bf16", "attention")


def test_attention_causal_keeps_the_lower_triangle():
    # rows see 1, 2, 3, 4 keys: 10 pairs per head instead of 16
    cost = cm.op_cost("aten::_scaled_dot_product_flash_attention", [[1, 2, 4, 8]] * 3 + [[]] * 4,
                      [BF16] * 3 + ["Scalar"] * 4, ["", "", "", "0.", "True", "False", ""])
    assert cost.flops == 4 * 2 * 10 * 8 and "causal" in cost.shape
    assert cm.causal_pairs(3, 5, True) == 1 + 2 + 3


def test_attention_gqa_reads_fewer_key_value_bytes():
    # 8 query heads, 2 key/value heads: FLOPs follow the query heads, bytes the real tensors
    q, kv = [1, 8, 16, 64], [1, 2, 16, 64]
    cost = cm.op_cost("aten::scaled_dot_product_attention", [q, kv, kv, [], [], [], [], []],
                      [F32] * 3 + [""] * 5, ["", "", "", "", "0.", "False", "", "True"])
    assert cost.flops == 4 * 8 * 16 * 16 * 64
    assert cost.bytes == 4 * (8 * 16 * 64 + 2 * 16 * 64 + 2 * 16 * 64 + 8 * 16 * 64)
    assert "gqa 8/2" in cost.shape


def test_flash_forward_takes_batch_seq_heads_dim():
    # _flash_attention_forward's inputs are (batch, seq, heads, dim); is_causal is argument 8
    dims = [[2, 16, 4, 32]] * 3 + [[]] * 12
    concrete = [""] * 8 + ["True"] + [""] * 6
    cost = cm.op_cost("aten::_flash_attention_forward", dims, [BF16] * 3 + [""] * 12, concrete)
    assert cost.flops == 4 * 2 * 4 * (16 * 17 // 2) * 32


@pytest.mark.parametrize("name,dims,types,flops,nbytes", [
    ("aten::mm", [[4, 3], [3, 5]], [F32, F32], 2 * 4 * 5 * 3, 4 * (12 + 15 + 20)),
    ("aten::bmm", [[2, 4, 3], [2, 3, 5]], [BF16, BF16], 2 * 2 * 4 * 5 * 3, 2 * (24 + 30 + 40)),
    ("aten::addmm", [[5], [4, 3], [3, 5], [], []], [F32] * 3 + ["Scalar"] * 2,
     2 * 4 * 5 * 3, 4 * (5 + 12 + 15 + 20)),
    ("aten::baddbmm", [[2, 4, 5], [2, 4, 3], [2, 3, 5], [], []], [F32] * 3 + ["Scalar"] * 2,
     2 * 2 * 4 * 5 * 3, 4 * (40 + 24 + 30 + 40)),
    ("aten::matmul", [[2, 4, 3], [3, 5]], [F32, F32], 2 * 2 * 4 * 5 * 3, 4 * (24 + 15 + 40)),
    ("aten::linear", [[2, 4, 3], [5, 3], [5]], [BF16] * 3, 2 * 8 * 5 * 3, 2 * (24 + 15 + 40 + 5)),
])
def test_gemms_by_hand(name, dims, types, flops, nbytes):
    cost = cm.op_cost(name, dims, types, [])
    assert (cost.kind, cost.flops, cost.bytes) == ("gemm", flops, nbytes)


@pytest.mark.parametrize("name,dims,types,flops,nbytes", [
    ("aten::_softmax", [[2, 3, 4], [], []], [BF16, "Scalar", "Scalar"], 5 * 24, 2 * 24 * 2),
    ("aten::masked_fill_", [[2, 4, 4], [4, 4], []], [BF16, "bool", "Scalar"], 32, 2 * 32 + 16 + 2 * 32),
    ("aten::copy_", [[8], [8], []], [BF16, F32, "Scalar"], 0, 4 * 8 + 2 * 8),   # fp32 -> bf16 cast
    ("aten::mul", [[3, 4], []], [F32, "Scalar"], 12, 4 * 12 * 2),
    ("aten::triu", [[4, 4], []], ["bool", "Scalar"], 16, 32),
])
def test_memory_ops_by_hand(name, dims, types, flops, nbytes):
    cost = cm.op_cost(name, dims, types, [])
    assert (cost.kind, cost.flops, cost.bytes) == ("memory", flops, nbytes)


def test_ops_the_model_cannot_price_give_none():
    assert cm.op_cost("aten::relu", [[4]], [F32], []) is None
    assert cm.op_cost("aten::mm", None, None, None) is None
    assert cm.op_cost("aten::scaled_dot_product_attention", [[1, 2]], [F32], []) is None


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("qwen") / "q.duckdb")
    return store, store.ingest(QWEN).run_id


def _sdpa_kernel_us_by_hand() -> tuple[int, float]:
    """Plain json: SDPA calls, and the mean time of the flash kernels those calls launched (the
    kernel whose correlation id a launch inside an SDPA call carries)."""
    events = json.load(gzip.open(QWEN))["traceEvents"]
    sdpa = [e for e in events if e.get("name") == "aten::scaled_dot_product_attention" and e.get("ph") == "X"]
    launches = [e for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})]
    inside = {l["args"]["correlation"] for l in launches
              if any(s["ts"] <= l["ts"] <= s["ts"] + s["dur"] and s["tid"] == l["tid"] for s in sdpa)}
    kernels = [e["dur"] for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in inside]
    return len(sdpa), sum(kernels) / len(sdpa)


@pytest.mark.third_party
def test_qwen_sdpa_flops_and_tflops_by_hand(qwen):
    store, run = qwen
    table = op_costs.ops_table(store, [run], "attention")
    (row,) = table.to_dict("records")
    # B=16, H=16, N=559, d=64, causal: 4 x 64 x 16 x 16 x (559 x 560 / 2)
    flops = 4 * 64 * 16 * 16 * (559 * 560 // 2)
    assert (row["op"], row["backend"], row["dtype"]) == ("aten::scaled_dot_product_attention", "flash", "bf16")
    assert row["flops"] == flops == 10_257_694_720
    assert row["bytes"] == 4 * 16 * 16 * 559 * 64 * 2
    calls, kernel_us = _sdpa_kernel_us_by_hand()
    assert row["calls"] == calls >= 24
    assert row["kernel_us_mean"] == pytest.approx(kernel_us, rel=1e-6)
    assert row["tflops"] == pytest.approx(flops / (kernel_us * 1e-6) / 1e12, rel=1e-6)
    assert row["engine"] == "tensor core" and row["peak_tflops"] == 989.4   # H100 SXM bf16
    assert "FlashAttention-2" in row["kernels"] and "sm80" in row["kernels"]


@pytest.mark.third_party
def test_qwen_gemms_are_priced_from_their_shapes(qwen):
    store, run = qwen
    gemms = op_costs.ops_table(store, [run], "gemm")
    mm = gemms[(gemms["op"] == "aten::mm") & (gemms["shape"] == "8944x1024 @ 1024x2816")].iloc[0]
    assert mm["flops"] == 2 * 8944 * 2816 * 1024
    assert (gemms["tflops"] < gemms["peak_tflops"]).all()


def test_samples_naive_moves_ten_times_the_bytes_of_flash(sample_store):
    from profiler.analysis.reads import roofline, run_queries
    store, ids = sample_store
    calls = op_costs.op_calls(store, [ids["naive"], ids["sdpa_flash"]])
    totals = roofline.run_totals(calls, run_queries.run_iterations(store, list(ids.values()))).set_index("run_id")
    naive, flash = totals.at[ids["naive"], "bytes_per_iter"], totals.at[ids["sdpa_flash"], "bytes_per_iter"]
    assert flash == 4 * 8 * 16 * 1024 * 64 * 2           # Q, K, V, O once
    assert naive >= 10 * flash
    # the score matrix: 8x16x1024x1024 bf16, read and written by each memory-bound op
    score = 8 * 16 * 1024 * 1024 * 2
    softmax = calls[(calls["run_id"] == ids["naive"]) & (calls["op"] == "aten::_softmax")]
    assert set(softmax["bytes"]) == {2 * score}


def test_samples_math_gemms_run_fp32_on_cuda_cores(sample_store):
    store, ids = sample_store
    gemms = op_costs.ops_table(store, [ids["sdpa_math"]], "gemm")
    assert len(gemms) == 2
    assert set(gemms["engine"]) == {"CUDA core"} and set(gemms["dtype"]) == {"fp32"}
    assert set(gemms["peak_tflops"]) == {66.9}
    assert gemms["kernels"].str.contains("ffma").all()


def test_owners_walk_up_the_op_tree():
    import numpy as np

    # 0 sdpa -> 1 _sdpa_flash -> 2 _flash_fwd (launches); 3 sdpa -> 4 math -> 5 matmul -> 6 bmm
    # (launches); 7 clone -> 8 copy_ (launches); 9 relu (launches, not modelled)
    parent = np.array([-1, 0, 1, -1, 3, 4, 5, -1, 7, -1])
    A, M, X = op_tree.ATTENTION, op_tree.MODEL, op_tree.DECOMPOSED
    family = np.array([A, A, A, A, X, M, M, M, M, 0])
    owner, backend = op_tree.owners(parent, family, np.array([2, 6, 8, 9, -1]))
    assert owner.tolist() == [0, 6, 8, -1, -1]          # SDPA owns flash; math's bmm owns itself
    assert backend.tolist() == [2, -1, -1, -1, -1]      # the innermost attention op: _flash_fwd


@pytest.mark.third_party
def test_older_traces_link_launches_by_time(tmp_path):
    # the DLRM V100 trace gives launch calls their correlation id as External id: the model finds
    # the op enclosing each launch on its thread instead
    store = Store(tmp_path / "d.duckdb")
    run = store.ingest(SHARED_TRACES / "param__dlrm_kineto__worker0_step_12.1694128201545.pt.trace.json").run_id
    gemms = op_costs.ops_table(store, [run], "gemm")
    mm = gemms[(gemms["op"] == "aten::mm") & (gemms["shape"] == "16x512 @ 512x512")].iloc[0]
    assert (mm["flops"], mm["dtype"], mm["engine"]) == (2 * 16 * 512 * 512, "fp32", "CUDA core")
    assert "volta_sgemm" in mm["kernels"] and mm["peak_tflops"] == 15.7      # V100 fp32
