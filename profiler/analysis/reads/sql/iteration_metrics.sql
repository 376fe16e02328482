-- The metrics layer's per-iteration rows of each selected run (metrics.sql defines them; they
-- are kept in stored_iteration_metrics).
-- includes: metrics
-- params: $run_ids VARCHAR[]
SELECT * FROM stored_iteration_metrics
WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[]))
ORDER BY list_position($run_ids, run_id), iteration;
