"""Issued FLOPs of packed lengths (varlen): a kernel that takes the sequences by cumulative offsets
(flashinfer's ragged prefill, FlashAttention-4's varlen) tiles each sequence from its own first token,
so what it issues is the sum over the sequences of each one's own causal (or windowed) tiles. Checked
against a hand count of Br x Bc tiles (a tile is issued whole when it holds one useful pair), on
hand-made shapes and on the real H200 varlen samples (as shipped, and with unaligned lengths)."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.analysis.model import costmodel as cm, run_shape
from profiler.cli.main import main
from profiler.storage.store import Store
from profiler.vocab import attention
from tests.conftest import SAMPLES

VARLEN = SAMPLES / "modes" / "varlen"
SHIPPED = (512, 1536, 1024, 1024)
UNALIGNED = (500, 1596, 1000, 1000)        # same total (4096), no boundary on a multiple of 128


def tile_pairs(n: int, br: int, bc: int, window: int | None = None) -> int:
    """Pairs issued in one sequence of n tokens, causal, tiles of br query rows x bc keys: every tile
    (clipped to n x n) holding a pair with key <= query (and query - key < window), counted whole."""
    pairs = 0
    for r0 in range(0, n, br):
        r1 = min(r0 + br, n)
        for c0 in range(0, n, bc):
            c1 = min(c0 + bc, n)
            # query - key runs over r0 - (c1 - 1) .. (r1 - 1) - c0 in this tile
            if (r1 - 1) - c0 >= 0 and (window is None or r0 - (c1 - 1) <= window - 1):
                pairs += (r1 - r0) * (c1 - c0)
    return pairs


def packed_pairs(docs, br: int, bc: int) -> int:
    """Pairs issued tiling the packed sequence as one (flex's block mask): a tile is issued when one
    of its pairs has query and key in the same sequence, key <= query."""
    starts = [sum(docs[:i]) for i in range(len(docs))]
    total, pairs = sum(docs), 0
    for r0 in range(0, total, br):
        r1 = min(r0 + br, total)
        for c0 in range(0, total, bc):
            c1 = min(c0 + bc, total)
            for s, n in zip(starts, docs):   # the rows and keys of this sequence inside the tile
                rows, keys = (max(r0, s), min(r1, s + n)), (max(c0, s), min(c1, s + n))
                if rows[0] < rows[1] and keys[0] < keys[1] and keys[0] <= rows[1] - 1:
                    pairs += (r1 - r0) * (c1 - c0)
                    break
    return pairs


def _cost(docs, heads=16, dim=64, window=0):
    total = sum(docs)
    cost = cm.attention_cost([1, heads, total, dim], [1, heads, total, dim], [1, heads, total, dim],
                             "c10::BFloat16", True, backend="flashinfer")
    shape = {"seq_len": total, "kv_len": total, "causal": True, "window": window,
             "varlen": ",".join(map(str, docs))}
    return run_shape.with_run_mask(cost, shape)


@pytest.mark.parametrize("tile", [(128, 128), (64, 64), (128, 64)])
@pytest.mark.parametrize("docs", [(500, 1300, 77, 171), (1,), (129, 3, 640), SHIPPED])
def test_a_varlen_kernel_issues_each_sequences_own_tiles(docs, tile):
    cost = _cost(docs)
    per_pair = 4 * 1 * 16 * 64                    # 2 matmuls x 2 FLOPs x B x H x D
    assert cost.flops == per_pair * sum(n * (n + 1) // 2 for n in docs)    # useful: unchanged
    want = per_pair * sum(tile_pairs(n, *tile) for n in docs)
    assert cm.issued_flops(cost, tile, per_doc=True) == want
    assert cm.issued_flops(cost, tile) == per_pair * packed_pairs(docs, *tile)   # one sequence of tiles
    assert cm.issued_flops(cost, None, per_doc=True) == per_pair * sum(docs) ** 2   # math: the full square


def test_unaligned_sequences_are_priced_differently_per_sequence():
    cost = _cost(UNALIGNED)
    per_doc, packed = cm.issued_flops(cost, (128, 128), per_doc=True), cm.issued_flops(cost, (128, 128))
    assert per_doc == 4 * 16 * 64 * sum(tile_pairs(n, 128, 128) for n in UNALIGNED)
    assert per_doc != packed and cost.flops <= per_doc


def test_a_window_inside_each_packed_sequence():
    docs, window = (700, 1500, 300), 256
    cost = _cost(docs, window=window)
    assert cost.flops == 4 * 16 * 64 * sum(min(i + 1, window) for n in docs for i in range(n))
    assert cm.issued_flops(cost, (128, 128), per_doc=True) == 4 * 16 * 64 * sum(
        tile_pairs(n, 128, 128, window) for n in docs)


def _ops(tmp_path, capsys, path, docs=None) -> dict:
    """`ops --json` of a sample's attention, its header's packed lengths replaced by ``docs``."""
    if docs is not None:
        with gzip.open(path, "rt") as f:
            trace = json.load(f)
        assert sum(docs) == sum(trace["attention_run"]["varlen"])
        trace["attention_run"]["varlen"] = list(docs)
        path = tmp_path / path.name.replace(".gz", "")
        path.write_text(json.dumps(trace))
    db = tmp_path / "s.duckdb"
    run = Store(db).ingest(path, source="captured").run_id
    assert main(["ops", run, "--kind", "attention", "--json", "--db", str(db)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    return row


@pytest.mark.parametrize("docs", [None, UNALIGNED])
def test_the_real_flashinfer_varlen_run_is_priced_per_sequence(docs, tmp_path, capsys):
    sample = VARLEN / "flashinfer_fa2_b1_h16_s4096_v512x1536x1024x1024_d64_bf16_causal_warm.json.gz"
    row = _ops(tmp_path, capsys, sample, docs)
    lengths = docs or SHIPPED
    assert attention.TILES["flashinfer"] == (128, 128) and row["backend"] == "flashinfer"
    assert row["flops_useful"] == 4 * 16 * 64 * sum(n * (n + 1) // 2 for n in lengths)
    assert row["flops_issued"] == 4 * 16 * 64 * sum(tile_pairs(n, 128, 128) for n in lengths)


def test_flex_tiles_the_packed_sequence_as_one(tmp_path, capsys):
    """flex's document mask is a block mask over the packed positions: its 128 x 128 blocks are
    those of the whole packed sequence, skipped only when they hold no useful pair."""
    row = _ops(tmp_path, capsys, VARLEN / "flex_b1_h16_s4096_v512x1536x1024x1024_d64_bf16_causal_warm.json.gz",
               UNALIGNED)
    assert row["backend"] == "flex"
    assert row["flops_issued"] == 4 * 16 * 64 * packed_pairs(UNALIGNED, 128, 128)
