#!/usr/bin/env bash
# On a CUDA GPU machine with Nsight Compute: capture the default shape's warm runs with counters
# (the samples' .ncu.csv files come from here) and run the GPU tests of counters.
#   bash bench/counters_gpu.sh OUT_DIR
set -uo pipefail
out=${1:?OUT_DIR}
export PYTHONUNBUFFERED=1
mkdir -p "$out" /tmp/cap
nvidia-smi -L; ncu --version | tail -1; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
time python3 -m profiler capture --counters --no-ingest --no-cold \
  --variants naive,naive_inplace,naive_compiled,sdpa_math,sdpa_efficient,sdpa_flash,sdpa_cudnn,sdpa_auto,flex \
  --out-dir /tmp/cap 2>/tmp/cap/progress.log | tee "$out/capture.log"
tar czf "$out/counters.tgz" -C /tmp/cap $(cd /tmp/cap && ls *.ncu.csv *.json.gz)
python3 -m pytest -q -p no:cacheprovider tests/gpu/test_counters_gpu.py 2>&1 | tee "$out/gputest.log"
