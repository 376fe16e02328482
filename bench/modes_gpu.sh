#!/bin/bash
# The H200 samples of every mode (data/samples/modes/) and the GPU tests of the modes, in one go.
#   bash bench/modes_gpu.sh OUT_DIR [PART]
# PART (default all; several: comma-separated): modes (the PyTorch variants in every mode), sweep (the decode sweep over the
# KV length, 3 repeats, flashinfer decode included), flashinfer (flashinfer in the window and
# packed-length shapes of modes/, FA2 and FA3), fa4 (FlashAttention 4 in every shape of modes/ and the decode
# sweep), train-sweep (the train step over 512-4096 tokens, 3 repeats) or
# all. flashinfer and flash_attn.cute must be importable for their parts (PYTHONPATH).
# Writes OUT_DIR/sdpa_support.json (which mode each forced SDPA backend accepts), OUT_DIR/modes.tar.gz
# (the traces), OUT_DIR/modes_timings.csv (each run's timings from a store) and OUT_DIR/pytest_gpu.txt.
set -u
OUT=${1:?an output folder}
PART=${2:-all}
has() { [ "$PART" = all ] || [[ ",$PART," == *",$1,"* ]]; }
SWEEP_V=${SWEEP_V:-sdpa_flash,sdpa_cudnn,flex,flashinfer_decode,flashinfer_decode_tc}  # the full-range variants
PY=${PYTHON:-python3}
CACHE=/tmp/modes_cc  # not CC: the image exports CC, the C compiler Triton builds with
TR=/tmp/modes
rm -rf "$TR"; mkdir -p "$TR" "$CACHE"
V=naive,sdpa_math,sdpa_efficient,sdpa_flash,sdpa_cudnn,sdpa_auto,flex
C="$PY -m profiler capture --no-ingest --no-cold --repeats 1 --no-isolate --compile-cache $CACHE --variants $V"
# the decode sweep: batch 8, 32 query heads over 8 K/V heads, head dim 128, one sweep id; naive and
# the math backend only over the shorter caches (their scores grow with the cache)
S="$PY -m profiler capture --no-ingest --no-cold --repeats 3 --no-isolate --compile-cache $CACHE --sweep decode-kv-sweep \
   --out-dir $TR/decode_sweep --mode decode --batch 8 --heads 32 --kv-heads 8 --head-dim 128"
F="$PY -m profiler capture --no-ingest --no-cold --repeats 1 --no-isolate --compile-cache $CACHE --variants flashinfer_fa2,flashinfer_fa3"
A="$PY -m profiler capture --no-ingest --no-cold --repeats 1 --no-isolate --compile-cache $CACHE --variants flash_attn_4"
DECODE_SWEEP=sweep-20261203T191146Z  # the sweep id of modes/decode/ (its 8k and 32k caches)
{
if has modes; then
timeout 60 $PY -m bench.sdpa_support --json-out "$OUT/sdpa_support.json" > /dev/null 2>&1
timeout 120 $C --out-dir $TR/prefill_gqa --batch 4 --heads 32 --kv-heads 8 --seq 2048 --head-dim 128
timeout 120 $C --out-dir $TR/decode --mode decode --batch 8 --heads 32 --kv-heads 8 --kv-len 8192,32768 --head-dim 128
timeout 150 $C --out-dir $TR/train --mode train --batch 8 --heads 16 --seq 1024 --head-dim 64
timeout 120 $C --out-dir $TR/window --batch 4 --heads 16 --seq 4096 --window 1024 --head-dim 64
timeout 120 $C --out-dir $TR/varlen --heads 16 --varlen 512,1536,1024,1024 --head-dim 64
fi
if has sweep; then
timeout 300 $S --variants $SWEEP_V --kv-len 1024,4096,8192,16384,32768,65536
timeout 100 $S --variants naive --kv-len 1024,4096,8192,16384
timeout 60 $S --variants sdpa_math --kv-len 1024,4096
fi
if has flashinfer; then
timeout 200 $F --out-dir $TR/window --batch 4 --heads 16 --seq 4096 --window 1024 --head-dim 64
timeout 200 $F --out-dir $TR/varlen --heads 16 --varlen 512,1536,1024,1024 --head-dim 64
fi
if has train-sweep; then  # the train step over the length, 3 repeats (flash_attn.cute importable for FA4)
timeout 500 $PY -m profiler capture --no-ingest --no-cold --repeats 3 --no-isolate --compile-cache $CACHE --sweep train-len-sweep \
    --out-dir $TR/train_sweep --mode train --batch 8 --heads 16 --head-dim 64 --seq 512,1024,2048,4096 \
    --variants sdpa_flash,sdpa_cudnn,sdpa_efficient,flex,flash_attn_4
fi
if has fa4; then
timeout 200 $A --out-dir $TR/prefill_gqa --batch 4 --heads 32 --kv-heads 8 --seq 2048 --head-dim 128
timeout 200 $A --out-dir $TR/decode --mode decode --batch 8 --heads 32 --kv-heads 8 --kv-len 8192,32768 --head-dim 128 \
    --sweep $DECODE_SWEEP
timeout 300 $A --out-dir $TR/train --mode train --batch 8 --heads 16 --seq 1024 --head-dim 64
timeout 200 $A --out-dir $TR/window --batch 4 --heads 16 --seq 4096 --window 1024 --head-dim 64
timeout 200 $A --out-dir $TR/varlen --heads 16 --varlen 512,1536,1024,1024 --head-dim 64
timeout 300 $S --variants flash_attn_4 --kv-len 1024,4096,8192,16384,32768,65536
fi
} > "$OUT/capture_log.txt" 2>&1
$PY - "$TR" "$OUT/modes_timings.csv" <<'PYEOF' >> "$OUT/capture_log.txt" 2>&1
import sys
from pathlib import Path
from profiler.analysis.findings import timings
from profiler.storage.store import Store
folder, csv = Path(sys.argv[1]), sys.argv[2]
store = Store("/tmp/modes_store.duckdb")
ids = {}
for path in sorted(folder.rglob("*.json.gz")):
    name = path.name.split("_2026")[0]
    ids[store.ingest(path, name=name, source="captured").run_id] = (path.parent.name, name, path.stat().st_size)
table = timings.run_timings(store, list(ids))
table["folder"] = [ids[r][0] for r in table["run_id"]]
table["name"] = [ids[r][1] for r in table["run_id"]]
table["bytes"] = [ids[r][2] for r in table["run_id"]]
table.to_csv(csv, index=False)
PYEOF
tar -czf "$OUT/modes.tar.gz" -C "$TR" .
TESTS=
has modes && TESTS="$TESTS tests/gpu/test_modes_gpu.py"
has flashinfer && TESTS="$TESTS tests/gpu/test_flashinfer_gpu.py"
has fa4 && TESTS="$TESTS tests/gpu/test_fa4_gpu.py"
if [ -n "$TESTS" ]; then
  PROFILER_TEST_COMPILE_CACHE=$CACHE timeout 400 $PY -m pytest -q -p no:cacheprovider $TESTS > "$OUT/pytest_gpu.txt" 2>&1
  tail -3 "$OUT/pytest_gpu.txt"
fi
