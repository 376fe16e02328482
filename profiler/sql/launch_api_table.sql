-- Runtime and driver API calls of each selected run grouped by API: what kind of call it is,
-- calls and CPU time per iteration, and how many kernels / copies it launched (by correlation).
-- params: $run_ids VARCHAR[]
WITH n AS (
    SELECT t.trace_id, count(i.iteration) AS n_iter
    FROM traces t LEFT JOIN iterations i ON i.trace_id = t.trace_id
    WHERE t.trace_id IN (SELECT unnest($run_ids))
    GROUP BY t.trace_id
), l AS (
    SELECT l.*, greatest(n.n_iter, 1) AS n_iter
    FROM launches l JOIN n ON n.trace_id = l.trace_id
    WHERE n.n_iter = 0 OR l.iteration IS NOT NULL
), targets AS (
    SELECT trace_id, correlation, count(*) AS launched, any_value(target_kind) AS target_kind
    FROM launch_targets
    WHERE trace_id IN (SELECT unnest($run_ids))
    GROUP BY trace_id, correlation
)
SELECT l.trace_id AS run_id, l.name AS api, any_value(l.api_kind) AS api_kind,
       CASE WHEN l.name ILIKE '%launch%' THEN 'launch'
            WHEN l.name ILIKE '%memcpy%' THEN 'memcpy'
            WHEN l.name ILIKE '%memset%' THEN 'memset'
            WHEN l.name ILIKE '%synchronize%' OR l.name ILIKE '%sync%' THEN 'sync'
            ELSE 'other' END AS category,
       count(*) / any_value(l.n_iter) AS calls_per_iter,
       count(*) AS calls,
       sum(l.dur_ns) / 1e3 / any_value(l.n_iter) AS cpu_us_per_iter,
       avg(l.dur_ns) / 1e3 AS mean_us,
       coalesce(sum(t.launched) FILTER (WHERE t.target_kind = 'kernel'), 0) AS kernels_launched,
       coalesce(sum(t.launched) FILTER (WHERE t.target_kind <> 'kernel'), 0) AS memops_launched
FROM l LEFT JOIN targets t ON t.trace_id = l.trace_id AND t.correlation = l.correlation
GROUP BY l.trace_id, l.name
ORDER BY run_id, cpu_us_per_iter DESC, api;
