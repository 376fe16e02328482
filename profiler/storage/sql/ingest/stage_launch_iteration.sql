-- The iteration of each launching call, by correlation id (one row per id).
-- includes: none
-- params: none
CREATE TEMP TABLE stage_launch_iteration AS
SELECT l.correlation, min(it.iteration) FILTER (WHERE l.ts_ns < it.end_ns) AS iteration
FROM stage_launches l ASOF JOIN stage_iterations it ON l.ts_ns >= it.start_ns
WHERE l.correlation IS NOT NULL
GROUP BY l.correlation
