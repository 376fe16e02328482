-- Copies and sets belong to the iteration of the call that launched them (same correlation id); those
-- launched before the profiling window have no call, so they fall back to their own start time.
-- includes: none
-- params: none (each staged row carries its run_id: a batch of one or more runs)
INSERT INTO memops
SELECT k.run_id, k.kind, k.name, k.device, k.stream, k.ts_ns, k.dur_ns, k.bytes, k.bandwidth_gbps,
       k.correlation, k.external_id,
       coalesce(li.iteration, CASE WHEN k.ts_ns < it.end_ns THEN it.iteration END)
FROM stage_memops k
LEFT JOIN stage_launch_iteration li ON li.run_id = k.run_id AND li.correlation = k.correlation
ASOF LEFT JOIN stage_iterations it ON it.run_id = k.run_id AND k.ts_ns >= it.start_ns
