-- The iteration windows of every run of the staged batch (stage_* tables: one or more runs, each
-- row tagged with its run_id), picked per run: its ProfilerStep#N annotations on the CPU side;
-- else a serving engine's step annotations (user annotations matching $serving_step, vLLM's
-- `execute_…_context_…(…)_generation_…(…)`, even one: each is an engine step; one inside another
-- is not a step of its own); else the occurrences of its most repeated top-level CPU user
-- annotation (at least 2); else its whole trace as one window. Numbered per run in time order.
-- includes: none
-- params: $serving_step VARCHAR
CREATE OR REPLACE TEMP TABLE stage_iterations AS
WITH steps AS (
    SELECT run_id, name, ts_ns, dur_ns
    FROM stage_ops
    WHERE cat <> 'gpu_user_annotation' AND name LIKE 'ProfilerStep#%'
), serving_all AS (
    SELECT run_id, name, ts_ns, dur_ns
    FROM stage_ops
    WHERE cat = 'user_annotation' AND starts_with(name, 'execute_') AND regexp_matches(name, $serving_step)
      AND run_id NOT IN (SELECT run_id FROM steps)
), serving AS (
    SELECT s.* FROM serving_all s
    WHERE NOT EXISTS (SELECT 1 FROM serving_all o WHERE o.run_id = s.run_id AND o.ts_ns <= s.ts_ns
                      AND s.ts_ns + s.dur_ns <= o.ts_ns + o.dur_ns AND (o.ts_ns, -o.dur_ns) < (s.ts_ns, -s.dur_ns))
), top_level AS (
    SELECT o.run_id, o.name, o.ts_ns, o.dur_ns
    FROM stage_ops o
    WHERE o.cat = 'user_annotation' AND o.depth = 0
      AND o.run_id NOT IN (SELECT run_id FROM steps) AND o.run_id NOT IN (SELECT run_id FROM serving)
), best AS (
    SELECT run_id, name,
           row_number() OVER (PARTITION BY run_id ORDER BY count(*) DESC, sum(dur_ns) DESC, name) AS place
    FROM top_level GROUP BY run_id, name HAVING count(*) >= 2
), repeated AS (
    SELECT t.run_id, t.name, t.ts_ns, t.dur_ns
    FROM top_level t JOIN best b ON b.run_id = t.run_id AND b.name = t.name AND b.place = 1
), windows AS (
    SELECT run_id, name, ts_ns AS start_ns, ts_ns + dur_ns AS end_ns FROM steps
    UNION ALL
    SELECT run_id, name, ts_ns, ts_ns + dur_ns FROM serving
    UNION ALL
    SELECT run_id, name, ts_ns, ts_ns + dur_ns FROM repeated
), spans AS (
    SELECT run_id, ts_ns, ts_ns + dur_ns AS end_ns FROM stage_ops
    UNION ALL SELECT run_id, ts_ns, ts_ns + dur_ns FROM stage_launches
    UNION ALL SELECT run_id, ts_ns, ts_ns + dur_ns FROM stage_kernels
    UNION ALL SELECT run_id, ts_ns, ts_ns + dur_ns FROM stage_memops
), whole AS (
    SELECT run_id, '(whole trace)' AS name, min(ts_ns) AS start_ns, max(end_ns) + 1 AS end_ns
    FROM spans
    WHERE run_id NOT IN (SELECT run_id FROM windows)
    GROUP BY run_id
)
SELECT run_id, (row_number() OVER (PARTITION BY run_id ORDER BY start_ns) - 1)::INTEGER AS iteration,
       name, start_ns, end_ns
FROM (SELECT * FROM windows UNION ALL SELECT * FROM whole)
ORDER BY run_id, iteration
