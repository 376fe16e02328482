-- The GPU work of each selected run inside its iterations, per name: kernels, copies and sets,
-- with calls and µs per iteration. Two runs that launch the same names as often run the same
-- work (the ranking names such a variant as running the same kernels as another, not as a rival).
-- includes: iteration_rows
-- params: $run_ids VARCHAR[]
WITH w AS (
    SELECT run_id, name, dur_ns, n_iter FROM iteration_rows('kernels', $run_ids::VARCHAR[])
    UNION ALL
    SELECT run_id, name, dur_ns, n_iter FROM iteration_rows('memops', $run_ids::VARCHAR[])
)
SELECT run_id, name, count(*) / any_value(n_iter) AS calls_per_iter,
       sum(dur_ns) / 1e3 / any_value(n_iter) AS us_per_iter
FROM w
GROUP BY run_id, name
ORDER BY run_id, us_per_iter DESC, name;
