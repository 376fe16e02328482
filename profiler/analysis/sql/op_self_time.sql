-- CPU ops of each selected run by self time (time not spent in child ops), per iteration;
-- the $limit heaviest per run. ProfilerStep#N annotations are left out.
-- params: $run_ids VARCHAR[], $limit INTEGER
WITH n AS (
    SELECT run_id, n_iter, whole FROM run_iteration_counts($run_ids::VARCHAR[])
), o AS (
    SELECT o.run_id, o.name, o.self_ns, o.dur_ns, n.n_iter AS n_iter
    FROM ops o JOIN n ON n.run_id = o.run_id
    WHERE (n.whole OR o.iteration IS NOT NULL) AND o.cat IN ('cpu_op', 'user_annotation')
      AND o.name NOT LIKE 'ProfilerStep#%'
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
