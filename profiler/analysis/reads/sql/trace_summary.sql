-- One row per run for `python -m profiler summary`: counts, the metrics layer's per-iteration
-- figures (metrics.sql) and the launch APIs (api_category 'launch') with their calls per iteration.
-- includes: metrics, iteration_rows, windows
-- params: $run_ids VARCHAR[] (every run id)
WITH m AS (
    SELECT * FROM run_metrics($run_ids::VARCHAR[])
), api_counts AS (
    SELECT run_id, name, count(*) / any_value(n_iter) AS calls_per_iter
    FROM iteration_rows('launches', $run_ids::VARCHAR[])
    WHERE api_category(name) = 'launch'
    GROUP BY run_id, name
), apis AS (
    SELECT run_id, map(list(name ORDER BY name), list(calls_per_iter ORDER BY name)) AS launch_apis
    FROM api_counts GROUP BY run_id
)
SELECT t.run_id, t.name, t.source, t.variant, t.gpu_name AS gpu, t.events,
       t.kernels, coalesce(m.iterations, 0) AS iterations,
       m.kernels_per_iter, m.wall_us_per_iter, m.gpu_work_us_per_iter, m.gpu_work_sum_us_per_iter,
       m.gpu_work_min_us, m.gpu_work_max_us, m.steps_differ, m.spilled_us_per_iter,
       m.unattributed_us_per_iter, m.unattributed_per_iter, m.gpu_busy_us_per_iter, m.kernel_us_per_iter,
       m.copy_us_per_iter, m.comm_us_per_iter, m.carried_us_per_iter, m.gpu_busy_pct,
       m.gpu_idle_pct, m.carried_pct, m.span_busy_pct, m.cpu_busy_us_per_iter, m.launch_api_us_per_iter,
       m.sync_us_per_iter, m.launching_threads, m.bound, m.profiler_overhead_likely,
       a.launch_apis, t.added_at
FROM traces t
LEFT JOIN m ON m.run_id = t.run_id
LEFT JOIN apis a ON a.run_id = t.run_id
ORDER BY t.added_at, t.run_id
