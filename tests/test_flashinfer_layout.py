"""flashinfer's wiring that runs on a CPU (flashinfer itself needs CUDA): the paged KV cache and
the offsets of packed sequences it reads (capture/paged.py), its sliding window against the
capture's mask, and what each flashinfer variant says it can and cannot run, per mode."""
from __future__ import annotations

import json

import pytest
import torch

from profiler.capture import paged
from profiler.capture.flashinfer_fns import window_left
from profiler.capture.masks import MaskSpec
from profiler.capture.variants import availability_by_mode, get_variant
from profiler.capture.setting import Setting
from profiler.cli.main import main
from profiler.errors import CaptureError

FLASHINFER = ("flashinfer_fa2", "flashinfer_fa3", "flashinfer_decode", "flashinfer_decode_tc")
MISSING = "the `flashinfer-python` package is not installed"


def test_indptr_is_the_cumulative_offsets_of_packed_lengths():
    got = paged.indptr([512, 1536, 1024, 1024])
    assert got.dtype == torch.int32 and got.tolist() == [0, 512, 2048, 3072, 4096]
    assert paged.indptr([7] * 3).tolist() == [0, 7, 14, 21]


@pytest.mark.parametrize("kv_len, last", [(37, 5), (48, 16), (1, 1)])
def test_gathering_the_pages_through_the_page_table_gives_back_k_and_v(kv_len, last):
    gen = torch.Generator().manual_seed(3)
    k, v = (torch.randn(2, 3, kv_len, 8, generator=gen) for _ in range(2))
    per_seq = -(-kv_len // 16)
    order = torch.randperm(2 * per_seq, generator=gen)  # pages stored out of order, as in a server
    cache = paged.page_kv(k, v, page_size=16, order=order)
    assert cache.cache.shape == (2 * per_seq, 2, 16, 3, 8)
    assert cache.indptr.tolist() == [0, per_seq, 2 * per_seq]
    assert cache.last_page_len.tolist() == [last, last]
    assert cache.indices.tolist() == order.tolist()
    back_k, back_v = paged.gather_kv(cache)
    assert torch.equal(back_k, k) and torch.equal(back_v, v)
    # one entry read by hand: sequence 1, token 0 is the first row of its first page (NHD: token, head, dim)
    first = cache.cache[int(cache.indices[int(cache.indptr[1])])]
    assert torch.equal(first[0, 0], k[1, :, 0, :]) and torch.equal(first[1, 0], v[1, :, 0, :])


def test_pages_in_sequence_order_without_an_order():
    k = torch.arange(2 * 1 * 20 * 2, dtype=torch.float32).view(2, 1, 20, 2)
    cache = paged.page_kv(k, -k, page_size=16)
    assert cache.indices.tolist() == [0, 1, 2, 3]
    assert torch.equal(cache.cache[1, 0, :4, 0], k[0, 0, 16:20])  # page 1 holds sequence 0's tokens 16..19
    assert torch.equal(cache.cache[1, 0, 4:], torch.zeros(12, 1, 2))  # padding of the last page


def test_bad_paging_requests_are_clear_errors():
    k = torch.zeros(1, 1, 20, 2)
    with pytest.raises(CaptureError, match="permutation of the 2 pages"):
        paged.page_kv(k, k, page_size=16, order=torch.tensor([0, 0]))
    with pytest.raises(CaptureError, match="share one"):
        paged.page_kv(k, torch.zeros(1, 1, 21, 2))


def test_the_left_window_keeps_the_keys_of_the_captures_sliding_window():
    assert window_left(Setting()) == -1
    for w in (1, 3, 8):
        spec = MaskSpec(20, 20, True, window=w)
        dense = spec.dense("cpu")
        left = window_left(Setting(window=w))
        for p in range(20):  # flashinfer keeps keys p - window_left .. p
            expected = torch.zeros(20, dtype=torch.bool)
            expected[max(0, p - left):p + 1] = True
            assert torch.equal(dense[p], expected), (w, p)


def _reasons(setting: Setting) -> dict[str, dict[str, str]]:
    by_mode = availability_by_mode(setting)
    return {mode: {a.name: a.reason for a in rows if a.name in FLASHINFER} for mode, rows in by_mode.items()}


def test_flashinfer_refuses_only_what_it_cannot_do_per_mode():
    for extra in ({}, {"gqa": True}, {"window": 1024}, {"varlen": (512, 1536)}):
        reasons = _reasons(Setting(device="cuda", dtype="bf16", head_dim=128, **extra))
        for name in ("flashinfer_fa2", "flashinfer_fa3"):
            assert reasons["train"][name] == "flashinfer has no backward (forward only: no train step)", extra
            for mode in ("prefill", "decode"):
                assert MISSING in reasons[mode][name] or reasons[mode][name] == "" or "GPU" in reasons[mode][name]
        for name in ("flashinfer_decode", "flashinfer_decode_tc"):
            for mode in ("prefill", "train"):
                assert reasons[mode][name] == (f"{name} reads a paged KV cache: decode mode only "
                                               "(flashinfer_fa2 and flashinfer_fa3 run prefill)")
            assert "decode mode only" not in reasons["decode"][name]
        assert not any("not wired" in r for rows in reasons.values() for r in rows.values()), extra


def test_a_window_without_the_causal_mask_is_refused_with_its_reason():
    setting = Setting(device="cuda", dtype="bf16", window=64, causal=False)
    for name in FLASHINFER:
        reason = get_variant(name).why_not(Setting(**{**setting.__dict__, "mode": "decode"}))
        assert reason == "flashinfer has a left window only (window_left): a sliding window needs the causal mask"


def test_variants_json_gives_flashinfer_decode_per_mode_reasons(capsys):
    assert main(["variants", "--json", "--device", "cuda", "--dtype", "bf16", "--head-dim", "128"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    modes = rows["flashinfer_decode_tc"]["modes"]
    assert "decode mode only" in modes["prefill"]["reason"] and "decode mode only" in modes["train"]["reason"]
    assert modes["decode"]["reason"] and "decode mode only" not in modes["decode"]["reason"]  # the package, or the GPU
    assert rows["flashinfer_fa2"]["modes"]["train"]["reason"] == "flashinfer has no backward (forward only: no train step)"
    # on a CPU every flashinfer variant says first that it needs CUDA
    assert main(["variants", "--json", "--device", "cpu", "--dtype", "bf16"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert {rows[n]["modes"][m]["reason"] for n in FLASHINFER for m in ("prefill", "decode", "train")} == {
        "flashinfer needs CUDA"}


def test_runs_of_several_commands_join_one_sweep_by_its_id(tmp_path, capsys):
    args = ["capture", "--device", "cpu", "--dtype", "fp32", "--variants", "naive", "--mode", "decode",
            "--heads", "2", "--kv-heads", "1", "--head-dim", "8", "--batch", "1", "--timing-calls", "1",
            "--no-cold", "--no-isolate", "--no-ingest", "--out-dir", str(tmp_path)]  # the id, not the worker
    assert main(args + ["--kv-len", "16", "--sweep", "kv_sweep-1"]) == 0
    assert main(args + ["--kv-len", "32,48", "--repeats", "1", "--sweep", "kv_sweep-1"]) == 0
    import gzip
    metas = [json.loads(gzip.decompress(p.read_bytes()))["attention_run"] for p in tmp_path.glob("*.json.gz")]
    assert sorted(m["kv_len"] for m in metas) == [16, 32, 48] and {m["sweep"] for m in metas} == {"kv_sweep-1"}
    capsys.readouterr()
    assert main(args + ["--kv-len", "16", "--sweep", "no spaces"]) == 2
    assert "a sweep id is 1 to 64 letters" in capsys.readouterr().err


def test_an_isolated_worker_is_handed_the_sweep_id_with_the_rest_of_the_config(tmp_path):
    """The worker process reads its config as JSON: every field comes back as it was, the sweep
    id among them (the test above captures in this process)."""
    from profiler.capture import worker
    from profiler.capture.config import CaptureConfig

    config = CaptureConfig(variants=("naive", "flex"), mode="decode", kv_len=48, kv_heads=1, seq_lens=(1,),
                           varlen=(4, 12), window=3, sweep="kv_sweep-1", out_dir=tmp_path,
                           compile_cache=tmp_path / "cache")
    assert worker.config_from_json(worker.config_to_json(config)) == config
