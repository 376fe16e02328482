-- The metrics layer's per-iteration rows of each selected run (see metrics.sql).
-- params: $run_ids VARCHAR[]
SELECT * FROM iteration_metrics($run_ids::VARCHAR[])
ORDER BY list_position($run_ids, run_id), iteration;
