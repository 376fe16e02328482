-- The distinct launch configurations of each kernel name of the selected runs (only kernels
-- inside an iteration, or all when the run has none): calls, GPU time, and the time-weighted
-- mean of the occupancy the trace reports for them.
-- includes: iteration_rows
-- params: $run_ids VARCHAR[]
SELECT k.run_id, k.name AS kernel, k.device,
       k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
       k.registers_per_thread, k.shared_mem_bytes,
       count(*) AS calls, sum(k.dur_ns) AS dur_ns,
       coalesce(sum(k.est_occupancy_pct * k.dur_ns) / nullif(sum(k.dur_ns) FILTER (WHERE k.est_occupancy_pct IS NOT NULL), 0),
                avg(k.est_occupancy_pct)) AS est_occupancy_pct
FROM iteration_rows('kernels', $run_ids::VARCHAR[]) k
GROUP BY ALL
-- ties broken by the configuration itself, so a run's order never depends on the other runs asked for
ORDER BY run_id, kernel, calls DESC, dur_ns DESC, device, grid_x, grid_y, grid_z, block_x, block_y, block_z,
         registers_per_thread, shared_mem_bytes;
