-- Which kernels (and copies) each launch API launched, per selected run, linked by correlation.
-- params: $run_ids VARCHAR[]
WITH n AS (
    SELECT t.trace_id, count(i.iteration) AS n_iter
    FROM traces t LEFT JOIN iterations i ON i.trace_id = t.trace_id
    WHERE t.trace_id IN (SELECT unnest($run_ids))
    GROUP BY t.trace_id
)
SELECT lt.trace_id AS run_id, lt.api, lt.api_kind, lt.target_kind, lt.target_name,
       count(*) / greatest(any_value(n.n_iter), 1) AS launches_per_iter,
       count(*) AS launches,
       avg(lt.target_dur_ns) / 1e3 AS mean_target_us
FROM launch_targets lt JOIN n ON n.trace_id = lt.trace_id
WHERE n.n_iter = 0 OR lt.iteration IS NOT NULL
GROUP BY lt.trace_id, lt.api, lt.api_kind, lt.target_kind, lt.target_name
ORDER BY run_id, launches DESC, api, target_name;
