-- CPU vs GPU time per iteration of each selected run: the metrics layer's numbers (metrics.sql)
-- plus the self time of CPU ops on every thread.
--   wall_us          iteration length
--   cpu_busy_us      CPU wall time of the launching thread (its CPU ops and runtime / driver calls)
--   cpu_op_self_us   self time of CPU ops and annotations (ProfilerStep#N excluded), all threads
--   launch_api_us    time inside launch calls; sync_us: inside synchronize calls
--   gpu_busy_us      union of the iteration's kernels, copies and sets; gpu_idle_us: no GPU work
--   gpu_kernel_us    union of its kernels; gpu_memop_us: of its copies and sets
-- includes: metrics, iteration_rows, cpu_work
-- params: $run_ids VARCHAR[]
WITH cpu AS (
    SELECT run_id, coalesce(iteration, 0) AS iteration, sum(self_ns) AS ns
    FROM iteration_rows('ops', $run_ids::VARCHAR[])
    WHERE is_cpu_work(cat, name)
    GROUP BY ALL
)
SELECT m.run_id, m.iteration, m.wall_ns / 1e3 AS wall_us, m.cpu_busy_ns / 1e3 AS cpu_busy_us,
       coalesce(cpu.ns, 0) / 1e3 AS cpu_op_self_us,
       m.launch_api_ns / 1e3 AS launch_api_us, m.sync_ns / 1e3 AS sync_us,
       m.gpu_busy_ns / 1e3 AS gpu_busy_us, m.gpu_idle_ns / 1e3 AS gpu_idle_us,
       m.kernel_ns / 1e3 AS gpu_kernel_us, m.copy_ns / 1e3 AS gpu_memop_us
FROM stored_iteration_metrics m
LEFT JOIN cpu ON cpu.run_id = m.run_id AND cpu.iteration = m.iteration
WHERE m.run_id IN (SELECT unnest($run_ids))
ORDER BY run_id, iteration;
