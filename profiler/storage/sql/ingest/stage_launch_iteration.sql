-- The iteration of each launching call of every run of the staged batch, by its run and
-- correlation id (one row per run and id).
-- includes: none
-- params: none
CREATE OR REPLACE TEMP TABLE stage_launch_iteration AS
SELECT l.run_id, l.correlation, min(it.iteration) FILTER (WHERE l.ts_ns < it.end_ns) AS iteration
FROM stage_launches l ASOF JOIN stage_iterations it ON l.run_id = it.run_id AND l.ts_ns >= it.start_ns
WHERE l.correlation IS NOT NULL
GROUP BY l.run_id, l.correlation
