-- Runtime and driver API calls of each selected run grouped by API: what kind of call it is,
-- calls and CPU time per iteration, and how many kernels / copies it launched per iteration
-- (by correlation).
-- includes: iteration_rows, metrics, windows
-- params: $run_ids VARCHAR[]
WITH l AS (
    SELECT * FROM iteration_rows('launches', $run_ids::VARCHAR[])
), targets AS (
    SELECT run_id, correlation, count(*) AS launched, any_value(target_kind) AS target_kind
    FROM launch_targets
    WHERE run_id IN (SELECT unnest($run_ids))
    GROUP BY run_id, correlation
)
SELECT l.run_id, l.name AS api, any_value(l.api_kind) AS api_kind,
       api_category(l.name) AS category,
       count(*) / any_value(l.n_iter) AS calls_per_iter,
       count(*) AS calls,
       sum(l.dur_ns) / 1e3 / any_value(l.n_iter) AS api_us_per_iter,
       avg(l.dur_ns) / 1e3 AS mean_us,
       coalesce(sum(t.launched) FILTER (WHERE t.target_kind = 'kernel'), 0) / any_value(l.n_iter)
           AS kernels_launched_per_iter,
       coalesce(sum(t.launched) FILTER (WHERE t.target_kind <> 'kernel'), 0) / any_value(l.n_iter)
           AS memops_launched_per_iter
FROM l LEFT JOIN targets t ON t.run_id = l.run_id AND t.correlation = l.correlation
GROUP BY l.run_id, l.name
ORDER BY run_id, api_us_per_iter DESC, api;
