-- CPU ops (cat cpu_op) per iteration of run $run_a vs run $run_b, by name: calls and self time in
-- each and the change from a to b; presence says whether an op runs in one run only.
-- params: $run_a, $run_b
WITH n AS (
    SELECT run_id, n_iter, whole FROM run_iteration_counts([$run_a, $run_b]::VARCHAR[])
), per AS (
    SELECT o.name,
           sum(CASE WHEN o.run_id = $run_a THEN 1.0 / n.n_iter ELSE 0 END) AS calls_a,
           sum(CASE WHEN o.run_id = $run_b THEN 1.0 / n.n_iter ELSE 0 END) AS calls_b,
           sum(CASE WHEN o.run_id = $run_a THEN o.self_ns / 1e3 / n.n_iter ELSE 0 END) AS self_us_a,
           sum(CASE WHEN o.run_id = $run_b THEN o.self_ns / 1e3 / n.n_iter ELSE 0 END) AS self_us_b
    FROM ops o JOIN n ON n.run_id = o.run_id
    WHERE o.cat = 'cpu_op' AND (n.whole OR o.iteration IS NOT NULL)
    GROUP BY o.name
)
SELECT name AS op, calls_a, calls_b, calls_b - calls_a AS calls_delta, self_us_a, self_us_b,
       self_us_b - self_us_a AS self_us_delta,
       CASE WHEN calls_a = 0 THEN 'only in b' WHEN calls_b = 0 THEN 'only in a' ELSE 'both' END AS presence
FROM per
ORDER BY abs(self_us_b - self_us_a) DESC, op;
