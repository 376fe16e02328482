"""Issue 21, classes 4 and 5: FLOPs for today's attention kernels (flashinfer, FlashAttention-4,
flex's cold run), the true reason for GPU time the model cannot price, peaks per SKU and no
share of peak above 100 %.

Each check computes its truth from the raw trace JSON (or a fixture built from the issue's
kernel names, shapes and devices), never from the code under test."""
from __future__ import annotations

import json
import re

import pytest

from profiler.analysis.reads import kernel_queries, op_costs, op_pricing, roofline, unmodelled
from profiler.analysis.model import skus
from profiler.analysis.model.kernel_names import parse
from profiler.analysis.model.tensor_cores import classify
from profiler.cli import ops as ops_cli
from profiler.storage.store import Store
from tests.conftest import SAMPLES
from tests.truth_traces import (B200, BMM, FMHA, MI250, QWEN, SAMPLE_RUNS, V100, event, op, raw, real_store,
                                sample_store, write)

third_party = pytest.mark.third_party


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("truth"))


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return real_store(tmp_path_factory.mktemp("truth"))


# ── class 4: attention rows for flashinfer, FlashAttention-4 and flex's cold run ───────────────

@pytest.mark.parametrize("name", SAMPLE_RUNS)
def test_attention_kernels_without_an_op_get_a_row_and_a_point(samples, name):
    store, ids = samples
    trace = raw(SAMPLES / "default" / f"{name}.json.gz")
    shape = trace["attention_run"]
    b, h, n, d = (int(shape[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
    pairs = n * (n + 1) // 2 if shape["causal"] else n * n
    flops = 4 * b * h * pairs * d                          # QK^T and PV, 2 FLOPs per multiply-add
    attention = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"
                 and re.search(r"flashinfer::.*Prefill|flash_attncute|flex_attention", e["name"])]
    assert attention
    rows = [r for r in ops_cli.rows(store, ids[name], "attention")]
    assert len(rows) == 1, rows
    row = rows[0]
    source = "trace" if name.startswith("flash_attn_4") else "run shape"   # FA4: FlashAttnFunc's own inputs
    assert row["flops"] == flops and row["shape_source"] == source and row["calls"] == len(attention)
    assert row["kernel_us_mean"] * row["calls"] == pytest.approx(sum(e["dur"] for e in attention), rel=1e-9)
    assert row["pct_of_peak"] is None or row["pct_of_peak"] <= 100
    assert not (op_costs.attention_in_trace(store, [ids[name]]).query("kind == 'attention'").empty)
    assert not roofline.roofline_table(store, [ids[name]]).empty


def test_flash_attn_func_is_priced_from_its_own_inputs():
    from profiler.analysis.model import costmodel as cm
    q = [2, 512, 16, 128]                                    # (batch, seq, heads, dim)
    dims, types = [q, q, q, *[[]] * 20], ["c10::BFloat16"] * 3 + [""] * 20
    concrete = [""] * 23
    concrete[6] = "True"                                     # FA4 4.0.0b36: causal is the 7th input
    got = cm.op_cost("FlashAttnFunc", dims, types, concrete)
    assert got.flops == 4 * 2 * 16 * (512 * 513 // 2) * 128 and got.kind == "attention"
    assert cm.op_cost("FlashAttnFunc", dims[:20], types[:20], concrete[:20]) is None      # unknown signature
    assert "which one is causal" in unmodelled.reason("FlashAttnFunc", json.dumps(dims[:20]), json.dumps(types[:20]))


def test_every_not_modelled_line_states_the_real_reason(tmp_path):
    bf16 = "c10::BFloat16"
    events = [
        *op(1, "vllm::unified_attention_with_output", 10, FMHA, 40,
             [[888, 8, 64], [888, 1, 64], [888, 1, 64], [888, 8, 64], []], [bf16, bf16, bf16, bf16, "Scalar"]),
        *op(2, "aten::mm", 100, "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_NNT", 30),             # no dims
        *op(3, "aten::add", 200, "void at::native::vectorized_elementwise_kernel<4>", 7,
             [[64, 64], [64, 64], []], ["c10::Float4_e2m1fn_x2", "c10::Float4_e2m1fn_x2", "Scalar"]),
        *op(4, "vllm::moe_forward", 300, BMM, 90, [[888, 1024]], [bf16]),
        *op(5, "aten::mm", 400, "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_NNT", 20,
             [[888, 1024], [1024, 512]], [bf16, bf16]),
    ]
    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(write(tmp_path, "vllm.json", events, B200)).run_id
    got = {(r["op"], r["reason"]) for r in unmodelled.unmodelled(store, run)}
    got = {(op, why.split(" (its")[0]) for op, why in got}
    # vLLM's attention is priced from the step annotation around it; this trace has none
    got = {(op, why.split(": the cached")[0]) for op, why in got}
    assert got == {("vllm::unified_attention_with_output", "no serving step annotation (execute_…) encloses the call"),
                   ("aten::mm", "dims missing"),
                   ("aten::add", "dtype unknown (c10::Float4_e2m1fn_x2)"), ("vllm::moe_forward", "op not modelled")}
    rows = ops_cli.rows(store, run, "all")
    assert [(r["op"], r["flops"]) for r in rows] == [("aten::mm", 2 * 888 * 1024 * 512)]   # the one with dims
    assert "tcgen05" in rows[0]["kernels"] and "wgmma" not in rows[0]["kernels"]          # nvjet on a B200
    text = "\n".join(unmodelled.lines(unmodelled.unmodelled(store, run)))
    assert "record_shapes" not in text and "needs" not in text      # the old, false reason


def test_an_attention_kernel_with_no_op_and_no_run_shape_says_so(tmp_path):
    events = [event("cuda_runtime", "cudaLaunchKernelExC", 10, 2, None, 7, cbid=430),
              event("kernel", FMHA, 30, 50, None, 7)]
    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(write(tmp_path, "fmha.json", events, B200)).run_id
    rows = unmodelled.unmodelled(store, run)
    assert [(r["op"], r["reason"], r["kernel_ns"]) for r in rows] == [(None, "no launching op", 50_000)]
    assert classify(FMHA).op == "attention" and classify(BMM).op == "gemm" and classify(BMM).precision == "fp4"
    assert parse(BMM).library == parse(FMHA).library == "TensorRT-LLM (trtllm-gen)"
    assert parse("bmm_kernel_generic").library != "TensorRT-LLM (trtllm-gen)"


# ── class 5: peaks per SKU, no share above 100 % ───────────────────────────────────────────────

# The datasheets (GB/s), typed from the vendors' pages, independent of profiler/analysis/model/skus.py.
SHEET_GBPS = {("NVIDIA A100-SXM4-40GB", 42_505_273_344, 108): 1555, ("NVIDIA A100-SXM4-80GB", 85_198_045_184, 108): 2039,
              ("NVIDIA H100 PCIe", 85_017_755_648, 114): 2000, ("NVIDIA H100 80GB HBM3", 85_018_279_936, 132): 3350,
              ("NVIDIA H100 NVL", 99_989_127_168, 132): 3900, ("NVIDIA H200", 150_109_880_320, 132): 4800,
              ("AMD Radeon Graphics", 68_702_699_520, 104): 1638.4, ("Tesla V100-SXM2-32GB", 34_079_637_504, 80): 900}


@pytest.mark.parametrize("key", SHEET_GBPS, ids=[k[0] for k in SHEET_GBPS])
def test_sku_from_name_memory_and_sms(key):
    name, memory, sms = key
    found = skus.identify(name, memory, sms, None, "amd" if "AMD" in name else "nvidia")
    assert found.device.peaks.memory_gbps == pytest.approx(SHEET_GBPS[key])
    assert found.exact and "datasheet" in found.device.peaks.source


def test_clock_decides_between_skus_the_rest_cannot_tell():
    h200 = 150_109_880_320
    nvl = skus.identify("NVIDIA Graphics Device", h200, 132, 1_785_000, "nvidia")
    sxm = skus.identify("NVIDIA Graphics Device", h200, 132, 1_980_000, "nvidia")
    assert (nvl.device.name, nvl.exact, sxm.device.name, sxm.exact) == ("NVIDIA H200 NVL", True, "NVIDIA H200", True)
    assert nvl.device.peaks.peak_tflops("tensor core", "bf16") < sxm.device.peaks.peak_tflops("tensor core", "bf16")
    unsure = skus.identify("NVIDIA Graphics Device", h200, 132, None, "nvidia")
    assert not unsure.exact and "fit 2 SKUs" in unsure.evidence


@third_party
@pytest.mark.parametrize("path", [MI250, QWEN, V100], ids=lambda p: p.name[:30])
def test_real_traces_rated_against_their_sku(real, path):
    store, ids = real
    props = raw(path)["deviceProperties"][0]
    expected = SHEET_GBPS[(props["name"], props["totalGlobalMem"], props["numSms"])]
    device = op_pricing.device_of(kernel_queries.run_devices(store, [ids[path.name]])[ids[path.name]])
    assert device.peaks.memory_gbps == pytest.approx(expected)
    for r in ops_cli.rows(store, ids[path.name], "all"):
        assert all(r[k] is None or r[k] <= 100 for k in ("pct_of_peak", "pct_of_bandwidth", "pct_of_roof")), r


A100_40 = {**B200, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42_505_273_344, "computeMajor": 8, "numSms": 108,
           "sharedMemPerMultiprocessor": 167936, "sharedMemPerBlockOptin": 166912}


@pytest.mark.parametrize("device,blamed", [(A100_40, "model"), ({**A100_40, "name": "NVIDIA A100", "numSms": 0,
                                                                   "totalGlobalMem": 0}, "peak")])
def test_a_share_above_100_percent_is_never_shown(tmp_path, device, blamed):
    """aten::add over 2 x 64 MiB fp32 in 80 µs: 2.5 TB/s of bytes counted, above both A100 parts' peaks."""
    x = [4096, 4096]
    nbytes = 3 * 4096 * 4096 * 4                      # read a and b, write the sum
    events = op(1, "aten::add", 10, "void at::native::vectorized_elementwise_kernel<4>", 80, [x, x, []],
                 ["float", "float", "Scalar"])
    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(write(tmp_path, "a100.json", events, device)).run_id
    (row,) = ops_cli.rows(store, run, "all")
    assert row["bytes"] == nbytes and row["tbps"] * 1e3 / 2039 > 1      # truly above either part's peak
    assert row["pct_of_bandwidth"] is None and row["suspect"].startswith(blamed)
    assert "% of peak not shown" in ops_cli.format_table([row])


def test_bytes_of_broadcast_and_in_place_adds():
    from profiler.analysis.model import costmodel as cm
    x, bias = [4096, 1024], [1024]
    got = cm.op_cost("aten::add_", [x, bias, []], ["float", "float", "Scalar"], [])
    assert got.bytes == (2 * 4096 * 1024 + 1024) * 4           # read self and the bias, write self
    got = cm.op_cost("aten::mul", [x, []], ["c10::BFloat16", "double"], [])
    assert got.bytes == 2 * 4096 * 1024 * 2                    # x * 0.125: the number is an argument
    got = cm.op_cost("aten::copy_", [[], [], []], ["c10::Half", "c10::Half", "Scalar"], [])
    assert got.bytes == 2 + 2                                  # a scalar copy: one element each way


def test_a_point_above_its_roof_is_not_drawn():
    import pandas as pd
    from profiler.present import curve_charts
    roof = pd.DataFrame({"run_id": ["under", "over"], "tflops": [10.0, 900.0], "intensity": [5.0, 5.0],
                         "suspect": [None, "model: TB/s above 100 % of the identified SKU's peak"]})
    lines = pd.DataFrame({"gpu_name": ["g"] * 2, "ceiling": ["bf16 tensor core"] * 2, "intensity": [1.0, 100.0],
                          "tflops": [1.0, 100.0]})
    spec = json.dumps(curve_charts.roofline_chart(roof, lines, {"under": "UNDER-RUN", "over": "OVER-RUN"}, roof).to_dict())
    assert '"run": "UNDER-RUN"' in spec and '"run": "OVER-RUN"' not in spec   # the data rows drawn
