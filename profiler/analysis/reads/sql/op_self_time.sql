-- CPU ops of each selected run by self time (time not spent in child ops), per iteration;
-- the $limit heaviest per run. ProfilerStep#N annotations are left out.
-- includes: iteration_rows, cpu_work
-- params: $run_ids VARCHAR[], $limit INTEGER
WITH o AS (
    SELECT run_id, name, self_ns, dur_ns, n_iter
    FROM iteration_rows('ops', $run_ids::VARCHAR[])
    WHERE is_cpu_work(cat, name)
), g AS (
    SELECT run_id, name AS op,
           count(*) / any_value(n_iter) AS calls_per_iter,
           sum(self_ns) / 1e3 / any_value(n_iter) AS self_us_per_iter,
           sum(dur_ns) / 1e3 / any_value(n_iter) AS total_us_per_iter,
           100.0 * sum(self_ns) / sum(sum(self_ns)) OVER (PARTITION BY run_id) AS self_share_pct
    FROM o GROUP BY run_id, name
)
SELECT * FROM g
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY self_us_per_iter DESC, op) <= $limit
ORDER BY run_id, self_us_per_iter DESC, op;
