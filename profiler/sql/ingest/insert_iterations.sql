INSERT INTO iterations SELECT $trace_id, iteration, name, start_ns, end_ns FROM stage_iterations
