-- The count of ops through which autograd ran a backward pass in one run (their names start with
-- $prefix: `autograd::engine::evaluate_function: MmBackward0`, ...): a run with any is training.
-- includes: none
-- params: $run_id VARCHAR, $prefix VARCHAR
SELECT count(*) AS backward_ops
FROM ops
WHERE run_id = $run_id AND starts_with(name, $prefix);
