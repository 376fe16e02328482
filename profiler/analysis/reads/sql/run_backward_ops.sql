-- The count of ops through which autograd ran a backward pass in each of the runs that has any
-- (their names start with $prefix: `autograd::engine::evaluate_function: MmBackward0`, ...): a
-- run with any is training. run_id, backward_ops.
-- includes: none
-- params: $run_ids VARCHAR[], $prefix VARCHAR
SELECT run_id, count(*) AS backward_ops
FROM ops
WHERE run_id IN (SELECT unnest($run_ids)) AND starts_with(name, $prefix)
GROUP BY run_id;
