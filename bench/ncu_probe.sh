set -x
mkdir -p /tmp/p
nvidia-smi -L; which ncu || ls /opt/nvidia/nsight-compute/*/ncu; ncu --version
ncu --query-metrics --chip gh100 > /tmp/p/gh100_metrics.txt 2>&1; wc -l /tmp/p/gh100_metrics.txt
grep -iE "pipe_tensor|warps_active|spill|occupancy_limit|local_(ld|st)|maximum_warps" /tmp/p/gh100_metrics.txt | head -60
S='--section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis'
for v in sdpa_flash sdpa_cudnn sdpa_efficient naive sdpa_math; do
  t0=$SECONDS
  ncu --profile-from-start off --clock-control none --target-processes all $S -f -o /tmp/$v python3 -m profiler.capture.counted "{\"variant\":\"$v\",\"batch\":8,\"heads\":16,\"seq_len\":1024,\"head_dim\":64,\"dtype\":\"bf16\",\"causal\":true,\"warmup_calls\":3}" > /tmp/$v.log 2>&1
  echo "$v rc=$? $((SECONDS-t0)) s"; tail -3 /tmp/$v.log
  ncu --import /tmp/$v.ncu-rep --csv --page raw --print-units base > /tmp/p/$v.raw.csv 2>/tmp/p/$v.err; wc -c /tmp/p/$v.raw.csv
done
cut -c1-600 /tmp/p/sdpa_flash.raw.csv | head -4
tar czf $OUT/probe.tgz -C /tmp/p .
