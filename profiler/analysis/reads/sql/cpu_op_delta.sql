-- CPU ops (cat cpu_op) per iteration of run $run_a vs run $run_b, by name: calls and self time in
-- each and the change from a to b; presence says whether an op runs in one run only.
-- includes: iteration_rows, run_pair
-- params: $run_a VARCHAR, $run_b VARCHAR
WITH per AS (
    SELECT name,
           per_iter_of(run_id, $run_a, 1.0, n_iter) AS calls_a,
           per_iter_of(run_id, $run_b, 1.0, n_iter) AS calls_b,
           per_iter_of(run_id, $run_a, self_ns / 1e3, n_iter) AS self_us_a,
           per_iter_of(run_id, $run_b, self_ns / 1e3, n_iter) AS self_us_b
    FROM iteration_rows('ops', [$run_a, $run_b]::VARCHAR[])
    WHERE cat = 'cpu_op'
    GROUP BY name
)
SELECT name AS op, calls_a, calls_b, calls_b - calls_a AS calls_delta, self_us_a, self_us_b,
       self_us_b - self_us_a AS self_us_delta, presence(calls_a, calls_b) AS presence
FROM per
ORDER BY abs(self_us_b - self_us_a) DESC, op;
