-- The ops the cost model charges GPU work to: name, start, iteration and record_shapes' inputs
-- as JSON text (NULL when not recorded).
-- params: $run_ids VARCHAR[], $op_ids BIGINT[] (pairs: the n-th op id is one of the n-th run's)
WITH wanted AS (SELECT unnest($run_ids) AS run_id, unnest($op_ids) AS op_id)
SELECT o.run_id, o.op_id, o.name AS op, o.ts_ns, o.iteration AS op_iteration, o.input_dims,
       o.input_types, o.concrete_inputs
FROM ops o JOIN wanted w ON w.run_id = o.run_id AND w.op_id = o.op_id
WHERE o.run_id IN (SELECT DISTINCT run_id FROM wanted);
