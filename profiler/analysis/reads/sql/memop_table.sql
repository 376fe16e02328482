-- Copies and sets of each selected run grouped by name, per iteration: kind, calls_per_iter,
-- bytes_per_iter, us_per_iter. Only memops inside an iteration count when the run has iterations.
-- includes: iteration_rows
-- params: $run_ids VARCHAR[]
WITH m AS (
    SELECT * FROM iteration_rows('memops', $run_ids::VARCHAR[])
)
SELECT run_id, name AS memop, any_value(kind) AS kind,
       count(*) / any_value(n_iter) AS calls_per_iter,
       coalesce(sum(bytes)::DOUBLE, 0) / any_value(n_iter) AS bytes_per_iter,
       sum(dur_ns) / 1e3 / any_value(n_iter) AS us_per_iter
FROM m
GROUP BY run_id, name
ORDER BY run_id, us_per_iter DESC, memop;
