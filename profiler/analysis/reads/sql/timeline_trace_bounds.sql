-- Where each selected run's trace starts and ends, for the timeline's whole-trace view: one row a
-- run, start_ns (the earliest start) and end_ns (the latest end) of its stored events (ops, API
-- calls, kernels, copies and sets: the span ingest keeps in traces). Runs without events are
-- left out.
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT run_id, start_ns, end_ns
FROM traces
WHERE list_contains($run_ids::VARCHAR[], run_id) AND start_ns IS NOT NULL AND end_ns > start_ns
ORDER BY run_id;
