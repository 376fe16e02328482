"""Issue 21, class 3: one engine classifier on the run's vendor, for ops, compare, the kernels
page, the attention page and the roofline; the instruction the architecture has; a kernel's own
name before its template arguments; runtime calls CUPTI cannot name.

Each check computes its truth from the raw trace JSON (or a fixture built from the issue's
kernel names), never from the code under test."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from profiler.analysis.model import kernel_names
from profiler.analysis.reads import kernel_queries, op_costs, roofline
from profiler.analysis.model.kernel_names import parse
from profiler.analysis.model.tensor_cores import AMD, CUDA, NVIDIA, TENSOR, VECTOR_AMD, classify
from profiler.cli import ops as ops_cli
from tests.conftest import SAMPLES
from tests.truth_traces import MI250, raw, real_store, sample_store

third_party = pytest.mark.third_party
NVIDIA_TERMS = re.compile(r"tensor core|CUDA core|wgmma|tcgen05|nvjet|cuBLAS", re.I)


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("truth"))


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return real_store(tmp_path_factory.mktemp("truth"))


@third_party
def test_amd_run_has_no_nvidia_term_in_ops_kernels_or_roofline(real):
    store, ids = real
    run = ids[MI250.name]
    names = [e["name"] for e in raw(MI250)["traceEvents"] if e.get("cat") == "kernel"]
    mfma = {n for n in names if re.search(r"_MI\d+x\d+x\d+", n)}       # Tensile MFMA kernels, by name
    assert mfma, "the MI250 trace runs MFMA GEMMs"
    rows = ops_cli.rows(store, run, "all")
    assert rows and not any(NVIDIA_TERMS.search(f"{r['engine']} {r['kernels']}") for r in rows)
    for r in rows:     # a row whose kernels are MFMA GEMMs runs on the matrix cores
        if any(k in r["kernels"] for k in mfma):
            assert r["engine"] == "matrix core", r
    details = kernel_queries.kernel_details(store, [run])          # the kernels page: the same classifier
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
    cbids = [e["args"].get("cbid") for e in raw(path)["traceEvents"]
           if e.get("cat") == "cuda_runtime" and e.get("name") == "INVALID"]
    assert cbids, "the FA3 cold sample has INVALID runtime calls"
    with store.connect() as con:
        got = con.execute("SELECT name, count(*) FROM launches WHERE run_id = ? GROUP BY name",
                          [ids["flashinfer_fa3_b8_h16_s1024_d64_bf16_causal_cold"]]).fetchall()
    names = dict(got)
    assert "INVALID" not in names
    expected = {f"unnamed runtime call (cbid {c})": cbids.count(c) for c in set(cbids)}
    assert {k: v for k, v in names.items() if k.startswith("unnamed")} == expected


@pytest.mark.parametrize("gpu,lines", [
    ("AMD Instinct MI300X", {"bf16 matrix core", "fp32 vector ALU"}),
    ("NVIDIA B200", {"bf16 tensor core", "fp32 CUDA core"}),
])
def test_roofline_ceilings_are_named_as_on_the_vendor(gpu, lines):
    import pandas as pd
    got = roofline.ceilings(pd.DataFrame({"gpu_name": [gpu]}))
    assert set(got["ceiling"]) == lines
    flat = got.groupby("ceiling")["tflops"].max()          # each ceiling's flat part: the datasheet peak
    bf16 = next(line for line in lines if line.startswith("bf16"))
    assert flat[bf16] == {"AMD Instinct MI300X": 1307.4, "NVIDIA B200": 2250}[gpu]          # the datasheets' dense bf16
