"""Issue 24, the cost model of every mode: `ops --json` on traces recorded on the CPU in the test
(torch.profiler with record_shapes over SDPA, ingested into a real store) and on crafted traces of
the CUDA-only backward ops, against hand formulas written here.

Sizes: B batch, H query heads, HKV key/value heads, S (query) length, L key/value length, D head
dim; fp32 (4 bytes) on the CPU. Attention FLOPs: 2 per multiply-add over the kept (query, key)
pairs, QK^T and PV forward (4 D per pair), and backward QK^T again, dV, dP, dQ, dK (10 D)."""
from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

from profiler.analysis.model import costmodel as cm, modes
from profiler.analysis.findings import findings
from profiler.analysis.reads import op_costs, roofline
from profiler.cli.main import main
from profiler.storage.store import Store
from tests.truth_traces import event, write

B, H, HKV, D, S, L = 2, 4, 2, 8, 16, 40
F32 = 4


def _sdpa(lq: int, lkv: int, causal: bool, backward: bool = False, backend=SDPBackend.FLASH_ATTENTION):
    def run():
        torch.manual_seed(0)
        q = torch.randn(B, H, lq, D, requires_grad=backward)
        k, v = (torch.randn(B, HKV, lkv, D, requires_grad=backward) for _ in range(2))
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            if backward:
                out.sum().backward()
    return run


CASES = {
    "prefill_gqa_causal": _sdpa(S, S, True),
    "prefill_gqa": _sdpa(S, S, False),
    "decode_q1": _sdpa(1, L, False),
    "decode_q4_causal": _sdpa(4, L, True),
    "train": _sdpa(S, S, True, backward=True),
    "train_math": _sdpa(S, S, True, backward=True, backend=SDPBackend.MATH),
    "prefill_math": _sdpa(S, S, True, backend=SDPBackend.MATH),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("modes")
    store, ids = Store(folder / "modes.duckdb"), {}
    for name, run in CASES.items():
        run()                                   # warm, outside the profiler
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            run()
        path = folder / f"{name}.json"
        prof.export_chrome_trace(str(path))
        ids[name] = store.ingest(path).run_id
    return store, ids


def _ops(store, run_id, capsys) -> list[dict]:
    assert main(["ops", run_id, "--json", "--db", str(store.path)]) == 0
    return json.loads(capsys.readouterr().out)


def _attention(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["kind"] == "attention"]


def _forward_bytes(lq: int, lkv: int) -> int:
    return F32 * (2 * B * H * lq * D + 2 * B * HKV * lkv * D)      # Q and O; K and V with their own heads


@pytest.mark.parametrize("name,causal", [("prefill_gqa_causal", True), ("prefill_gqa", False)])
def test_prefill_gqa_by_hand(recorded, capsys, name, causal):
    store, ids = recorded
    (row,) = _attention(_ops(store, ids[name], capsys))
    pairs = S * (S + 1) // 2 if causal else S * S
    assert (row["op"], row["backend"], row["mode"]) == ("aten::scaled_dot_product_attention", "flash (CPU)", "prefill")
    assert row["flops"] == row["flops_useful"] == 4 * B * H * pairs * D
    assert row["bytes"] == _forward_bytes(S, S)
    # GQA: K and V read H / HKV times fewer bytes than with a head of K and V per query head
    assert row["bytes"] == F32 * (2 * B * H * S * D + 2 * B * H * S * D // (H // HKV))
    # the CPU flash kernel's one tile (32 query rows, 512 keys) covers the 16 x 16 square: all issued
    assert row["flops_issued"] == 4 * B * H * S * S * D
    assert row["engine"] == "CPU" and row["kernel_us_mean"] > 0


@pytest.mark.parametrize("name,lq,pairs", [
    ("decode_q1", 1, L),                    # one query against the whole cache
    ("decode_q4_causal", 4, 1 + 2 + 3 + 4),  # SDPA's is_causal is top-left: row i sees keys 0..i
])
def test_decode_by_hand(recorded, capsys, name, lq, pairs):
    store, ids = recorded
    (row,) = _attention(_ops(store, ids[name], capsys))
    assert row["mode"] == "decode"
    assert row["flops"] == 4 * B * H * pairs * D
    # the cache read once: 2 B HKV L D bytes, plus Q and O
    assert row["bytes"] == 2 * B * HKV * L * D * F32 + 2 * B * H * lq * D * F32
    assert row["flops_issued"] == 4 * B * H * lq * L * D     # one CPU tile holds every key


def test_train_forward_and_backward_by_hand(recorded, capsys):
    store, ids = recorded
    rows = _ops(store, ids["train"], capsys)
    attention = {r["op"]: r for r in _attention(rows)}
    pairs = S * (S + 1) // 2
    forward = attention["aten::scaled_dot_product_attention"]
    backward = attention["aten::_scaled_dot_product_flash_attention_for_cpu_backward"]
    assert forward["flops"] == 4 * B * H * pairs * D and forward["mode"] == "train"  # a training run's forward row (issue 35)
    # backward: QK^T again, dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q, 2 D FLOPs per pair each
    recompute, d_v, d_p, d_q, d_k = (2 * B * H * pairs * D for _ in range(5))
    assert backward["flops"] == recompute + d_v + d_p + d_q + d_k
    q = o = B * H * S * D * F32
    k = v = B * HKV * S * D * F32
    lse = B * H * S * F32
    assert backward["bytes"] == (q + k + v + o + o + lse) + (q + k + v)   # read Q K V O dO lse, write dQ dK dV
    assert backward["mode"] == "train" and backward["backend"] == "flash (CPU)"
    assert {r["mode"] for r in rows if r["kind"] != "attention"} <= {"train"}


def test_math_backward_is_priced_as_its_gemms(recorded, capsys):
    """The math backend: forward QK^T and PV, backward two GEMMs each (dA = dC B^T, dB = A^T dC),
    each 2 (B H) S S D FLOPs; the softmax keeps the full S x S probability matrix."""
    store, ids = recorded
    rows = _ops(store, ids["train_math"], capsys)
    gemms = [r for r in rows if r["op"] == "aten::bmm"]
    assert sum(r["flops"] * r["calls"] for r in gemms) == 6 * 2 * B * H * S * S * D
    assert {r["mode"] for r in rows} == {"train"}
    assert all(r["flops_issued"] == r["flops"] for r in rows)
    softmax = [r for r in rows if r["op"] == "aten::_softmax"]
    assert softmax and softmax[0]["bytes"] == 2 * B * H * S * S * F32


# ── the CUDA-only ops: crafted events with the signatures torch 2.13 records ───────────────────

H200 = {"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150_754_820_096, "computeMajor": 9, "computeMinor": 0,
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
        "sharedMemPerBlock": 49152, "numSms": 132, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
        "sharedMemPerMultiprocessor": 233472}
FLASH_FWD = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
             "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true>"
             "(pytorch_flash::Flash_fwd_params)")
FLASH_BWD = ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, "
             "8, 4, 4, 4, false, false, cutlass::bfloat16_t>, true>(pytorch_flash::Flash_bwd_params)")
EFF_FWD = "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<>::Params)"
EFF_BWD = "fmha_cutlassB_bf16_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<>::Params)"


def _call(ext: int, ts: int, name: str, inputs: list[tuple], kernel: str, kernel_us: int, inner: str | None = None):
    """An op with its inputs [(dims, type, concrete)], optionally an inner op, launching one kernel."""
    dims, types, concrete = (list(x) for x in zip(*inputs))
    args = {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}
    events = [event("cpu_op", name, ts, 50, ext, **args)]
    if inner:
        events.append(event("cpu_op", inner, ts + 5, 40, ext + 1))
    launcher = ext + 1 if inner else ext
    return events + [event("cuda_runtime", "cudaLaunchKernel", ts + 10, 2, launcher, launcher, cbid=211),
                     event("kernel", kernel, ts + 100, kernel_us, launcher, launcher)]


BF = "c10::BFloat16"


def _t(dims, kind=BF):
    return (dims, kind, "")


def _s(value=""):
    return ([], "Scalar", value)


NONE = ([], "", "")


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crafted_modes")
    b, h, hkv, d = 1, 32, 8, 128
    sdpa_bwd = [_t([b, h, 1024, d])] * 2 + [_t([b, hkv, 1024, d])] * 2 + [_t([b, h, 1024, d]), _t([b, h, 1024], "float")]
    sdpa_bwd += [NONE, NONE, _s("1024"), _s("1024"), _s("0."), _s("True"), NONE, NONE, _s()]
    eff_bwd = [_t([b, 4, h, d])] * 2 + [_t([b, 4096, hkv, d])] * 2 + [NONE, _t([b, 4, h, d])]
    eff_bwd += [NONE, NONE, _s("4"), _s("4096"), _t([b, h, 32], "float"), _s("0."), NONE, NONE, _s("2"), _s("False"),
                _s(), _s(), _s(), _s("False")]
    window = [_t([b, 256, h, d])] + [_t([b, 256, hkv, d])] * 2 + [NONE, NONE, _s("256"), _s("256"), _s("0."),
                                                                   _s("True"), _s("False"), _s(), _s("63"), _s("0")]
    window += [NONE, NONE, NONE, _s()]
    decode = [_t([b, h, 1, d])] + [_t([b, hkv, 8192, d])] * 2 + [NONE, _s("True"), _s("0."), _s("False"), _s()]
    prefill = [_t([b, h, 4096, d])] * 3 + [_s("0."), _s("True"), _s("False"), _s()]
    runs = {
        "sdpa_flash_backward": _call(10, 100, "aten::_scaled_dot_product_flash_attention_backward", sdpa_bwd,
                                     FLASH_BWD, 300, inner="aten::_flash_attention_backward"),
        "efficient_backward_bottom_right": _call(20, 100, "aten::_efficient_attention_backward", eff_bwd, EFF_BWD, 40),
        "flash_forward_window": _call(30, 100, "aten::_flash_attention_forward", window, FLASH_FWD, 20),
        "decode_efficient": _call(40, 100, "aten::_scaled_dot_product_efficient_attention", decode, EFF_FWD, 30),
        "decode_efficient_fast": _call(40, 100, "aten::_scaled_dot_product_efficient_attention", decode, EFF_FWD, 12),
        "prefill_flash": _call(50, 100, "aten::_scaled_dot_product_flash_attention", prefill, FLASH_FWD, 700),
    }
    store = Store(folder / "crafted.duckdb")
    return store, {n: store.ingest(write(folder, f"{n}.json", ev, H200)).run_id for n, ev in runs.items()}


def test_sdpa_flash_backward_by_hand(crafted, capsys):
    store, ids = crafted
    (row,) = _attention(_ops(store, ids["sdpa_flash_backward"], capsys))
    b, h, hkv, d, n = 1, 32, 8, 128, 1024
    pairs = n * (n + 1) // 2
    assert (row["op"], row["backend"], row["mode"]) == ("aten::_scaled_dot_product_flash_attention_backward", "flash", "train")
    assert row["flops"] == 10 * b * h * pairs * d
    q, kv, lse = b * h * n * d * 2, b * hkv * n * d * 2, b * h * n * 4
    assert row["bytes"] == (q + 2 * kv + q + q + lse) + (q + 2 * kv)
    # FlashAttention's 128 x 128 tiles: 8 row blocks touching 1..8 key blocks = 36 tiles of 128 x 128
    assert row["flops_issued"] == 10 * b * h * 36 * 128 * 128 * d


def test_efficient_backward_with_a_bottom_right_mask(crafted, capsys):
    """custom_mask_type 2 aligns the diagonal bottom-right: 4 queries against 4096 keys see
    4093, 4094, 4095, 4096 keys (top-left would give 1, 2, 3, 4)."""
    store, ids = crafted
    (row,) = _attention(_ops(store, ids["efficient_backward_bottom_right"], capsys))
    assert row["flops"] == 10 * 1 * 32 * (4093 + 4094 + 4095 + 4096) * 128
    assert row["mode"] == "train" and "bottom-right" in row["shape"]
    # one 64-row block over all 64 key tiles: 4 x 4096 pairs issued
    assert row["flops_issued"] == 10 * 32 * 4 * 4096 * 128


def test_a_sliding_window_keeps_a_band_and_issues_whole_tiles(crafted, capsys):
    store, ids = crafted
    (row,) = _attention(_ops(store, ids["flash_forward_window"], capsys))
    band = sum(min(i + 1, 64) for i in range(256))     # window 63: the diagonal and 63 keys before it
    assert band == 64 * 65 // 2 + 192 * 64
    assert row["flops"] == 4 * 32 * band * 128 and "window 63" in row["shape"]
    # tiles 128 x 128 (from the kernel's name): rows 0-127 touch key tile 0, rows 128-255 touch 0 and 1
    assert row["flops_issued"] == 4 * 32 * (128 * 128 + 128 * 256) * 128


def test_decode_meets_the_bandwidth_roof_and_prefill_the_compute_roof(crafted, capsys):
    """Intensity decides: decode (1 query, 8192 keys, 32/8 heads) moves the cache for 4 FLOPs a
    byte, under the H200's ridge (bf16 tensor core peak / HBM bandwidth); a causal 4096 prefill
    does ~1000 a byte, above it."""
    store, ids = crafted
    (dec,) = _attention(_ops(store, ids["decode_efficient"], capsys))
    (pre,) = _attention(_ops(store, ids["prefill_flash"], capsys))
    assert (dec["mode"], pre["mode"]) == ("decode", "prefill")
    dec_bytes = 2 * (2 * 8 * 8192 * 128) + 2 * (2 * 32 * 128)
    assert dec["bytes"] == dec_bytes and dec["intensity"] == pytest.approx(4 * 32 * 8192 * 128 / dec_bytes)
    ridge = pre["peak_tflops"] / 4.8          # the H200 datasheet's HBM3e bandwidth: 4.8 TB/s
    assert dec["intensity"] < ridge < pre["intensity"]
    assert (dec["bound"], pre["bound"]) == ("memory", "compute")
    table = roofline.roofline_table(store, [ids["decode_efficient"], ids["prefill_flash"]]).set_index("run_id")
    assert table.loc[ids["decode_efficient"], "bound"] == "memory"
    assert table.loc[ids["prefill_flash"], "bound"] == "compute"


# ── the pieces, by hand ────────────────────────────────────────────────────────────────────────

def test_issued_pairs_of_a_causal_square_in_tiles():
    cost = cm.attention_cost([1, 1, 256, 64], [1, 1, 256, 64], [1, 1, 256, 64], BF, True)
    # tiles 128 x 128: row block 0 touches 1 key tile, row block 1 two: 3 of 4 tiles
    assert cm.issued_flops(cost, (128, 128)) == 4 * 64 * 3 * 128 * 128
    assert cost.flops == 4 * 64 * 256 * 257 // 2
    assert cm.issued_flops(cost, None) == 4 * 64 * 256 * 256     # math: the full square


def test_modes_of_calls_and_runs():
    prefill = cm.attention_cost([1, 2, 8, 4], [1, 2, 8, 4], [1, 2, 8, 4], BF, True)
    decode = cm.attention_cost([1, 2, 1, 4], [1, 2, 8, 4], [1, 2, 8, 4], BF, False)
    train = cm.attention_cost([1, 2, 8, 4], [1, 2, 8, 4], [1, 2, 8, 4], BF, True, backward=True)
    assert [modes.op_mode(c) for c in (prefill, decode, train)] == ["prefill", "decode", "train"]
    assert modes.op_mode(cm.gemm_cost("aten::mm", [[2, 3], [3, 4]], [BF, BF])) is None
    assert modes.run_mode(["prefill", "train"]) == "train"
    assert modes.run_mode(["prefill"], backward_ops=3) == "train"
    assert modes.run_mode(["prefill", "decode"]) == "decode"
    assert modes.run_mode([None]) is None
    # the naive path has no attention op: a captured run's record decides, forward-only: prefill
    assert modes.run_mode([None], declared=modes.declared_mode({"seq_len": 1024})) == "prefill"
    assert modes.run_mode([None], declared=modes.declared_mode({"seq_len": 1, "mode": "decode"})) == "decode"
    assert modes.run_mode([None], backward_ops=1, declared="prefill") == "train"
    assert modes.declared_mode({"seq_len": None}) is None


def test_op_calls_carry_the_mode_columns(recorded):
    store, ids = recorded
    calls = op_costs.op_calls(store, [ids["decode_q1"]])
    assert {"mode", "flops_useful", "flops_issued"} <= set(calls.columns)
    assert set(calls.loc[calls["kind"] == "attention", "mode"]) == {"decode"}


# ── findings that explain the mode, against numbers computed here from the traces ───────────────

def _kinds(found) -> dict:
    return {f.kind: f for f in found}


def test_decode_is_memory_bound_at_a_share_of_hbm_bandwidth(crafted):
    store, ids = crafted
    found = _kinds(findings.run_findings(store, ids["decode_efficient"]))["decode_bandwidth"]
    cache_and_q_o = 2 * (2 * 8 * 8192 * 128) + 2 * (2 * 32 * 128)      # bf16 K, V of 8 heads; Q, O of 32
    kernel_us = 30                                                        # the crafted kernel's duration
    tbps = cache_and_q_o / (kernel_us * 1e-6) / 1e12
    evidence = found.evidence["runs"][ids["decode_efficient"]]
    assert evidence["tbps"] == pytest.approx(tbps)
    assert evidence["pct_of_bandwidth"] == pytest.approx(100 * tbps / 4.8)   # H200: 4.8 TB/s
    assert "memory-bound" in found.text and f"{100 * tbps / 4.8:.0f} %" in found.text


def test_decode_compare_names_the_run_reading_the_cache_fastest(crafted):
    store, ids = crafted
    a, b = ids["decode_efficient"], ids["decode_efficient_fast"]
    found = _kinds(findings.compare_findings(store, a, b, limit=None))["decode_bandwidth"]
    assert found.evidence["winner"] == b                 # 12 µs against 30 µs for the same bytes
    assert found.evidence["runs"][b]["tbps"] == pytest.approx(found.evidence["runs"][a]["tbps"] * 30 / 12)


def test_mode_findings_fire_only_on_runs_of_their_mode(crafted, recorded):
    store, ids = crafted
    assert "decode_bandwidth" not in _kinds(findings.run_findings(store, ids["prefill_flash"]))
    mixed = _kinds(findings.compare_findings(store, ids["decode_efficient"], ids["prefill_flash"], limit=None))
    assert set(mixed["decode_bandwidth"].evidence["runs"]) == {ids["decode_efficient"]}
    assert mixed["decode_bandwidth"].evidence["winner"] is None
    cpu, cpu_ids = recorded
    for name in ("prefill_math", "train", "prefill_gqa_causal", "decode_q1"):
        assert "probability_matrix" not in _kinds(findings.run_findings(cpu, cpu_ids[name])), name
    for name in ("prefill_math", "train_math"):
        assert "decode_bandwidth" not in _kinds(findings.run_findings(cpu, cpu_ids[name])), name
    # a CPU decode has no HBM peak: the rate alone, no share
    on_cpu = _kinds(findings.run_findings(cpu, cpu_ids["decode_q1"]))["decode_bandwidth"]
    assert on_cpu.evidence["runs"][cpu_ids["decode_q1"]]["pct_of_bandwidth"] is None
    assert "gqa_bytes" not in _kinds(findings.run_findings(store, ids["prefill_flash"]))   # 32 / 32 heads


def test_the_math_backward_keeps_the_probability_matrix(recorded):
    store, ids = recorded
    found = _kinds(findings.run_findings(store, ids["train_math"]))["probability_matrix"]
    assert found.evidence["runs"][ids["train_math"]]["matrix_bytes"] == B * H * S * S * F32
    assert "probability matrix" in found.text and f"{B}x{H}x{S}x{S}" in found.text


def test_gqa_cuts_key_value_bytes_by_the_group(recorded):
    store, ids = recorded
    found = _kinds(findings.run_findings(store, ids["prefill_gqa_causal"]))["gqa_bytes"]
    evidence = found.evidence["runs"][ids["prefill_gqa_causal"]]
    assert evidence["kv_group"] == H // HKV
    assert evidence["kv_bytes"] == 2 * B * HKV * S * D * F32
    assert evidence["kv_bytes_without_gqa"] == 2 * B * H * S * D * F32


def test_the_tile_comes_from_the_kernel_name_else_the_backend():
    from profiler.analysis.reads.op_pricing import tile

    cudnn = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
    assert tile("cudnn", cudnn) == (64, 128)            # rows x keys of the name's 64x128x64
    assert tile("efficient", EFF_FWD) == (64, 64)
    assert tile("flash", FLASH_BWD) == (128, 128)       # no tile in the name: the backend's default
    assert tile("flash (CPU)", None, 1024) == (256, 512) and tile("flash (CPU)", None, 100) == (32, 512)
    assert tile("math", None) is None                   # the full square


def test_a_compiled_flex_backward_kernel_is_priced_as_the_backward():
    """flex's compiled kernels have no op: priced from the run's shape, the backward one (by its
    name) with the backward's 10 D FLOPs per pair, the forward with 4 D."""
    from profiler.analysis.model import run_shape
    from profiler.analysis.reads.op_pricing import Call

    shape = {"batch": 2, "heads": 4, "seq_len": 64, "head_dim": 16, "dtype": "bf16", "causal": True}
    calls = [Call(run_shape.FLEX_KERNEL, 0, "bf16", "triton_tem_fused_flex_attention_0"),
             Call(run_shape.FLEX_KERNEL, 0, "bf16", "triton_tem_fused_flex_attention_backward_1")]
    forward, backward = run_shape.inferred_costs(calls, shape)
    pairs = 64 * 65 // 2
    assert (forward.flops, backward.flops) == (4 * 2 * 4 * pairs * 16, 10 * 2 * 4 * pairs * 16)
    assert (modes.op_mode(forward), modes.op_mode(backward)) == ("prefill", "train")


def test_the_text_table_says_the_mode_and_the_share_wasted(crafted, capsys):
    store, ids = crafted
    assert main(["ops", ids["sdpa_flash_backward"], "--db", str(store.path)]) == 0
    head, row = capsys.readouterr().out.splitlines()[:2]
    assert head.split()[:7] == ["op", "backend", "shape", "dtype", "mode", "calls", "GFLOP"] and "waste%" in head
    useful, issued = 1024 * 1025 // 2, 36 * 128 * 128        # pairs kept; pairs in the 36 tiles touched
    assert " train " in row and f" {100 * (issued - useful) / issued:.1f} " in row
