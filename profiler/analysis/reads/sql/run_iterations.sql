-- Iterations of the selected runs, one row each (the metrics layer's windows: a run without any
-- iteration gets one row, iteration 0, spanning the whole trace).
-- includes: windows
-- params: $run_ids VARCHAR[]
SELECT run_id, iteration, name, start_ns, end_ns, (end_ns - start_ns) / 1e3 AS dur_us
FROM run_windows($run_ids::VARCHAR[])
ORDER BY run_id, iteration;
