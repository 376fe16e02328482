"""Run labels name the mode and the shape (sql/run_labels.sql): each mode's real H200 samples in
data/samples/modes/ get the label a plain Python rule builds from the runs table's fields (mode,
kv_len, kv_heads, window, varlen), and those fields are the ones the trace file declares."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.analysis.reads import run_queries
from profiler.storage.store import Store
from tests.conftest import SAMPLES
from tests.crafted import GOOD_KERNEL

MODES = SAMPLES / "modes"
PICKED = {   # one run of each kind (file stem: what its label must say besides variant and dtype)
    "default/naive_b8_h16_s1024_d64_bf16_causal_warm": "L=1024",
    "default/naive_b8_h16_s1024_d64_bf16_causal_cold": "L=1024 (cold)",
    "modes/decode/flex_decode_b8_h32_kv8_s1_L32768_d128_bf16_causal_warm": "decode KV=32768 GQA 32/8",
    "modes/decode_sweep/sdpa_flash_decode_b8_h32_kv8_s1_L1024_d128_bf16_causal_warm_r1": "decode KV=1024 GQA 32/8",
    "modes/prefill_gqa/sdpa_flash_b4_h32_kv8_s2048_d128_bf16_causal_warm": "L=2048 GQA 32/8",
    "modes/train/sdpa_cudnn_train_b8_h16_s1024_d64_bf16_causal_warm": "train L=1024",
    "modes/window/flex_b4_h16_s4096_w1024_d64_bf16_causal_warm": "L=4096 W=1024",
    "modes/varlen/flex_b1_h16_s4096_v512x1536x1024x1024_d64_bf16_causal_warm": "L=512+1536+1024+1024",
}
FIELDS = ["variant", "dtype", "mode", "heads", "kv_heads", "seq_len", "kv_len", "window", "varlen", "cold"]


def expected(row: dict) -> str:
    """The label from the runs table's fields, written out rule by rule (not from the SQL)."""
    words = [row["variant"], row["dtype"]]
    docs = row["varlen"].split(",") if row["varlen"] else []
    if len(docs) > 4:
        lengths = f"{docs[0]}+{docs[1]}+… ({len(docs)} seqs, {sum(map(int, docs))})"
    else:
        lengths = "+".join(docs) if docs else str(row["seq_len"])
    if row["mode"] == "decode":
        words += ["decode", f"KV={row['kv_len']}"] + ([f"Q={row['seq_len']}"] if row["seq_len"] > 1 else [])
    elif row["mode"] == "prefill":
        words.append(f"L={lengths}")
    else:
        words += [row["mode"], f"L={lengths}"]
    if row["window"]:
        words.append(f"W={row['window']}")
    if row["kv_heads"] != row["heads"]:
        words.append(f"GQA {row['heads']}/{row['kv_heads']}")
    if row["cold"]:
        words.append("(cold)")
    return " ".join(words) + " · " + row["run_id"][:6]


def _fields(store, ids) -> list[dict]:
    with store.session() as db:
        columns = ", ".join(f'"{f}"' for f in FIELDS)
        rows = db.query(f"SELECT run_id, {columns} FROM traces WHERE run_id IN (SELECT unnest($ids)) "
                        "ORDER BY run_id", {"ids": ids})
    return [{k: (None if v != v else v) for k, v in r.items()} for r in rows.to_dict("records")]


@pytest.fixture(scope="module")
def picked(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("labels") / "labels.duckdb")
    ids = {stem: store.ingest(SAMPLES / f"{stem}.json.gz", source="captured").run_id for stem in PICKED}
    return store, ids


def test_the_runs_table_holds_what_each_sample_declares(picked):
    store, ids = picked
    by_id = {r["run_id"]: r for r in _fields(store, list(ids.values()))}
    for stem, run_id in ids.items():
        with gzip.open(SAMPLES / f"{stem}.json.gz", "rt") as f:
            meta = json.load(f)["attention_run"]
        row = by_id[run_id]
        # a run captured before modes (the default samples) was a prefill of heads K/V heads, seq_len keys
        before_modes = {"mode": "prefill", "kv_heads": meta["heads"], "kv_len": meta["seq_len"]}
        for key in ("variant", "mode", "heads", "kv_heads", "seq_len", "kv_len", "window", "cold"):
            assert row[key] == meta.get(key, before_modes.get(key)), (stem, key)
        assert row["varlen"] == (",".join(map(str, meta["varlen"])) if meta.get("varlen") else None)


def test_each_mode_gets_the_label_of_its_fields(picked):
    store, ids = picked
    rows = _fields(store, list(ids.values()))
    labels = run_queries.run_labels(store, [r["run_id"] for r in rows]).set_index("run_id")["label"]
    for row in rows:
        assert labels[row["run_id"]] == expected(row)
    for stem, run_id in ids.items():   # and what the file name says
        variant = stem.split("/")[-1].split("_decode_")[0].split("_train_")[0].split("_b")[0]
        assert labels[run_id] == f"{variant} bf16 {PICKED[stem]} · {run_id[:6]}", stem


def test_a_prefill_label_is_as_it_was_before_modes(picked):
    store, ids = picked
    run_id = ids["default/naive_b8_h16_s1024_d64_bf16_causal_warm"]
    assert run_queries.run_labels(store, [run_id])["label"].iloc[0] == f"naive bf16 L=1024 · {run_id[:6]}"


def _captured(tmp_path, name: str, **run) -> bytes:
    path = tmp_path / name
    path.write_text(json.dumps({"attention_run": {"dtype": "bf16", "batch": 1, "heads": 8, "head_dim": 64,
                                                  "causal": True, "cold": False, **run},
                                "traceEvents": [GOOD_KERNEL]}))
    return path


def test_many_packed_lengths_are_shortened_and_decode_names_its_queries(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    docs = [512, 1536, 1024, 1024, 256, 256, 2048, 1536]
    many = store.ingest(_captured(tmp_path, "many.json", variant="flex", mode="prefill", seq_len=sum(docs),
                                  varlen=docs)).run_id
    four = store.ingest(_captured(tmp_path, "four.json", variant="sdpa_flash", mode="decode", seq_len=4,
                                  kv_len=8192, kv_heads=2)).run_id
    mqa = store.ingest(_captured(tmp_path, "mqa.json", variant="flex", mode="train", seq_len=2048,
                                 kv_heads=1, window=256)).run_id
    labels = run_queries.run_labels(store, [many, four, mqa])["label"].tolist()
    assert labels == [f"flex bf16 L=512+1536+… (8 seqs, 8192) · {many[:6]}",
                      f"sdpa_flash bf16 decode KV=8192 Q=4 GQA 8/2 · {four[:6]}",
                      f"flex bf16 train L=2048 W=256 GQA 8/1 · {mqa[:6]}"]
    for row in _fields(store, [many, four, mqa]):
        assert run_queries.run_labels(store, [row["run_id"]])["label"].iloc[0] == expected(row)
