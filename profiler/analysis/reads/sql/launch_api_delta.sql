-- Runtime / driver API calls per iteration of run $run_a vs run $run_b, by API name.
-- includes: iteration_rows, run_pair
-- params: $run_a VARCHAR, $run_b VARCHAR
WITH per AS (
    SELECT name, any_value(api_kind) AS api_kind,
           per_iter_of(run_id, $run_a, 1.0, n_iter) AS calls_a,
           per_iter_of(run_id, $run_b, 1.0, n_iter) AS calls_b,
           per_iter_of(run_id, $run_a, dur_ns / 1e3, n_iter) AS cpu_us_a,
           per_iter_of(run_id, $run_b, dur_ns / 1e3, n_iter) AS cpu_us_b
    FROM iteration_rows('launches', [$run_a, $run_b]::VARCHAR[])
    GROUP BY name
)
SELECT name AS api, api_kind, calls_a, calls_b, calls_b - calls_a AS calls_delta,
       cpu_us_a, cpu_us_b, cpu_us_b - cpu_us_a AS cpu_us_delta, presence(calls_a, calls_b) AS presence
FROM per
ORDER BY abs(calls_b - calls_a) DESC, api;
