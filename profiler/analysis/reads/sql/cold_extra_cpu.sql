-- What a cold run's CPU does that a warm run of the same variant does not: per op name (CPU ops
-- and annotations, the variant's own call label included: its self time is Python work outside
-- any op), self time per iteration in the cold run $cold and the warm run $warm, and the extra.
-- ProfilerStep windows and a correctness check ('check_output', in captures before the check
-- moved out of the profiled cycle) are not the variant's work and are left out.
-- includes: iteration_rows, cpu_work
-- params: $cold VARCHAR, $warm VARCHAR
WITH check_spans AS (
    SELECT run_id, tid, ts_ns, ts_ns + dur_ns AS end_ns FROM ops
    WHERE run_id = $cold AND name = 'check_output'
), per AS (
    SELECT o.name,
           sum(CASE WHEN o.run_id = $cold THEN o.self_ns / 1e3 / o.n_iter ELSE 0 END) AS cold_self_us,
           sum(CASE WHEN o.run_id = $warm THEN o.self_ns / 1e3 / o.n_iter ELSE 0 END) AS warm_self_us
    FROM iteration_rows('ops', [$cold, $warm]::VARCHAR[]) o
    WHERE is_cpu_work(o.cat, o.name)
      AND NOT EXISTS (SELECT 1 FROM check_spans c WHERE c.run_id = o.run_id AND c.tid = o.tid
                      AND o.ts_ns >= c.ts_ns AND o.ts_ns < c.end_ns)
    GROUP BY o.name
)
SELECT name AS op, cold_self_us, warm_self_us, cold_self_us - warm_self_us AS extra_us
FROM per
ORDER BY extra_us DESC, op
