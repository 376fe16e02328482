-- Kernels of each selected run grouped by name: per-iteration counts and time, share of the
-- run's summed GPU kernel time, the launch configuration most calls used (mode) and the reported
-- occupancy, time-weighted over the launches (queries.kernel_details adds the rest).
-- Only kernels inside an iteration count when the run has iterations.
-- includes: iteration_rows
-- params: $run_ids VARCHAR[]
WITH k AS (
    SELECT * FROM iteration_rows('kernels', $run_ids::VARCHAR[])
)
SELECT run_id, name AS kernel,
       count(*) / any_value(n_iter) AS calls_per_iter,
       count(*) AS calls,
       sum(dur_ns) / 1e3 AS total_us,
       sum(dur_ns) / 1e3 / any_value(n_iter) AS us_per_iter,
       avg(dur_ns) / 1e3 AS mean_us,
       100.0 * sum(dur_ns) / sum(sum(dur_ns)) OVER (PARTITION BY run_id) AS gpu_time_share_pct,
       mode(grid_x || '×' || grid_y || '×' || grid_z) AS grid,
       mode(block_x || '×' || block_y || '×' || block_z) AS block,
       mode(registers_per_thread) AS registers_per_thread,
       mode(shared_mem_bytes) AS shared_mem_bytes,
       coalesce(sum(est_occupancy_pct * dur_ns) / nullif(sum(dur_ns) FILTER (WHERE est_occupancy_pct IS NOT NULL), 0),
                avg(est_occupancy_pct)) AS est_occupancy_pct,   -- time-weighted over launches
       mode(device) AS device,
       mode(block_x * block_y * block_z) AS threads_per_block,
       mode(grid_x * grid_y * grid_z) AS grid_blocks
FROM k
GROUP BY run_id, name
ORDER BY run_id, total_us DESC, kernel;
