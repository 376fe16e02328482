-- The CPU time of one call of each selected run's attention: the capture's own label around each
-- call (the user annotation 'attention:<variant>'), summed inside the iterations, over the run's
-- iteration count. What a run recorded on the CPU (no GPU work) is ranked by. No row for a run
-- without such a label (an upload, or a capture made before the label existed).
-- includes: iteration_rows
-- params: $run_ids VARCHAR[]
SELECT o.run_id, sum(o.dur_ns) / 1e3 / any_value(o.n_iter) AS cpu_us_per_call
FROM iteration_rows('ops', $run_ids::VARCHAR[]) o JOIN traces t ON t.run_id = o.run_id
WHERE o.cat = 'user_annotation' AND o.name = 'attention:' || t.variant
GROUP BY o.run_id
ORDER BY o.run_id;
