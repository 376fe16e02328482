-- Kernels (and copies) per iteration of run $run_a vs run $run_b, by name: calls and time in each
-- and the change from a to b. A name present in one run only has zeros on the other side.
-- includes: iteration_rows, run_pair
-- params: $run_a VARCHAR, $run_b VARCHAR
WITH g AS (
    SELECT run_id, name, dur_ns, n_iter FROM iteration_rows('kernels', [$run_a, $run_b]::VARCHAR[])
    UNION ALL
    SELECT run_id, name, dur_ns, n_iter FROM iteration_rows('memops', [$run_a, $run_b]::VARCHAR[])
), per AS (
    SELECT name,
           per_iter_of(run_id, $run_a, 1.0, n_iter) AS calls_a,
           per_iter_of(run_id, $run_b, 1.0, n_iter) AS calls_b,
           per_iter_of(run_id, $run_a, dur_ns / 1e3, n_iter) AS us_a,
           per_iter_of(run_id, $run_b, dur_ns / 1e3, n_iter) AS us_b
    FROM g GROUP BY name
)
SELECT name AS kernel, calls_a, calls_b, calls_b - calls_a AS calls_delta, us_a, us_b,
       us_b - us_a AS us_delta, presence(calls_a, calls_b) AS presence
FROM per
ORDER BY abs(us_b - us_a) DESC, kernel;
