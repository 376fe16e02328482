-- Kernels (and copies) per iteration of run $run_a vs run $run_b, by name: calls and time in each
-- and the change from a to b. A name present in one run only has zeros on the other side.
-- params: $run_a, $run_b
WITH n AS (
    SELECT run_id, n_iter, whole FROM run_iteration_counts([$run_a, $run_b]::VARCHAR[])
), g AS (
    SELECT run_id, name, dur_ns, iteration FROM kernels WHERE run_id IN ($run_a, $run_b)
    UNION ALL
    SELECT run_id, name, dur_ns, iteration FROM memops WHERE run_id IN ($run_a, $run_b)
), per AS (
    SELECT g.name,
           sum(CASE WHEN g.run_id = $run_a THEN 1.0 / n.n_iter ELSE 0 END) AS calls_a,
           sum(CASE WHEN g.run_id = $run_b THEN 1.0 / n.n_iter ELSE 0 END) AS calls_b,
           sum(CASE WHEN g.run_id = $run_a THEN g.dur_ns / 1e3 / n.n_iter ELSE 0 END) AS us_a,
           sum(CASE WHEN g.run_id = $run_b THEN g.dur_ns / 1e3 / n.n_iter ELSE 0 END) AS us_b
    FROM g JOIN n ON n.run_id = g.run_id
    WHERE n.whole OR g.iteration IS NOT NULL
    GROUP BY g.name
)
SELECT name AS kernel, calls_a, calls_b, calls_b - calls_a AS calls_delta, us_a, us_b,
       us_b - us_a AS us_delta,
       CASE WHEN calls_a = 0 THEN 'only in b' WHEN calls_b = 0 THEN 'only in a' ELSE 'both' END AS presence
FROM per
ORDER BY abs(us_b - us_a) DESC, kernel;
