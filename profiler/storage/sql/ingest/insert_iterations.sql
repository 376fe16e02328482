-- The iteration windows of every run of the staged batch (stage_iterations.sql picks them).
-- includes: none
-- params: none
INSERT INTO iterations SELECT run_id, iteration, name, start_ns, end_ns FROM stage_iterations
