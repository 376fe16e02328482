"""Issue 21, classes 3-5: one engine classifier on the run's vendor, FLOPs for today's attention
kernels, the true reason for what is not modelled, peaks per SKU and no share above 100 %.

Each check computes its truth from the raw trace JSON (or from a fixture built here from the
kernel names and shapes of the issue), never from the code under test."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from profiler.analysis import kernel_names, op_costs, queries, roofline, skus, tensor_cores, unmodelled
from profiler.analysis.kernel_names import parse
from profiler.analysis.tensor_cores import AMD, CUDA, NVIDIA, TENSOR, VECTOR_AMD, classify
from profiler.cli import ops as ops_cli
from profiler.storage.store import Store
from tests.conftest import SAMPLES, SHARED_TRACES

MI250 = SHARED_TRACES / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
QWEN = SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
V100 = SHARED_TRACES / "hta__ns_resolution__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
third_party = pytest.mark.third_party
NVIDIA_TERMS = re.compile(r"tensor core|CUDA core|wgmma|tcgen05|nvjet|cuBLAS", re.I)
SAMPLE_RUNS = ("flashinfer_fa2_b8_h16_s1024_d64_bf16_causal_warm", "flashinfer_fa3_b8_h16_s1024_d64_bf16_causal_cold",
               "flash_attn_4_b8_h16_s1024_d64_bf16_causal_warm", "flex_b8_h16_s1024_d64_bf16_causal_cold")


def _raw(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    return data if isinstance(data, dict) else {"traceEvents": data}


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("truth") / "samples.duckdb")
    return store, {n: store.ingest(SAMPLES / "default" / f"{n}.json.gz").run_id for n in SAMPLE_RUNS}


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("truth") / "real.duckdb")
    return store, {p.name: store.ingest(p).run_id for p in (MI250, QWEN, V100) if p.is_file()}


# ── class 3: one classifier, given the vendor ──────────────────────────────────────────────────

@third_party
def test_amd_run_has_no_nvidia_term_in_ops_kernels_or_roofline(real):
    store, ids = real
    run = ids[MI250.name]
    raw = [e["name"] for e in _raw(MI250)["traceEvents"] if e.get("cat") == "kernel"]
    mfma = {n for n in raw if re.search(r"_MI\d+x\d+x\d+", n)}       # Tensile MFMA kernels, by name
    assert mfma, "the MI250 trace runs MFMA GEMMs"
    rows = ops_cli.rows(store, run, "all")
    assert rows and not any(NVIDIA_TERMS.search(f"{r['engine']} {r['kernels']}") for r in rows)
    for r in rows:     # a row whose kernels are MFMA GEMMs runs on the matrix cores
        if any(k in r["kernels"] for k in mfma):
            assert r["engine"] == "matrix core", r
    details = queries.kernel_details(store, [run])          # the kernels page: the same classifier
    by_name = dict(zip(details["kernel"], details["tc_engine"]))
    calls = op_costs.op_calls(store, [run])
    pairs = [(by_name[k], e) for k, e in zip(calls["main_kernel"], calls["engine"]) if k in by_name]  # memcpys aside
    assert pairs and all(a == b for a, b in pairs)
    roof = roofline.roofline_table(store, [run])
    lines = set(roofline.ceilings(roof)["ceiling"])
    assert lines == {"bf16 matrix core", "fp32 vector ALU"}
    assert not any(NVIDIA_TERMS.search(str(v)) for v in roof["engine"])


def test_instruction_follows_the_architecture():
    nvjet = "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_NNT"
    assert parse(nvjet, "sm100").instruction == "tcgen05"
    assert parse(nvjet, "sm90").instruction == "wgmma"
    assert parse(nvjet).instruction is None                      # unsure: no instruction
    fmha = "fmhaSm100aKernel_QkvBfloat16OBfloat16H128PagedKvCausalP32VarSeqQ128Kv128PersistentContext"
    assert (parse(fmha).arch, parse(fmha).instruction) == ("sm100", "tcgen05")
    assert parse("nvjet_sm90_tst_64x512_64x2_1x2_h_bz_coopB_NNT", "sm100").instruction == "wgmma"  # the name's tag wins
    assert [kernel_names.arch_mma(a) for a in ("sm80", "sm89", "sm90", "sm100", "sm103", "sm120", "sm70")] == \
        ["mma", "mma", "wgmma", "tcgen05", "tcgen05", "mma", None]


def _fixture_names() -> list[str]:
    import csv
    out = []
    for name in ("kernel_names.csv", "h200_kernel_names.csv", "top30_kernels.csv"):
        with (Path(__file__).parent / "fixtures" / "analysis" / name).open(newline="") as fh:
            out += [r["name"] for r in csv.DictReader(fh)]
    return sorted(set(out))


def test_no_instruction_the_architecture_lacks():
    hopper_only = re.compile(r"wgmma|gmma|warpgroup", re.I)
    for name in _fixture_names():
        says = bool(hopper_only.search(name) or re.search(r"sm_?90(?!\d)", name, re.I))   # the name's own tag
        for arch in ("sm80", "sm100", "sm120"):
            got = parse(name, arch).instruction
            assert got != "wgmma" or says, (arch, name)
            assert got != "tcgen05" or arch == "sm100" or "tcgen05" in name.lower(), (arch, name)


REDUCTIONS = [  # cutlass appears in their template arguments or namespace, not as a GEMM
    "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
    "cutlass::bfloat16_t, float, false>>(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, "
    "float, false>)",
    "void cutlass_cudnn_train::Kernel<cutlass_cudnn_train::reduction::kernel::ReduceSplitK<cutlass_cudnn_train::"
    "MatrixShape<4, 64>, cutlass_cudnn_train::epilogue::thread::LinearCombination<float, 4, float, float>, "
    "cutlass_cudnn_train::reduction::thread::ReduceAdd<float, float, 4>, 4>>(cutlass_cudnn_train::reduction::"
    "kernel::ReduceSplitK<float>::Params)",
]
GEMMS = [
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::bfloat16_t, cutlass::arch::Sm90>>",
     "bf16"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(cutlass_80_tensorop_s1688gemm_"
     "64x64_16x6_tn_align4::Params)", "tf32"),
]


@pytest.mark.parametrize("vendor,engine", [(NVIDIA, CUDA), (AMD, VECTOR_AMD)])
def test_cutlass_in_template_arguments_is_not_a_gemm(vendor, engine):
    for name in REDUCTIONS:
        got = classify(name, vendor)
        assert (got.engine, got.op) == (engine, "other"), name
        assert parse(name).library != "CUTLASS"
    for name, precision in GEMMS:       # the controls: CUTLASS GEMMs stay on the tensor cores
        assert (classify(name).engine, classify(name).precision, classify(name).op) == (TENSOR, precision, "gemm")


def test_cutlass_rule_only_fires_on_the_kernels_own_name():
    for name in _fixture_names() + REDUCTIONS:
        got = classify(name)
        if got.rule.startswith("CUTLASS"):
            own = re.split(r"[<(]", re.sub(r"^void ", "", name), maxsplit=1)[0]
            inner = re.match(r"[\w:]*\b(?:Kernel2?|device_kernel)<([\w:]+)", re.sub(r"^void ", "", name))
            assert "cutlass" in own.lower() or (inner and "cutlass" in inner.group(1).lower()), name


def test_invalid_runtime_calls_are_named_by_cbid(samples):
    store, ids = samples
    path = SAMPLES / "default" / "flashinfer_fa3_b8_h16_s1024_d64_bf16_causal_cold.json.gz"
    raw = [e["args"].get("cbid") for e in _raw(path)["traceEvents"]
           if e.get("cat") == "cuda_runtime" and e.get("name") == "INVALID"]
    assert raw, "the FA3 cold sample has INVALID runtime calls"
    with store.connect() as con:
        got = con.execute("SELECT name, count(*) FROM launches WHERE run_id = ? GROUP BY name",
                          [ids["flashinfer_fa3_b8_h16_s1024_d64_bf16_causal_cold"]]).fetchall()
    names = dict(got)
    assert "INVALID" not in names
    expected = {f"unnamed runtime call (cbid {c})": raw.count(c) for c in set(raw)}
    assert {k: v for k, v in names.items() if k.startswith("unnamed")} == expected


# ── class 4: attention rows for flashinfer, FlashAttention-4 and flex's cold run ───────────────

@pytest.mark.parametrize("name", SAMPLE_RUNS)
def test_attention_kernels_without_an_op_get_a_row_and_a_point(samples, name):
    store, ids = samples
    raw = _raw(SAMPLES / "default" / f"{name}.json.gz")
    shape = raw["attention_run"]
    b, h, n, d = (int(shape[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
    pairs = n * (n + 1) // 2 if shape["causal"] else n * n
    flops = 4 * b * h * pairs * d                          # QK^T and PV, 2 FLOPs per multiply-add
    attention = [e for e in raw["traceEvents"] if e.get("cat") == "kernel"
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


def _event(cat, name, ts, dur, ext=None, corr=None, **args):
    out = {"ph": "X", "cat": cat, "name": name, "pid": 1 if cat != "kernel" else 0, "tid": 1 if cat != "kernel" else 7,
           "ts": ts, "dur": dur, "args": dict(args)}
    if ext is not None:
        out["args"]["External id"] = ext
    if corr is not None:
        out["args"]["correlation"] = corr
    if cat == "kernel":
        out["args"].update({"device": 0, "stream": 7, "grid": [1, 1, 1], "block": [128, 1, 1]})
    return out


def _op(ext, name, ts, kernel, kernel_dur, dims=None, types=None):
    """A CPU op launching one kernel: op, launch call, kernel."""
    args = {} if dims is None else {"Input Dims": dims, "Input type": types}
    return [_event("cpu_op", name, ts, 10, ext, **args), _event("cuda_runtime", "cudaLaunchKernel", ts + 1, 2, ext, ext, cbid=211),
            _event("kernel", kernel, ts + 20, kernel_dur, ext, ext)]


def _write(tmp_path, name, events, device=None) -> Path:
    path = tmp_path / name
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000,
            "args": {"External id": 999}}
    body = {"traceEvents": [step, *events], **({"deviceProperties": [device]} if device else {})}
    path.write_text(json.dumps(body))
    return path


B200 = {"id": 0, "name": "NVIDIA B200", "totalGlobalMem": 191_503_974_400, "computeMajor": 10, "computeMinor": 0,
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
        "sharedMemPerBlock": 49152, "numSms": 148, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
        "sharedMemPerMultiprocessor": 233472}
FMHA = "fmhaSm100aKernel_QkvBfloat16OBfloat16H64PagedKvCausalP32VarSeqQ128Kv128PersistentContext"
BMM = "bmm_MxE2m1_MxE2m1_Bfloat16_t128x256x256u2_s4_et128x64_m256x256x64_c2x1x1_rM_TNT_bN_ieee"


def test_flash_attn_func_is_priced_from_its_own_inputs():
    from profiler.analysis import costmodel as cm
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
        *_op(1, "vllm::unified_attention_with_output", 10, FMHA, 40,
             [[888, 8, 64], [888, 1, 64], [888, 1, 64], [888, 8, 64], []], [bf16, bf16, bf16, bf16, "Scalar"]),
        *_op(2, "aten::mm", 100, "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_NNT", 30),             # no dims
        *_op(3, "aten::add", 200, "void at::native::vectorized_elementwise_kernel<4>", 7,
             [[64, 64], [64, 64], []], ["c10::Float4_e2m1fn_x2", "c10::Float4_e2m1fn_x2", "Scalar"]),
        *_op(4, "vllm::moe_forward", 300, BMM, 90, [[888, 1024]], [bf16]),
        *_op(5, "aten::mm", 400, "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_NNT", 20,
             [[888, 1024], [1024, 512]], [bf16, bf16]),
    ]
    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(_write(tmp_path, "vllm.json", events, B200)).run_id
    got = {(r["op"], r["reason"]) for r in unmodelled.unmodelled(store, run)}
    got = {(op, why.split(" (its")[0]) for op, why in got}
    assert got == {("vllm::unified_attention_with_output", "op not modelled"), ("aten::mm", "dims missing"),
                   ("aten::add", "dtype unknown (c10::Float4_e2m1fn_x2)"), ("vllm::moe_forward", "op not modelled")}
    rows = ops_cli.rows(store, run, "all")
    assert [(r["op"], r["flops"]) for r in rows] == [("aten::mm", 2 * 888 * 1024 * 512)]   # the one with dims
    assert "tcgen05" in rows[0]["kernels"] and "wgmma" not in rows[0]["kernels"]          # nvjet on a B200
    text = "\n".join(unmodelled.lines(unmodelled.unmodelled(store, run)))
    assert "record_shapes" not in text and "needs" not in text      # the old, false reason


def test_an_attention_kernel_with_no_op_and_no_run_shape_says_so(tmp_path):
    events = [_event("cuda_runtime", "cudaLaunchKernelExC", 10, 2, None, 7, cbid=430),
              _event("kernel", FMHA, 30, 50, None, 7)]
    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(_write(tmp_path, "fmha.json", events, B200)).run_id
    rows = unmodelled.unmodelled(store, run)
    assert [(r["op"], r["reason"], r["kernel_ns"]) for r in rows] == [(None, "no launching op", 50_000)]
    assert classify(FMHA).op == "attention" and classify(BMM).op == "gemm" and classify(BMM).precision == "fp4"
    assert parse(BMM).library == parse(FMHA).library == "TensorRT-LLM (trtllm-gen)"
    assert parse("bmm_kernel_generic").library != "TensorRT-LLM (trtllm-gen)"


# ── class 5: peaks per SKU, no share above 100 % ───────────────────────────────────────────────

# The datasheets (GB/s), typed from the vendors' pages, independent of profiler/analysis/skus.py.
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
    props = _raw(path)["deviceProperties"][0]
    expected = SHEET_GBPS[(props["name"], props["totalGlobalMem"], props["numSms"])]
    device = op_costs._device(queries.run_devices(store, [ids[path.name]])[ids[path.name]])
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
    events = _op(1, "aten::add", 10, "void at::native::vectorized_elementwise_kernel<4>", 80, [x, x, []],
                 ["float", "float", "Scalar"])
    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(_write(tmp_path, "a100.json", events, device)).run_id
    (row,) = ops_cli.rows(store, run, "all")
    assert row["bytes"] == nbytes and row["tbps"] * 1e3 / 2039 > 1      # truly above either part's peak
    assert row["pct_of_bandwidth"] is None and row["suspect"].startswith(blamed)
    assert "% of peak not shown" in ops_cli.format_table([row])


def test_bytes_of_broadcast_and_in_place_adds():
    from profiler.analysis import costmodel as cm
    x, bias = [4096, 1024], [1024]
    got = cm.op_cost("aten::add_", [x, bias, []], ["float", "float", "Scalar"], [])
    assert got.bytes == (2 * 4096 * 1024 + 1024) * 4           # read self and the bias, write self
    got = cm.op_cost("aten::mul", [x, []], ["c10::BFloat16", "double"], [])
    assert got.bytes == 2 * 4096 * 1024 * 2                    # x * 0.125: the number is an argument
    got = cm.op_cost("aten::copy_", [[], [], []], ["c10::Half", "c10::Half", "Scalar"], [])
    assert got.bytes == 2 + 2                                  # a scalar copy: one element each way


def test_a_point_above_its_roof_is_not_drawn():
    import pandas as pd
    from profiler.present import charts
    roof = pd.DataFrame({"run_id": ["under", "over"], "tflops": [10.0, 900.0], "intensity": [5.0, 5.0],
                         "suspect": [None, "model: TB/s above 100 % of the identified SKU's peak"]})
    lines = pd.DataFrame({"gpu_name": ["g"] * 2, "ceiling": ["bf16 tensor core"] * 2, "intensity": [1.0, 100.0],
                          "tflops": [1.0, 100.0]})
    spec = json.dumps(charts.roofline_chart(roof, lines, {"under": "UNDER-RUN", "over": "OVER-RUN"}, roof).to_dict())
    assert '"run": "UNDER-RUN"' in spec and '"run": "OVER-RUN"' not in spec   # the data rows drawn
