-- Kernels of each selected run grouped by name: per-iteration counts and time, share of the
-- run's summed GPU kernel time, the launch configuration most calls used (grid, block, registers
-- and shared memory of the same launches; of configurations used as often, the one with the most
-- GPU time, then the first launched: one pick, not one mode() per field, which also cost ~2-3 ms
-- each) and the reported occupancy, time-weighted over the launches (queries.kernel_details adds
-- the rest).
-- Only kernels inside an iteration count when the run has iterations.
-- includes: iteration_rows
-- params: $run_ids VARCHAR[]
WITH k AS (
    SELECT *, {'gx': grid_x, 'gy': grid_y, 'gz': grid_z, 'bx': block_x, 'by': block_y, 'bz': block_z,
               'regs': registers_per_thread, 'smem': shared_mem_bytes} AS config
    FROM iteration_rows('kernels', $run_ids::VARCHAR[])
), configs AS (     -- each launch configuration of a kernel: its calls, GPU time and first launch
    SELECT run_id, name, config, count(*) AS n, sum(dur_ns) AS ns, min(ts_ns) AS first_ns FROM k GROUP BY ALL
), top AS (         -- the one most calls used; of those used as often, the most GPU time, then the first
    -- launched, then the configuration's own order: one answer whatever order the rows come in
    SELECT run_id, name, arg_max(config, (n, ns, -first_ns, config)) AS cfg FROM configs GROUP BY ALL
), per_name AS (
    SELECT run_id, name AS kernel,
           count(*) / any_value(n_iter) AS calls_per_iter,
           count(*) AS calls,
           sum(dur_ns) / 1e3 AS total_us,
           sum(dur_ns) / 1e3 / any_value(n_iter) AS us_per_iter,
           avg(dur_ns) / 1e3 AS mean_us,
           100.0 * sum(dur_ns) / sum(sum(dur_ns)) OVER (PARTITION BY run_id) AS gpu_time_share_pct,
           coalesce(sum(est_occupancy_pct * dur_ns) / nullif(sum(dur_ns) FILTER (WHERE est_occupancy_pct IS NOT NULL), 0),
                    avg(est_occupancy_pct)) AS est_occupancy_pct,   -- time-weighted over launches
           mode(device) AS device
    FROM k
    GROUP BY run_id, name
)
SELECT p.run_id, p.kernel, calls_per_iter, calls, total_us, us_per_iter, mean_us, gpu_time_share_pct,
       cfg.gx || '×' || cfg.gy || '×' || cfg.gz AS grid,
       cfg.bx || '×' || cfg.by || '×' || cfg.bz AS block,
       cfg.regs AS registers_per_thread,
       cfg.smem AS shared_mem_bytes,
       est_occupancy_pct, device,
       cfg.bx * cfg.by * cfg.bz AS threads_per_block,
       cfg.gx * cfg.gy * cfg.gz AS grid_blocks
FROM per_name p JOIN top t ON t.run_id = p.run_id AND t.name = p.kernel
ORDER BY p.run_id, total_us DESC, p.kernel;
