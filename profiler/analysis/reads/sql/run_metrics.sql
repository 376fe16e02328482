-- The metrics layer's per-run row for each selected run (see metrics.sql for every definition),
-- in $run_ids order.
-- includes: metrics
-- params: $run_ids VARCHAR[]
SELECT * FROM run_metrics($run_ids::VARCHAR[])
ORDER BY list_position($run_ids, run_id);
