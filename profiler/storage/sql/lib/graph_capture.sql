-- CUDA/HIP graphs in a trace (docs/analysis.md, "Graphs"): the windows in which a thread captured
-- a stream into a graph, and the launch calls it made there (recorded into the graph, not run).
-- includes: metrics, windows
-- params: none

-- capture_windows: per run and thread, each stream capture: from a …StreamBeginCapture call to the
-- thread's next …StreamEndCapture (end_ns NULL when the trace holds none); graph numbers them in
-- order within the run (0-based).
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, pid VARCHAR, tid VARCHAR, graph BIGINT, begin_ns BIGINT, end_ns BIGINT
CREATE OR REPLACE TEMP MACRO capture_windows(ids) AS TABLE
SELECT run_id, pid, tid, row_number() OVER (PARTITION BY run_id ORDER BY begin_ns) - 1 AS graph, begin_ns, end_ns
FROM (
    SELECT run_id, pid, tid, ts_ns AS begin_ns, name,
           lead(ts_ns) OVER (PARTITION BY run_id, pid, tid ORDER BY ts_ns) AS end_ns
    FROM launches WHERE run_id IN (SELECT unnest(ids))
      AND (name ILIKE '%StreamBeginCapture%' OR name ILIKE '%StreamEndCapture%')
) WHERE name ILIKE '%BeginCapture%';

-- captured_launches: the kernel launch calls (api_category 'launch', not a graph launch) made inside
-- a capture window on its thread, with the window's graph number.
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, graph BIGINT, name VARCHAR, ts_ns BIGINT, correlation UBIGINT, external_id UBIGINT
CREATE OR REPLACE TEMP MACRO captured_launches(ids) AS TABLE
SELECT l.run_id, w.graph, l.name, l.ts_ns, l.correlation, l.external_id
FROM launches l JOIN capture_windows(ids) w
  ON w.run_id = l.run_id AND w.pid IS NOT DISTINCT FROM l.pid AND w.tid IS NOT DISTINCT FROM l.tid
 AND l.ts_ns > w.begin_ns AND l.ts_ns < coalesce(w.end_ns, 9223372036854775807)
WHERE api_category(l.name) = 'launch' AND l.name NOT ILIKE '%graphlaunch%';
