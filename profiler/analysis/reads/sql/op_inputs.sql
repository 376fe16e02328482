-- The ops of each of the runs the cost model may charge GPU work to (those named in $names: the
-- modelled and attention ops, any of which can own a call or be its backend, and the serving
-- engines' attention ops, whose names start with one of $serving_prefixes): run_id, op_id,
-- name, start, iteration and record_shapes' inputs as JSON text (NULL when not recorded), by run
-- and op_id. Selecting by name reads a few more ops than the charged ones, and is cheaper than
-- passing every charged op id.
-- includes: none
-- params: $run_ids VARCHAR[], $names VARCHAR[], $serving_prefixes VARCHAR[]
SELECT run_id, op_id, name AS op, ts_ns, iteration AS op_iteration, input_dims, input_types, concrete_inputs
FROM ops
WHERE run_id IN (SELECT unnest($run_ids)) AND (name IN (SELECT unnest($names))
                                              OR list_bool_or([starts_with(name, p) FOR p IN $serving_prefixes]))
ORDER BY run_id, op_id;
