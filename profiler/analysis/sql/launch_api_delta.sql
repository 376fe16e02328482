-- Runtime / driver API calls per iteration of run $run_a vs run $run_b, by API name.
-- params: $run_a, $run_b
WITH n AS (
    SELECT run_id, n_iter, whole FROM run_iteration_counts([$run_a, $run_b]::VARCHAR[])
), per AS (
    SELECT l.name, any_value(l.api_kind) AS api_kind,
           sum(CASE WHEN l.run_id = $run_a THEN 1.0 / n.n_iter ELSE 0 END) AS calls_a,
           sum(CASE WHEN l.run_id = $run_b THEN 1.0 / n.n_iter ELSE 0 END) AS calls_b,
           sum(CASE WHEN l.run_id = $run_a THEN l.dur_ns / 1e3 / n.n_iter ELSE 0 END) AS cpu_us_a,
           sum(CASE WHEN l.run_id = $run_b THEN l.dur_ns / 1e3 / n.n_iter ELSE 0 END) AS cpu_us_b
    FROM launches l JOIN n ON n.run_id = l.run_id
    WHERE n.whole OR l.iteration IS NOT NULL
    GROUP BY l.name
)
SELECT name AS api, api_kind, calls_a, calls_b, calls_b - calls_a AS calls_delta,
       cpu_us_a, cpu_us_b, cpu_us_b - cpu_us_a AS cpu_us_delta,
       CASE WHEN calls_a = 0 THEN 'only in b' WHEN calls_b = 0 THEN 'only in a' ELSE 'both' END AS presence
FROM per
ORDER BY abs(calls_b - calls_a) DESC, api;
