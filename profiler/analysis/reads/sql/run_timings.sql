-- The timings a capture measured outside the profiler (from each run's "attention_run" object):
-- wall time per call over wall_calls back-to-back calls (CUDA events; a cold run: its one call)
-- and CUDA-graph replay time per call (NULL where the variant cannot be captured, graph_note says
-- why). NULL for uploads and for captures made before these fields existed.
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT run_id, variant, cold,
       TRY_CAST(run_meta->>'wall_us_per_call' AS DOUBLE) AS wall_us_per_call,
       TRY_CAST(run_meta->>'wall_calls' AS INTEGER) AS wall_calls,
       TRY_CAST(run_meta->>'graph_us_per_call' AS DOUBLE) AS graph_us_per_call,
       TRY_CAST(run_meta->>'graph_calls' AS INTEGER) AS graph_calls,
       run_meta->>'graph_note' AS graph_note
FROM traces
WHERE run_id IN (SELECT unnest($run_ids))
ORDER BY list_position($run_ids, run_id)
