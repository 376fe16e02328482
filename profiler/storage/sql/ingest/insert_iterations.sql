-- The run's iteration windows (stage_iterations: Store._iterations picks them with iterations_*.sql).
-- includes: none
-- params: $run_id VARCHAR
INSERT INTO iterations SELECT $run_id, iteration, name, start_ns, end_ns FROM stage_iterations
