-- The iteration of each launching call of every run of the staged batch, by its run and
-- correlation id (one row per run and id): the window its earliest call started in, NULL when
-- that call lies outside every window (before the first step, between or after the steps).
-- A row exists for every recorded launch: the GPU work it launched is attributed to that step.
-- includes: none
-- params: none
CREATE OR REPLACE TEMP TABLE stage_launch_iteration AS
SELECT l.run_id, l.correlation,
       arg_min(CASE WHEN l.ts_ns < it.end_ns THEN it.iteration END, l.ts_ns) AS iteration
FROM stage_launches l ASOF LEFT JOIN stage_iterations it ON l.run_id = it.run_id AND l.ts_ns >= it.start_ns
WHERE l.correlation IS NOT NULL
GROUP BY l.run_id, l.correlation
