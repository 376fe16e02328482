-- The ops the cost model charges GPU work to, with record_shapes' inputs (NULL when not recorded).
-- params: $run_ids VARCHAR[], $op_ids BIGINT[]
SELECT trace_id AS run_id, op_id, name, ts_ns, iteration, input_dims, input_types, concrete_inputs
FROM ops
WHERE trace_id IN (SELECT unnest($run_ids)) AND op_id IN (SELECT unnest($op_ids))
ORDER BY run_id, ts_ns;
