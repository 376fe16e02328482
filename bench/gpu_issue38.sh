#!/usr/bin/env bash
# Issue 38 on one H100 or H200, in one go (< 10 minutes): samples of the default shape and the decode
# sweep, counters for every mode (prefill, prefill with GQA, decode, train, window, packed lengths),
# the GPU's measured ceilings (twice: reproducible within 3 %?), a measurement record in every
# trace, plain Nsight Compute runs to check the counters against (within 1 pt?), cold runs whose
# first kernel is checked for missing L2 (capture/l2check.py), and one run captured while another
# process loads the GPU (bench/gpu_load.py), compared with the idle one (the warnings it draws).
#   bash bench/gpu_issue38.sh OUT_DIR
# Traces and their .ncu.csv go under data/samples_<gpu>/<part>/ (the H100's are data/samples_h100/);
# runs, counters and ceilings are also ingested into /tmp/issue38_store.duckdb when duckdb is
# importable (the capture's own path; wheels in .whl/ are installed first when it is not).
# OUT_DIR holds 4 files: log.txt (how), summary.txt and summary.json (what: python -m bench.gpu_issue38_check)
# and samples_<gpu>.tgz (the samples folder, and work/: ceilings_{1,2}.json, the plain ncu CSVs,
# progress.log); nothing deeper than OUT_DIR itself, each well under 16 MiB.
set -uo pipefail
OUT=${1:?an output folder}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
START=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/^NVIDIA //; s/[^A-Za-z0-9]/_/g')
DIR=data/samples_$GPU
WORK=/tmp/issue38_work
rm -rf "$DIR" "$WORK"; mkdir -p "$DIR" "$WORK"
if ! $PY -c 'import duckdb, msgspec' 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install --quiet --no-index .whl/*.whl >/dev/null 2>&1 || echo "wheels in .whl/ did not install"
fi
CACHE=/tmp/issue38_cc
mkdir -p "$CACHE"
if $PY -c 'import duckdb' 2>/dev/null; then STORE=(--db /tmp/issue38_store.duckdb); else STORE=(--no-ingest); fi
C="$PY -m profiler capture --counters --no-cold --repeats 1 --no-isolate --compile-cache $CACHE ${STORE[*]}"
left() { echo $(( 560 - ($(date +%s) - START) )); }   # seconds left of the 10 minutes, a margin kept
step() {  # step NAME SECONDS COMMAND...: run with a timeout that never passes the 10 minutes
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
step ceilings-1 60 $PY -m profiler.capture.ceilings --out "$WORK/ceilings_1.json"
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
step cold 150 $PY -m profiler capture --counters --cold --repeats 1 --isolate ${STORE[*]} \
    --out-dir "$DIR/cold" --variants sdpa_flash,sdpa_cudnn --batch 8 --heads 16 --seq 1024 --head-dim 64
# the same run as default/'s sdpa_flash, captured while another process drives the GPU with GEMMs
$PY -m bench.gpu_load 45 > "$WORK/load.log" 2>&1 & LOAD=$!
sleep 5
step loaded 40 $PY -m profiler capture --no-cold --repeats 1 --no-isolate --compile-cache $CACHE \
    ${STORE[*]} --out-dir "$DIR/loaded" --variants sdpa_flash --batch 8 --heads 16 --seq 1024 --head-dim 64
kill "$LOAD" 2>/dev/null; wait "$LOAD" 2>/dev/null; cat "$WORK/load.log"
step ceilings-2 60 $PY -m profiler.capture.ceilings --out "$WORK/ceilings_2.json"
step check 60 $PY -m bench.gpu_issue38_check "$DIR" "$WORK" "$OUT"
} 2> "$WORK/progress.log" | tee "$OUT/log.txt"
tar -czf "$OUT/samples_$GPU.tgz" --exclude="*.duckdb" "$DIR" -C /tmp issue38_work
echo "done in $(( $(date +%s) - START )) s" | tee -a "$OUT/log.txt"
