-- Which kernels (and copies) each launch API launched, per selected run, linked by correlation.
-- params: $run_ids VARCHAR[]
WITH n AS (
    SELECT run_id, n_iter, whole FROM run_iteration_counts($run_ids::VARCHAR[])
)
SELECT lt.run_id, lt.api, lt.api_kind, lt.target_kind, lt.target_name,
       count(*) / any_value(n.n_iter) AS launches_per_iter,
       count(*) AS launches,
       avg(lt.target_dur_ns) / 1e3 AS mean_target_us
FROM launch_targets lt JOIN n ON n.run_id = lt.run_id
WHERE n.whole OR lt.iteration IS NOT NULL
GROUP BY lt.run_id, lt.api, lt.api_kind, lt.target_kind, lt.target_name
ORDER BY run_id, launches DESC, api, target_name;
