#!/usr/bin/env bash
# Issue 38 on one H100 or H200, in one go (< 8 minutes): samples of the default shape and the decode
# sweep, counters for every mode (prefill, prefill with GQA, decode, train, window, packed lengths),
# the GPU's measured ceilings (twice: reproducible within 3 %?), a measurement record in every
# trace, and plain Nsight Compute runs to check the counters against (within 1 pt?).
#   bash bench/gpu_issue38.sh OUT_DIR
# Traces and their .ncu.csv go under data/samples_<gpu>/<part>/ (the H100's are data/samples_h100/) (and OUT_DIR/samples_<gpu>.tgz);
# runs, counters and ceilings are also ingested into /tmp/issue38_store.duckdb when duckdb is
# importable (the capture's own path); OUT_DIR/ceilings_{1,2}.json, OUT_DIR/summary.json and
# OUT_DIR/summary.txt say what was measured (bench/gpu_issue38_check.py), OUT_DIR/log.txt how.
set -uo pipefail
OUT=${1:?an output folder}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
START=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/^NVIDIA //; s/[^A-Za-z0-9]/_/g')
DIR=data/samples_$GPU
rm -rf "$DIR"; mkdir -p "$DIR"
CACHE=/tmp/issue38_cc
mkdir -p "$CACHE"
if $PY -c 'import duckdb' 2>/dev/null; then STORE=(--db /tmp/issue38_store.duckdb); else STORE=(--no-ingest); fi
C="$PY -m profiler capture --counters --no-cold --repeats 1 --no-isolate --compile-cache $CACHE ${STORE[*]}"
left() { echo $(( 470 - ($(date +%s) - START) )); }   # seconds left of the 8 minutes, a margin kept
step() {  # step NAME SECONDS COMMAND...: run with a timeout that never passes the 8 minutes
  local name=$1 limit=$2; shift 2
  local budget; budget=$(left); [ "$budget" -lt "$limit" ] && limit=$budget
  if [ "$limit" -le 5 ]; then echo "== $name: skipped, out of time"; return; fi
  echo "== $name (at most ${limit} s)"; timeout "$limit" "$@"; echo "== $name: exit $? at $(( $(date +%s) - START )) s"
}
{
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
(ncu --version || /usr/local/cuda/bin/ncu --version) 2>/dev/null | tail -1
$PY -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'
$PY -c 'import pynvml' 2>/dev/null && echo "NVML: nvidia-ml-py" || echo "NVML: nvidia-ml-py not installed; nvidia-smi samples instead"
step ceilings-1 60 $PY -m profiler.capture.ceilings --out "$OUT/ceilings_1.json"
step default 75 $C --out-dir "$DIR/default" --variants sdpa_flash,sdpa_cudnn,sdpa_efficient,naive \
    --batch 8 --heads 16 --seq 1024 --head-dim 64
step decode_sweep 110 $C --out-dir "$DIR/decode_sweep" --mode decode --variants sdpa_flash,sdpa_cudnn \
    --batch 8 --heads 32 --kv-heads 8 --head-dim 128 --kv-len 1024,8192,32768 --sweep "issue38-decode-$GPU"
step prefill_gqa 40 $C --out-dir "$DIR/prefill_gqa" --variants sdpa_flash,sdpa_cudnn \
    --batch 4 --heads 32 --kv-heads 8 --seq 2048 --head-dim 128
step train 50 $C --out-dir "$DIR/train" --mode train --variants sdpa_flash,sdpa_cudnn \
    --batch 8 --heads 16 --seq 1024 --head-dim 64
step window 40 $C --out-dir "$DIR/window" --variants sdpa_cudnn,sdpa_efficient \
    --batch 4 --heads 16 --seq 4096 --window 1024 --head-dim 64
step varlen 40 $C --out-dir "$DIR/varlen" --variants sdpa_cudnn,sdpa_efficient \
    --heads 16 --varlen 512,1536,1024,1024 --head-dim 64
step ceilings-2 60 $PY -m profiler.capture.ceilings --out "$OUT/ceilings_2.json"
step check 60 $PY bench/gpu_issue38_check.py "$DIR" "$OUT"
} 2> "$OUT/progress.log" | tee "$OUT/log.txt"
tar -czf "$OUT/samples_$GPU.tgz" "$DIR"
echo "done in $(( $(date +%s) - START )) s" | tee -a "$OUT/log.txt"
