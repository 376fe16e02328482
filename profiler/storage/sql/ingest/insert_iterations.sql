INSERT INTO iterations SELECT $run_id, iteration, name, start_ns, end_ns FROM stage_iterations
