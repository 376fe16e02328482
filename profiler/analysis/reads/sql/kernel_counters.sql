-- Nsight Compute's counters per kernel name of the selected runs (only runs with counters
-- attached; profiler/storage/counters.py): how many launches were counted, the counters averaged
-- over them weighted by their time under ncu (to 4 decimals: ncu writes 2, so one launch reads as written), the most local-memory instructions (register
-- spills, local arrays) of one launch, and ncu's occupancy
-- limiter of the longest counted launch.
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT run_id, name AS kernel,
       count(*) AS counted_launches,
       round(sum(occupancy_achieved_pct * ncu_duration_ns) / nullif(sum(ncu_duration_ns), 0), 4) AS occupancy_achieved_pct,
       round(sum(occupancy_theoretical_ncu_pct * ncu_duration_ns) / nullif(sum(ncu_duration_ns), 0), 4) AS occupancy_theoretical_ncu_pct,
       round(sum(sm_throughput_pct * ncu_duration_ns) / nullif(sum(ncu_duration_ns), 0), 4) AS sm_throughput_pct,
       round(sum(dram_throughput_pct * ncu_duration_ns) / nullif(sum(ncu_duration_ns), 0), 4) AS dram_throughput_pct,
       round(sum(l2_throughput_pct * ncu_duration_ns) / nullif(sum(ncu_duration_ns), 0), 4) AS l2_throughput_pct,
       round(sum(tensor_pipe_active_pct * ncu_duration_ns) / nullif(sum(ncu_duration_ns), 0), 4) AS tensor_pipe_active_pct,
       max(local_load_instructions + local_store_instructions) AS local_memory_instructions,
       arg_max(ncu_limiter, ncu_duration_ns) AS ncu_limiter,
       arg_max(least(limit_registers, limit_shared_mem, limit_warps, limit_blocks, limit_barriers),
               ncu_duration_ns) AS ncu_limit_blocks_per_sm,
       sum(ncu_duration_ns) / count(*) / 1e3 AS ncu_mean_us
FROM kernel_counters
WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[]))
GROUP BY run_id, name
ORDER BY run_id, kernel;
