-- Iterations (ProfilerStep#N windows) of the selected runs, one row each. A run without any
-- iteration gets one row, iteration 0, spanning the whole trace.
-- params: $run_ids VARCHAR[]
SELECT i.trace_id AS run_id, i.iteration, i.name, i.start_ns, i.end_ns,
       (i.end_ns - i.start_ns) / 1e3 AS dur_us
FROM iterations i
WHERE i.trace_id IN (SELECT unnest($run_ids))
UNION ALL
SELECT t.trace_id, 0, 'whole trace', t.start_ns, t.end_ns, (t.end_ns - t.start_ns) / 1e3
FROM traces t
WHERE t.trace_id IN (SELECT unnest($run_ids))
  AND NOT EXISTS (SELECT 1 FROM iterations i WHERE i.trace_id = t.trace_id)
ORDER BY run_id, iteration;
