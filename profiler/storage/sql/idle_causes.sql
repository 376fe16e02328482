-- Who waits for whom: each step's GPU idle time split by what the host was doing meanwhile.
-- Part of the metrics layer: the store loads it before metrics.sql (profiler/storage/metrics.py).
--
-- Idle time: the stretches of a step's window where no GPU event (own, carried or unattributed)
-- runs. The host: every thread that makes a launch call (a training step launches from the main
-- thread and from autograd's backward thread), plus annotations and collectives on any thread.
-- Each stretch of idle time goes to the first of these the host was in, in this order (a part
-- never exceeds what is left of its stretch, so the parts add up to the idle time):
--   idle_sync_ns        blocked in a synchronize or blocking copy call (the CPU waits for the GPU); a whole
--                       gap that opened during such a call (the GPU ran dry while the host waited)
--   idle_collective_ns  inside a collective (waiting for another rank)
--   idle_input_ns       inside a DataLoader annotation (waiting for input)
--   idle_launch_ns      in launch calls (launch-bound)
--   idle_cpu_ns         in other CPU ops of a launching thread (CPU-bound)
--   idle_annotation_ns  inside another annotation with nothing else recorded
--   idle_unrecorded_ns  nothing recorded: the trace cannot say what the host was doing
-- idle_names: the names the idle time was spent in, most first ('name=µs; ...', up to 3), for
-- the category that took most of it (input, collective, cpu or annotation).
-- includes: windows
-- params: none

-- host_intervals: what the host was doing, as intervals with a kind (above) and a name.
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, kind VARCHAR, name VARCHAR, s BIGINT, e BIGINT
CREATE OR REPLACE MACRO host_intervals(ids) AS TABLE
WITH lt AS (
    SELECT DISTINCT run_id, pid, tid FROM launches
    WHERE run_id IN (SELECT unnest(ids)) AND api_category(name) = 'launch'
)
SELECT run_id, CASE WHEN api_category(name) = 'sync' THEN 'sync'
                    WHEN api_category(name) = 'memcpy' AND name NOT ILIKE '%async%' THEN 'sync'  -- a blocking copy
                    WHEN api_category(name) = 'launch' THEN 'launch' ELSE 'cpu' END AS kind,
       name, ts_ns AS s, ts_ns + dur_ns AS e
FROM launches WHERE run_id IN (SELECT unnest(ids))
UNION ALL
SELECT o.run_id,
       CASE WHEN o.collective IS NOT NULL OR o.name ILIKE 'nccl:%' OR o.name ILIKE 'c10d::%'
                 OR o.name = 'record_param_comms' THEN 'collective'
            WHEN o.name ILIKE '%DataLoader%' THEN 'input'
            WHEN o.cat = 'cpu_op' THEN 'cpu'
            ELSE 'annotation' END,
       o.name, o.ts_ns, o.ts_ns + o.dur_ns
FROM ops o LEFT JOIN lt ON lt.run_id = o.run_id AND lt.pid IS NOT DISTINCT FROM o.pid
                         AND lt.tid IS NOT DISTINCT FROM o.tid
WHERE o.run_id IN (SELECT unnest(ids)) AND o.cat IN ('cpu_op', 'user_annotation')
  AND o.name NOT LIKE 'ProfilerStep#%'
  AND (lt.run_id IS NOT NULL OR o.collective IS NOT NULL OR o.name ILIKE 'nccl:%'
       OR o.name ILIKE '%DataLoader%' OR o.cat = 'user_annotation');

-- idle_causes: per iteration window, the idle parts above and idle_names.
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, iteration INTEGER, idle_sync_ns HUGEINT, idle_collective_ns HUGEINT,
--          idle_input_ns HUGEINT, idle_launch_ns HUGEINT, idle_cpu_ns HUGEINT,
--          idle_annotation_ns HUGEINT, idle_unrecorded_ns HUGEINT, idle_names VARCHAR
CREATE OR REPLACE MACRO idle_causes(ids) AS TABLE
WITH w AS (
    SELECT * FROM run_windows(ids)
), g AS (
    SELECT run_id, ts_ns AS s, ts_ns + dur_ns AS e FROM kernels WHERE run_id IN (SELECT unnest(ids))
    UNION ALL SELECT run_id, ts_ns, ts_ns + dur_ns FROM memops WHERE run_id IN (SELECT unnest(ids))
), cl AS (          -- GPU intervals clipped to the windows, and each window's two ends
    SELECT w.run_id, w.iteration, greatest(g.s, w.start_ns) AS s, least(g.e, w.end_ns) AS e
    FROM g JOIN w ON g.run_id = w.run_id AND g.s < w.end_ns AND g.e > w.start_ns
    UNION ALL SELECT run_id, iteration, start_ns, start_ns FROM w
    UNION ALL SELECT run_id, iteration, end_ns, end_ns FROM w
), fr AS (
    SELECT run_id, iteration, s, max(e) OVER (PARTITION BY run_id, iteration ORDER BY s, e
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM cl
), gaps AS (       -- disjoint and in order within a window: numbered
    SELECT run_id, iteration, reach AS gs, s AS ge,
           row_number() OVER (PARTITION BY run_id, iteration ORDER BY reach) AS gap_no
    FROM fr WHERE reach IS NOT NULL AND s > reach
), host AS (
    SELECT * FROM host_intervals(ids)
), host_w AS (      -- host intervals by the windows they overlap (every gap lies inside its window)
    SELECT w.iteration, h.* FROM host h JOIN w ON w.run_id = h.run_id AND h.s < w.end_ns AND h.e > w.start_ns
), spans AS (       -- the gaps a host interval overlaps are those from the first that ends after it
                    -- starts (lo) to the last that starts before it ends (hi): two as-of lookups,
                    -- not every gap against every interval (a run of 150,000 kernels took 55 s)
    SELECT l.*, g.gap_no AS hi
    FROM (SELECT h.*, g.gap_no AS lo FROM host_w h ASOF JOIN gaps g
          ON h.run_id = g.run_id AND h.iteration = g.iteration AND h.s < g.ge) l
    ASOF JOIN gaps g ON l.run_id = g.run_id AND l.iteration = g.iteration AND l.e > g.gs
), sync_reach AS (  -- per run and start time of a synchronize call: the furthest end of those begun by then
    SELECT run_id, s, max(reach) AS reach
    FROM (SELECT run_id, s, max(e) OVER (PARTITION BY run_id ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS reach
          FROM host WHERE kind = 'sync')
    GROUP BY run_id, s
), pieces AS (      -- host intervals clipped to the gaps they overlap; a gap that opened while the
                    -- host sat in a synchronize or copy call is all 'sync': the GPU ran dry while the
                    -- host waited for it, so nothing was queued behind (the host then had to launch)
    SELECT gaps.run_id, gaps.iteration, gaps.gs, gaps.ge, sp.kind, sp.name,
           greatest(sp.s, gaps.gs) AS s, least(sp.e, gaps.ge) AS e
    FROM (SELECT *, unnest(range(lo, hi + 1)) AS gap_no FROM spans WHERE hi >= lo) sp
    JOIN gaps ON gaps.run_id = sp.run_id AND gaps.iteration = sp.iteration AND gaps.gap_no = sp.gap_no
    UNION ALL
    SELECT g.run_id, g.iteration, g.gs, g.ge, 'sync', 'opened in a synchronize call', g.gs, g.ge
    FROM gaps g ASOF JOIN sync_reach r ON g.run_id = r.run_id AND g.gs >= r.s
    WHERE r.reach >= g.gs
), pfr AS (
    SELECT *, max(e) OVER (PARTITION BY run_id, iteration, gs, kind ORDER BY s, e
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM pieces
), per_kind AS (    -- per gap and kind: the union of the kind's time in the gap
    SELECT run_id, iteration, gs, any_value(ge - gs) AS gap, kind,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) AS t
    FROM pfr GROUP BY run_id, iteration, gs, kind
), ordered AS (     -- each kind takes what the kinds before it left of the gap
    SELECT *, gap - coalesce(sum(t) OVER (PARTITION BY run_id, iteration, gs ORDER BY
              list_position(['sync', 'collective', 'input', 'launch', 'cpu', 'annotation'], kind)
              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS left_over
    FROM per_kind
), parts AS (
    SELECT run_id, iteration, kind, sum(least(t, greatest(left_over, 0))) AS t FROM ordered GROUP BY ALL
), idle AS (
    SELECT run_id, iteration, sum(ge - gs) AS idle_ns FROM gaps GROUP BY ALL
), top_kind AS (
    SELECT run_id, iteration, arg_max(kind, t) AS kind FROM parts
    WHERE kind IN ('input', 'collective', 'cpu', 'annotation') GROUP BY ALL
), named AS (
    SELECT p.run_id, p.iteration, p.name, sum(p.e - p.s) AS t
    FROM pieces p JOIN top_kind k ON k.run_id = p.run_id AND k.iteration = p.iteration AND k.kind = p.kind
    GROUP BY ALL
), names AS (
    SELECT run_id, iteration,
           string_agg(name || '=' || round(t / 1e3, 1), '; ' ORDER BY t DESC, name) AS idle_names
    FROM (SELECT * FROM named QUALIFY row_number() OVER (PARTITION BY run_id, iteration ORDER BY t DESC, name) <= 3)
    GROUP BY ALL
), by_kind AS (
    SELECT run_id, iteration,
           sum(t) FILTER (WHERE kind = 'sync') AS idle_sync_ns,
           sum(t) FILTER (WHERE kind = 'collective') AS idle_collective_ns,
           sum(t) FILTER (WHERE kind = 'input') AS idle_input_ns,
           sum(t) FILTER (WHERE kind = 'launch') AS idle_launch_ns,
           sum(t) FILTER (WHERE kind = 'cpu') AS idle_cpu_ns,
           sum(t) FILTER (WHERE kind = 'annotation') AS idle_annotation_ns,
           sum(t) AS recorded_ns
    FROM parts GROUP BY ALL
)
SELECT w.run_id, w.iteration,
       coalesce(p.idle_sync_ns, 0) AS idle_sync_ns, coalesce(p.idle_collective_ns, 0) AS idle_collective_ns,
       coalesce(p.idle_input_ns, 0) AS idle_input_ns, coalesce(p.idle_launch_ns, 0) AS idle_launch_ns,
       coalesce(p.idle_cpu_ns, 0) AS idle_cpu_ns, coalesce(p.idle_annotation_ns, 0) AS idle_annotation_ns,
       coalesce(i.idle_ns, 0) - coalesce(p.recorded_ns, 0) AS idle_unrecorded_ns, n.idle_names
FROM w LEFT JOIN by_kind p USING (run_id, iteration) LEFT JOIN idle i USING (run_id, iteration)
LEFT JOIN names n USING (run_id, iteration);
