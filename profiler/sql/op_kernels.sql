-- Every kernel and copy of the selected runs with the CPU op it is charged to by the cost model
-- (profiler/costmodel.py): the launch call with the same correlation id names the innermost CPU
-- op (same External id, enclosing the call); walking up its parents, an attention op
-- ($attention_ops) takes everything beneath it (the outermost one, so SDPA owns its backend op),
-- except the math backend ($decomposed_ops), whose GEMMs and softmax are charged to themselves;
-- otherwise the nearest modelled op ($model_ops) owns it. owner_op_id is NULL for unmodelled work.
-- params: $run_ids VARCHAR[], $attention_ops VARCHAR[], $model_ops VARCHAR[], $decomposed_ops VARCHAR[]
WITH RECURSIVE gpu AS (
    SELECT trace_id, 'kernel' AS kind, name, dur_ns, correlation, external_id, iteration FROM kernels
    WHERE trace_id IN (SELECT unnest($run_ids))
    UNION ALL
    SELECT trace_id, kind, name, dur_ns, correlation, external_id, iteration FROM memops
    WHERE trace_id IN (SELECT unnest($run_ids))
), launched AS (
    SELECT g.*, o.op_id AS launch_op_id
    FROM gpu g
    LEFT JOIN launches l ON l.trace_id = g.trace_id AND l.correlation = g.correlation
    LEFT JOIN ops o ON o.trace_id = g.trace_id AND o.cat = 'cpu_op'
         AND o.external_id = coalesce(l.external_id, g.external_id)
         AND (l.ts_ns IS NULL OR l.ts_ns BETWEEN o.ts_ns AND o.ts_ns + o.dur_ns)
    QUALIFY row_number() OVER (PARTITION BY g.trace_id, g.kind, g.correlation, g.name, g.dur_ns
                               ORDER BY o.depth DESC NULLS LAST) = 1
), chain(trace_id, start_id, op_id, parent_id, name, hops) AS (
    SELECT o.trace_id, o.op_id, o.op_id, o.parent_id, o.name, 0
    FROM ops o
    WHERE o.trace_id IN (SELECT unnest($run_ids))
      AND o.op_id IN (SELECT launch_op_id FROM launched WHERE launched.trace_id = o.trace_id)
    UNION ALL
    SELECT p.trace_id, c.start_id, p.op_id, p.parent_id, p.name, c.hops + 1
    FROM chain c JOIN ops p ON p.trace_id = c.trace_id AND p.op_id = c.parent_id
), owners AS (
    SELECT trace_id, start_id,
           arg_max(op_id, hops) FILTER (WHERE name IN (SELECT unnest($attention_ops))) AS attention_id,
           arg_min(name, hops) FILTER (WHERE name IN (SELECT unnest($attention_ops))) AS backend_op,
           arg_min(op_id, hops) FILTER (WHERE name IN (SELECT unnest($model_ops))) AS nearest_id
    FROM chain
    GROUP BY trace_id, start_id
)
SELECT l.trace_id AS run_id, l.kind, l.name AS kernel, l.dur_ns, l.iteration,
       CASE WHEN w.attention_id IS NOT NULL AND w.backend_op NOT IN (SELECT unnest($decomposed_ops))
            THEN w.attention_id ELSE w.nearest_id END AS owner_op_id,
       CASE WHEN w.attention_id IS NOT NULL AND w.backend_op NOT IN (SELECT unnest($decomposed_ops))
            THEN w.backend_op END AS backend_op
FROM launched l
LEFT JOIN owners w ON w.trace_id = l.trace_id AND w.start_id = l.launch_op_id;
