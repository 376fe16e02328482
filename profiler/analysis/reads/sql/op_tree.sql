-- The CPU op tree of each of the runs, for walking up from a launching op to the op the cost model
-- charges (profiler/analysis/reads/op_costs.py): run_id, op_id (the row number within the trace),
-- parent_id (-1 at the top), ts_ns, end_ns, family (3: an op the model sees through, in
-- $decomposed_ops; 1: an attention op in $attention_ops or one whose name starts with one of
-- $serving_prefixes, a serving engine's; 2: a modelled op in $model_ops; 0: other).
-- includes: none
-- params: $run_ids VARCHAR[], $attention_ops VARCHAR[], $model_ops VARCHAR[],
--         $decomposed_ops VARCHAR[], $serving_prefixes VARCHAR[]
SELECT run_id, op_id, coalesce(parent_id, -1) AS parent_id, ts_ns, ts_ns + dur_ns AS end_ns,
       CASE WHEN name IN (SELECT unnest($decomposed_ops)) THEN 3
            WHEN cat <> 'cpu_op' THEN 0
            WHEN name IN (SELECT unnest($attention_ops)) THEN 1
            WHEN list_bool_or([starts_with(name, p) FOR p IN $serving_prefixes]) THEN 1
            WHEN name IN (SELECT unnest($model_ops)) THEN 2 ELSE 0 END AS family
FROM ops
WHERE run_id IN (SELECT unnest($run_ids));  -- in no order: the cost model places each row at its op_id (cheaper than sorting)
