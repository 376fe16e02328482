-- What a trace is missing, per run and per step (docs/analysis.md, "Completeness"): one row per
-- check that found something, with its count and what it is counted among. iteration is NULL for a
-- check of the whole run. expected: a note of what every trace holds (not damage).
--   launch_no_gpu         kernel launch calls (api_category 'launch', not a graph launch, not
--                         captured) with no GPU event of their correlation: records dropped or
--                         filtered (of: those launch calls)
--   captured              expected: launch calls made while their thread captured a stream into a
--                         graph (lib/graph_capture.sql): recorded, not run
--   graph_no_gpu          graph launches (…GraphLaunch) with no replayed GPU event (of: graph launches)
--   gpu_no_launch         GPU events with no launch call of their correlation that start after the
--                         first GPU event on their stream that has one: CPU records dropped (of: GPU events)
--   carried_in            expected: GPU events with no launch call that start before the first one
--                         that has one on their stream (launched before the trace began)
--   no_launch_calls       expected: runtime calls that launch nothing (of: runtime calls)
--   gpu_before_launch     GPU events that start before their launch call began: clocks that cannot
--                         be right (of: GPU events with a launch)
--   step_no_gpu           (per step) a step that launched no GPU event while the run's other steps did
--   last_step_partial     expected: the run's last step, under half the median step's length, with
--                         no GPU event (the profiler stopped inside it)
--   step_sparse           (per step) a step that launched under half the GPU events of the median
--                         step of its run (at least 3 steps) (of: that median)
--   step_one_event        (per step) one GPU event longer than its step's window that holds more
--                         than half the step's GPU time (count: its length in µs; of: the window's)
--   graph_replayed        GPU events replayed from a graph (their correlation is a …GraphLaunch's)
--                         that no CPU op owns (their External id is no cpu_op's; a replay joined
--                         with its capture gives them the captured ops): no op, shapes or module
--                         (of: GPU events)
--   shapes_off            record_shapes off: no CPU op has input shapes (of: CPU ops)
--   memory_off            expected: profile_memory off (no memory events)
-- includes: metrics, windows, graph_capture
-- params: $run_ids VARCHAR[]
WITH gpu AS (
    SELECT run_id, device, stream, ts_ns, dur_ns, correlation, iteration, external_id FROM kernels
    WHERE run_id IN (SELECT unnest($run_ids))
    UNION ALL
    SELECT run_id, device, stream, ts_ns, dur_ns, correlation, iteration, external_id FROM memops
    WHERE run_id IN (SELECT unnest($run_ids))
), calls AS (
    SELECT l.run_id, l.name, l.ts_ns, l.correlation, l.iteration, api_category(l.name) AS cat,
           l.name ILIKE '%graphlaunch%' AS graph,
           EXISTS (SELECT 1 FROM gpu g WHERE g.run_id = l.run_id AND g.correlation = l.correlation) AS hit,
           EXISTS (SELECT 1 FROM captured_launches($run_ids) c WHERE c.run_id = l.run_id
                   AND c.ts_ns = l.ts_ns AND c.correlation IS NOT DISTINCT FROM l.correlation) AS captured
    FROM launches l WHERE l.run_id IN (SELECT unnest($run_ids))
), g2 AS (
    SELECT g.*, c.ts_ns AS launch_ns,
           min(CASE WHEN c.ts_ns IS NOT NULL THEN g.ts_ns END)
               OVER (PARTITION BY g.run_id, g.device, g.stream) AS first_launched_ns
    FROM gpu g LEFT JOIN (SELECT DISTINCT ON (run_id, correlation) run_id, correlation, ts_ns
                          FROM calls WHERE correlation IS NOT NULL) c
      ON c.run_id = g.run_id AND c.correlation = g.correlation
), steps AS (
    SELECT w.run_id, w.iteration, w.end_ns - w.start_ns AS wall_ns,
           count(g.ts_ns) AS events, coalesce(sum(g.dur_ns), 0) AS gpu_ns, coalesce(max(g.dur_ns), 0) AS top_ns
    FROM run_windows($run_ids) w LEFT JOIN gpu g ON g.run_id = w.run_id AND g.iteration = w.iteration
    WHERE w.stored GROUP BY ALL
), med AS (
    SELECT run_id, median(events) AS median_events, median(wall_ns) AS median_wall, count(*) AS n,
           max(events) AS most, max(iteration) AS last
    FROM steps GROUP BY run_id
), rows AS (
    SELECT run_id, iteration, 'launch_no_gpu' AS reason, count(*) FILTER (WHERE NOT hit) AS count,
           count(*) AS of, false AS expected
    FROM calls WHERE cat = 'launch' AND NOT graph AND NOT captured
    GROUP BY GROUPING SETS ((run_id), (run_id, iteration))
    UNION ALL
    SELECT run_id, NULL, 'captured', count(*), count(*), true
    FROM calls WHERE cat = 'launch' AND captured GROUP BY run_id
    UNION ALL
    SELECT run_id, NULL, 'graph_no_gpu', count(*) FILTER (WHERE NOT hit), count(*), false
    FROM calls WHERE graph GROUP BY run_id
    UNION ALL
    SELECT run_id, NULL, 'no_launch_calls', count(*) FILTER (WHERE NOT hit), count(*), true
    FROM calls WHERE cat NOT IN ('launch', 'memcpy', 'memset') GROUP BY run_id
    UNION ALL
    SELECT run_id, NULL, 'gpu_no_launch',
           count(*) FILTER (WHERE launch_ns IS NULL AND ts_ns >= first_launched_ns), count(*), false
    FROM g2 GROUP BY run_id
    UNION ALL
    SELECT run_id, NULL, 'carried_in',
           count(*) FILTER (WHERE launch_ns IS NULL AND (first_launched_ns IS NULL OR ts_ns < first_launched_ns)),
           count(*), true
    FROM g2 WHERE EXISTS (SELECT 1 FROM calls c WHERE c.run_id = g2.run_id) GROUP BY run_id
    UNION ALL
    SELECT run_id, NULL, 'gpu_before_launch', count(*) FILTER (WHERE ts_ns < launch_ns), count(launch_ns), false
    FROM g2 GROUP BY run_id
    UNION ALL
    SELECT s.run_id, s.iteration, CASE WHEN s.iteration = m.last AND s.wall_ns < 0.5 * m.median_wall
                                       THEN 'last_step_partial' ELSE 'step_no_gpu' END,
           1, 1, s.iteration = m.last AND s.wall_ns < 0.5 * m.median_wall
    FROM steps s JOIN med m USING (run_id) WHERE s.events = 0 AND m.most > 0
    UNION ALL
    SELECT s.run_id, s.iteration, 'step_sparse', s.events, m.median_events::BIGINT, false
    FROM steps s JOIN med m USING (run_id)
    WHERE m.n >= 3 AND s.events > 0 AND s.events < 0.5 * m.median_events
    UNION ALL
    SELECT run_id, iteration, 'step_one_event', (top_ns // 1000)::BIGINT, (wall_ns // 1000)::BIGINT, false
    FROM steps WHERE top_ns > wall_ns AND 2 * top_ns > gpu_ns
    UNION ALL
    SELECT g.run_id, NULL, 'graph_replayed', count(*) FILTER (WHERE c.graph AND o.external_id IS NULL), count(*), false
    FROM gpu g LEFT JOIN (SELECT DISTINCT run_id, correlation, graph FROM calls WHERE graph) c
      ON c.run_id = g.run_id AND c.correlation = g.correlation
    LEFT JOIN (SELECT DISTINCT run_id, external_id FROM ops WHERE run_id IN (SELECT unnest($run_ids))
               AND cat = 'cpu_op' AND external_id IS NOT NULL) o
      ON o.run_id = g.run_id AND o.external_id = g.external_id
    GROUP BY g.run_id
    UNION ALL
    SELECT run_id, NULL, 'shapes_off', count(*), count(*), false
    FROM ops WHERE run_id IN (SELECT unnest($run_ids)) AND cat = 'cpu_op'
    GROUP BY run_id HAVING count(input_dims) = 0
    UNION ALL
    SELECT t.run_id, NULL, 'memory_off', 1, 1, true
    FROM traces t WHERE t.run_id IN (SELECT unnest($run_ids))
      AND NOT EXISTS (SELECT 1 FROM memory_events m WHERE m.run_id = t.run_id)
)
SELECT run_id, iteration::INTEGER AS iteration, reason, count::BIGINT AS count, of::BIGINT AS of_count, expected
FROM rows WHERE count > 0
ORDER BY run_id, iteration NULLS FIRST, reason
