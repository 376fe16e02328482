-- What each run holds of CUDA/HIP graphs (docs/analysis.md, "Graphs"): the captures it recorded
-- and the replays it ran. One row per run that has either.
--   graphs_captured       stream captures (lib/graph_capture.sql: capture_windows)
--   captured_launches     kernel launch calls recorded into them (not run)
--   launches_per_graph_*  of those, the fewest, median and most in one graph
--   graph_launches        …GraphLaunch calls (replays)
--   replayed_events       GPU events replayed by them (their correlation is a graph launch's)
--   replayed_gpu_us       the replayed events' summed time; gpu_us: every GPU event's
--   replayed_with_op      of the replayed events, those given a CPU op (their External id is a
--                         cpu_op's: a replay joined with its capture, parse/graph_join.py)
-- includes: metrics, graph_capture
-- params: $run_ids VARCHAR[]
WITH per_graph AS (
    SELECT run_id, graph, count(*) AS n FROM captured_launches($run_ids) GROUP BY run_id, graph
), cap AS (
    SELECT w.run_id, count(*) AS graphs_captured, coalesce(sum(p.n), 0) AS captured_launches,
           coalesce(min(p.n), 0) AS launches_per_graph_min, coalesce(median(p.n), 0) AS launches_per_graph_median,
           coalesce(max(p.n), 0) AS launches_per_graph_max
    FROM capture_windows($run_ids) w LEFT JOIN per_graph p ON p.run_id = w.run_id AND p.graph = w.graph
    GROUP BY w.run_id
), gl AS (
    SELECT run_id, correlation FROM launches
    WHERE run_id IN (SELECT unnest($run_ids)) AND name ILIKE '%graphlaunch%'
), cpu_ops AS (
    SELECT DISTINCT run_id, external_id FROM ops
    WHERE run_id IN (SELECT unnest($run_ids)) AND cat = 'cpu_op' AND external_id IS NOT NULL
), gpu AS (
    SELECT g.run_id, g.dur_ns, g.correlation, o.external_id IS NOT NULL AS has_op
    FROM (SELECT run_id, dur_ns, correlation, external_id FROM kernels WHERE run_id IN (SELECT unnest($run_ids))
          UNION ALL
          SELECT run_id, dur_ns, correlation, external_id FROM memops WHERE run_id IN (SELECT unnest($run_ids))) g
    LEFT JOIN cpu_ops o ON o.run_id = g.run_id AND o.external_id = g.external_id
), rep AS (
    SELECT g.run_id, (SELECT count(*) FROM gl WHERE gl.run_id = g.run_id) AS graph_launches,
           count(*) FILTER (WHERE g.correlation IN (SELECT correlation FROM gl WHERE gl.run_id = g.run_id))
               AS replayed_events,
           coalesce(sum(g.dur_ns) FILTER (WHERE g.correlation IN (SELECT correlation FROM gl WHERE gl.run_id = g.run_id)), 0)
               / 1e3 AS replayed_gpu_us,
           count(*) FILTER (WHERE g.has_op AND g.correlation IN (SELECT correlation FROM gl WHERE gl.run_id = g.run_id))
               AS replayed_with_op,
           sum(g.dur_ns) / 1e3 AS gpu_us
    FROM gpu g GROUP BY g.run_id
)
SELECT t.run_id, coalesce(cap.graphs_captured, 0) AS graphs_captured,
       coalesce(cap.captured_launches, 0) AS captured_launches,
       coalesce(cap.launches_per_graph_min, 0) AS launches_per_graph_min,
       coalesce(cap.launches_per_graph_median, 0)::DOUBLE AS launches_per_graph_median,
       coalesce(cap.launches_per_graph_max, 0) AS launches_per_graph_max,
       coalesce(rep.graph_launches, 0) AS graph_launches, coalesce(rep.replayed_events, 0) AS replayed_events,
       coalesce(rep.replayed_gpu_us, 0) AS replayed_gpu_us, coalesce(rep.gpu_us, 0) AS gpu_us,
       coalesce(rep.replayed_with_op, 0) AS replayed_with_op
FROM traces t LEFT JOIN cap USING (run_id) LEFT JOIN rep USING (run_id)
WHERE t.run_id IN (SELECT unnest($run_ids)) AND (cap.graphs_captured > 0 OR rep.graph_launches > 0)
ORDER BY t.run_id
