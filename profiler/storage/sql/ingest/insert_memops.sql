-- Copies and sets belong to the iteration of the call that launched them (same correlation id): NULL when
-- that call lies outside every iteration. In a run that records launch calls, one with no call in
-- the trace (launched before profiling began) is unattributed: NULL, counted apart (metrics.sql).
-- Only a run that records no launch calls at all places its work by its own start time.
-- includes: none
-- params: none (each staged row carries its run_id: a batch of one or more runs)
INSERT INTO memops
SELECT k.run_id, k.kind, k.name, k.device, k.stream, k.ts_ns, k.dur_ns, k.bytes, k.bandwidth_gbps,
       k.correlation, k.external_id,
       CASE WHEN li.run_id IS NOT NULL THEN li.iteration
            WHEN rec.run_id IS NOT NULL THEN NULL
            WHEN k.ts_ns < it.end_ns THEN it.iteration END
FROM stage_memops k
LEFT JOIN stage_launch_iteration li ON li.run_id = k.run_id AND li.correlation = k.correlation
LEFT JOIN (SELECT DISTINCT run_id FROM stage_launch_iteration) rec ON rec.run_id = k.run_id
ASOF LEFT JOIN stage_iterations it ON it.run_id = k.run_id AND k.ts_ns >= it.start_ns
