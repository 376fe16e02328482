#!/usr/bin/env bash
# What issue 38 still needs from a GPU (< 5 minutes), after bench/gpu_issue38.sh ran on it:
# the ceilings measured twice the sustained way (1 s warm-up per point, median loop: the H200's
# fp8 GEMM read 1,455 then 1,344 TFLOP/s as a burst), cold runs whose L2 was flushed before the
# first call (their L2 check must say "missed L2"), and the plain Nsight Compute comparison for one
# workload of every mode over the GPU's committed samples.
#   bash bench/gpu_issue38_rest.sh OUT_DIR
# OUT_DIR gets log.txt, ceilings_3.json, ceilings_4.json, plain.json, the plain CSVs and
# flushed.tgz (data/samples_<gpu>_flushed/cold/: traces, .ncu.csv, records with "l2_check").
set -uo pipefail
OUT=${1:?an output folder}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
$PY -c 'import duckdb, msgspec' 2>/dev/null || $PY -m pip install -q --no-index .whl/*.whl >/dev/null 2>&1
if nvidia-smi -L | grep -q H200; then G=H200; S=data/samples_H200; else G=h100; S=data/samples_h100; fi
D=data/samples_${G}_flushed
mkdir -p "$D"
{
nvidia-smi -L
$PY -m profiler.capture.ceilings --out "$OUT/ceilings_3.json"
timeout 150 $PY -m profiler capture --counters --cold --repeats 1 --isolate --no-ingest --out-dir "$D/cold" \
    --variants sdpa_flash,sdpa_cudnn --batch 8 --heads 16 --seq 1024 --head-dim 64
$PY -m profiler.capture.ceilings --out "$OUT/ceilings_4.json"
timeout 120 $PY -m bench.gpu_issue38_check --plain "$S" "$OUT"
} 2>&1 | tee "$OUT/log.txt"
tar czf "$OUT/flushed.tgz" "$D"
