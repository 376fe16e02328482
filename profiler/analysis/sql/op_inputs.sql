-- The ops the cost model charges GPU work to: name, start, iteration and record_shapes' inputs
-- as JSON text (NULL when not recorded).
-- params: $run_id VARCHAR, $op_ids BIGINT[]
SELECT op_id, name AS op, ts_ns, iteration AS op_iteration, input_dims, input_types, concrete_inputs
FROM ops
WHERE run_id = $run_id AND op_id IN (SELECT unnest($op_ids));
