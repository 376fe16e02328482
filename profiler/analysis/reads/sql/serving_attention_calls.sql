-- The serving attention op calls of a run (vLLM's unified attention, SGLang's paged attention: the
-- ops whose names start with one of $prefixes; docs/analysis.md "Serving step annotations"), each
-- with the serving step annotation (a user_annotation matching $step, `execute_…`) that encloses
-- its start, the latest such one; annotation is NULL for a call in none. One row per call, in
-- start order.
-- includes: none
-- params: $run_id VARCHAR, $prefixes VARCHAR[], $step VARCHAR
SELECT o.op_id, o.name AS op, o.input_dims, o.input_types, o.ts_ns, o.iteration,
       (SELECT arg_max(a.name, a.ts_ns) FROM ops a
        WHERE a.run_id = o.run_id AND a.cat = 'user_annotation' AND starts_with(a.name, 'execute_')
          AND regexp_matches(a.name, $step)
          AND a.ts_ns <= o.ts_ns AND o.ts_ns < a.ts_ns + a.dur_ns) AS annotation
FROM ops o
WHERE o.run_id = $run_id AND o.cat = 'cpu_op'
  AND list_bool_or([starts_with(o.name, p) FOR p IN $prefixes])
ORDER BY o.ts_ns, o.op_id
