"""Issue 37, item 3: attention priced from serving step annotations (profiler/analysis/reads/serving_steps.py),
against TraceLens's reference CSVs of the shared MI300X pairs (GFLOPs and MB per call of the
attention op), the annotation and the op's inputs read from the raw JSON here."""
from __future__ import annotations

import csv
import gzip
import json

import pytest

from profiler.analysis.reads import serving_steps
from profiler.cli.main import main
from tests.conftest import SHARED_TRACES

GRAPHS = SHARED_TRACES / "graphs"
PAIRS = {  # replay trace, capture trace, the attention op's name in the capture
    "sglang_decode": ("sglang_Qwen3-8B_decode.json.gz", "capture/bs_32_rank0.json.gz",
                      "sglang_profiler::attention_paged_attention_ragged"),
    "vllm_prefilldecode_piecewise": ("graph_execution.json.gz", "capture/graph_capture_rank_0.*.json.gz",
                                     "vllm::unified_attention_with_output"),
}
pytestmark = pytest.mark.skipif(not GRAPHS.is_dir(), reason="needs the shared graph traces")


def _events(path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def _reference(pair: str, op: str) -> dict:
    """The reference row of the attention op (SGLang's file has a row for its cache store too)."""
    with open(GRAPHS / pair / "reference" / "InferenceAttention_fwd.csv", newline="") as f:
        (row,) = [r for r in csv.DictReader(f) if r["name"] == op]
    return row


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_annotation_prices_the_attention_call_as_the_reference(pair):
    replay, capture, op = PAIRS[pair]
    steps = [e["name"] for e in _events(GRAPHS / pair / replay)
             if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("execute_")]
    assert len(steps) == 1
    step = serving_steps.parse(steps[0])
    ref = _reference(pair, op)
    # the annotation's sums are the reference's parameters
    assert (step.context.sq, step.context.sk, step.context.sqsq, step.context.sqsk) == tuple(
        round(float(ref[f"param: c_{k}"])) for k in ("sq", "sk", "sqsq", "sqsk"))
    assert (step.generation.sq, step.generation.sk, step.generation.sqsq, step.generation.sqsk) == tuple(
        round(float(ref[f"param: g_{k}"])) for k in ("sq", "sk", "sqsq", "sqsk"))
    (cap,) = list((GRAPHS / pair).glob(capture))
    call = next(e for e in _events(cap) if e.get("cat") == "cpu_op" and e["name"].startswith(op))
    got = serving_steps.price(step, str(call["args"]["Input Dims"]), str(call["args"]["Input type"]))
    h = serving_steps.heads(str(call["args"]["Input Dims"]), str(call["args"]["Input type"]))
    assert (h.q_heads, h.kv_heads, h.head_dim) == (int(float(ref["param: H_Q"])), int(float(ref["param: H_KV"])),
                                                   int(float(ref["param: d_h_qk"])))
    assert got["flops"] / 1e9 == pytest.approx(float(ref["GFLOPS_first"]), rel=1e-6)
    assert got["bytes"] / 2**20 == pytest.approx(float(ref["Data Moved (MB)_first"]), rel=1e-4)
    assert got["kind"] == ("decode" if pair == "sglang_decode" else "mixed")
    assert steps[0] in got["reason"] and "upper bound" in got["reason"]


def test_older_vllm_annotation_and_others():
    old = serving_steps.parse("execute_context_1(888_788544)_generation_0(0)")
    assert old.kind == "prefill" and old.tokens is None
    assert (old.context.sq, old.context.sk, old.context.sqsq, old.context.sqsk) == (888, 888, 788544, 788544)
    h = serving_steps.Heads(q_heads=8, kv_heads=8, head_dim=128, elem_bytes=2)
    # one causal prefill of 888 with no cache: 4·H·d·(N² − N²/2) = 2·H·d·N²
    assert serving_steps.flops(old, h) == 2 * 8 * 128 * 788544
    dec = serving_steps.parse("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)")
    assert dec.kind == "decode" and serving_steps.flops(dec, h) == 4 * 8 * 128 * 55086
    for name in ("ProfilerStep#3", "execute_model", "execute_context_1(abc)_generation_0(0)", ""):
        assert serving_steps.parse(name) is None
    assert serving_steps.heads("[[4, 8]]", "['c10::BFloat16']") is None
    assert serving_steps.heads("not dims", None) is None


JOINED = {"sglang": "sglang_decode", "vllm": "vllm_prefilldecode_piecewise"}


@pytest.mark.third_party
@pytest.mark.parametrize("pair", sorted(JOINED))
def test_a_joined_pair_prices_its_attention_calls_in_the_cost_rows(tmp_path, pair, capsys):
    """Every attention call of the joined pair is a cost-model row (`op_costs.op_calls`, which the
    Attention page, `ops`, `summary --json` and the roofline read) priced as the reference prices one
    call, as many calls as the reference counts, shape_source 'step annotation' and the shape naming
    the annotation; none is left among the unmodelled ops."""
    from profiler.analysis.reads import op_costs, serving_costs, unmodelled
    from tests.test_graph_join import _joined

    store, run_id = _joined(tmp_path, pair, capsys)
    op = PAIRS[JOINED[pair]][2]
    ref = _reference(JOINED[pair], op)
    rows = op_costs.op_calls(store, [run_id])
    rows = rows[rows["op"].str.startswith(op)]
    assert len(rows) == int(ref["name_count"])
    assert (rows["flops"] / 1e9).tolist() == pytest.approx([float(ref["GFLOPS_first"])] * len(rows), rel=1e-6)
    assert (rows["bytes"] / 2**20).tolist() == pytest.approx([float(ref["Data Moved (MB)_first"])] * len(rows), rel=1e-4)
    assert set(rows["shape_source"]) == {"step annotation"} and set(rows["kind"]) == {"attention"}
    (annotation,) = set(serving_costs.annotations(store, run_id).values())
    assert all(annotation in s and "priced from the step annotation" in s for s in rows["shape"])
    assert set(rows["backend"]) == {pair}
    table = op_costs.ops_table(store, [run_id], "attention")
    assert table["calls"].sum() == int(ref["name_count"]) and (table["tflops"] > 0).all()
    # the roofline sums the same rows: the run's one step (its serving annotation) holds them all
    from profiler.analysis.reads import roofline

    (roof,) = roofline.roofline_table(store, [run_id]).itertuples()
    every = op_costs.op_calls(store, [run_id])
    assert roof.iterations == 1 and roof.flops_per_iter == pytest.approx(every["flops"].sum())
    assert roof.flops_per_iter >= rows["flops"].sum() > 0
    # the serving module's own per-call figure is the same definition
    got = [c for c in serving_costs.calls(store, run_id) if c["op"].startswith(op)]
    assert sorted(c["flops"] for c in got) == pytest.approx(sorted(rows["flops"].tolist()))
    left = [r for r in unmodelled.unmodelled(store, run_id) if (r["op"] or "").startswith(op)]
    assert not left, left


@pytest.mark.third_party
def test_the_ops_command_shows_the_annotation_priced_row(tmp_path, capsys):
    from tests.test_graph_join import _joined

    store, run_id = _joined(tmp_path, "sglang", capsys)
    assert main(["ops", run_id, "--db", str(store.path), "--kind", "attention", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    ref = _reference("sglang_decode", PAIRS["sglang_decode"][2])
    assert row["op"].startswith("sglang_profiler::attention_paged_attention_ragged")
    assert row["shape_source"] == "step annotation" and "execute_32_context_0(" in row["shape"]
    assert row["flops"] / 1e9 == pytest.approx(float(ref["GFLOPS_first"]), rel=1e-6)
    assert row["calls"] == int(ref["name_count"])
