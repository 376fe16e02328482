-- The metrics layer: the one definition of every per-iteration and per-run number that pages,
-- findings, the command line and the benches show. Loaded after schema.sql on every open.
-- Times are integer nanoseconds; "per iteration" means the mean over the run's iterations.
--
-- Iteration windows: the run's iterations (ProfilerStep#N, else a repeated annotation, else the
-- whole trace as iteration 0, chosen at ingest).
--
-- A step's GPU work (what it launched, wherever it ran; carried-in, spilled-out, unattributed):
-- step_work.sql, the one definition. Here, the shares of the window (never above 100 %): GPU
-- events whose interval overlaps the window, clipped to it; own (launched by this step), carried
-- in (launched by an earlier call in the trace) or unattributed (no launch call in the trace).
--   wall_ns        window length
--   gpu_active_ns  union of all GPU intervals over every device and stream
--   gpu_busy_ns    "own busy": union of the step's own GPU work inside the window
--   carried_ns     time only carried-in work ran (union of own and carried-in, less own busy)
--   gpu_span_ns    from the first GPU interval's start to the last one's end in the window
--                  (clipped): the denominator of TraceLens's busy share, span_busy_pct =
--                  gpu_active_ns / gpu_span_ns, a figure of its own (not the step's own busy share)
--   gpu_idle_ns    wall_ns - gpu_active_ns: no GPU work at all; idle_causes.sql splits it
--   idle_gaps      how many stretches of the window had no GPU work; max_gap_ns the longest
--   kernel_ns      union of the step's own kernels in the window; copy_ns: of its copies and sets;
--   comm_ns        of its communication kernels (is_communication)
--   kernel_sum_ns  summed durations of the kernels the step launched (per-name tables add up to
--                  this; streams may overlap, so it can exceed kernel_work_ns)
-- The launching threads: every thread that makes a launch call (a training step launches from its
-- main thread and autograd's backward thread); launching_threads counts them.
--   cpu_busy_ns    "recorded CPU time": union over the launching threads of their CPU ops (cat
--                  cpu_op) and runtime / driver calls in the window. User annotations
--                  (record_function ranges, ProfilerStep#N) are labels around work, not work
--   launch_api_ns  union of launch calls (api_category 'launch') in the window, every thread
--                  (the launching threads': a part of cpu_busy_ns, never more)
--   sync_ns        union of synchronize calls (api_category 'sync') in the window, every thread
--   launch_calls   launch calls starting in the window; capture_calls: graph capture calls
--                  (cuda/hipStreamBeginCapture) in it
-- A SQL module (profiler/analysis/sql_library.py) that the store loads when it opens
-- (profiler/storage/metrics.py); query files that use its macros or table say `-- includes: metrics`.
-- includes: windows, step_work, idle_causes
-- params: none

-- iteration_metrics: one row per iteration window of the selected runs, every measure above,
-- the step's GPU work (step_work.sql) and its idle time by cause (idle_causes.sql).
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, iteration INTEGER, name VARCHAR, start_ns BIGINT, end_ns BIGINT,
--          wall_ns BIGINT, gpu_active_ns HUGEINT, gpu_busy_ns HUGEINT, carried_ns HUGEINT,
--          gpu_idle_ns HUGEINT, kernel_ns HUGEINT, copy_ns HUGEINT, comm_ns HUGEINT,
--          kernel_sum_ns HUGEINT, kernels BIGINT, cpu_busy_ns HUGEINT, cpu_events BIGINT,
--          launch_api_ns HUGEINT, launch_calls BIGINT, sync_ns HUGEINT, gpu_span_ns BIGINT,
--          idle_gaps BIGINT, max_gap_ns BIGINT, launching_threads BIGINT, capture_calls BIGINT,
--          gpu_work_ns HUGEINT, gpu_work_sum_ns HUGEINT, kernel_work_ns HUGEINT, spilled_ns HUGEINT,
--          unattributed_ns HUGEINT, unattributed BIGINT, idle_sync_ns HUGEINT,
--          idle_collective_ns HUGEINT, idle_input_ns HUGEINT, idle_launch_ns HUGEINT,
--          idle_cpu_ns HUGEINT, idle_annotation_ns HUGEINT, idle_unrecorded_ns HUGEINT, idle_names VARCHAR
CREATE OR REPLACE MACRO iteration_metrics(ids) AS TABLE
WITH w AS (
    SELECT * FROM run_windows(ids)
), lt AS (          -- every thread that makes a launch call
    SELECT run_id, pid, tid, count(*) AS launches FROM launches
    WHERE run_id IN (SELECT unnest(ids)) AND api_category(name) = 'launch' GROUP BY ALL
), called AS (
    SELECT DISTINCT run_id, correlation FROM launches
    WHERE run_id IN (SELECT unnest(ids)) AND correlation IS NOT NULL
), records AS (     -- runs whose trace records launch calls (with a correlation id)
    SELECT DISTINCT run_id FROM called
), g AS (
    SELECT run_id, 'kernel' AS kind, is_communication(name) AS comm, ts_ns, ts_ns + dur_ns AS end_ns,
           correlation, iteration
    FROM kernels WHERE run_id IN (SELECT unnest(ids))
    UNION ALL
    SELECT run_id, 'copy', false, ts_ns, ts_ns + dur_ns, correlation, iteration
    FROM memops WHERE run_id IN (SELECT unnest(ids))
), gw AS (          -- GPU intervals clipped to the windows they overlap: own, carried or unattributed
    SELECT w.run_id, w.iteration, greatest(g.ts_ns, w.start_ns) AS s, least(g.end_ns, w.end_ns) AS e,
           g.kind, g.comm, rec.run_id IS NOT NULL AND c.run_id IS NULL AS unattributed,
           CASE WHEN w.stored THEN g.iteration IS NOT DISTINCT FROM w.iteration
                ELSE true END AS own
    FROM g JOIN w ON g.run_id = w.run_id AND g.ts_ns < w.end_ns AND g.end_ns > w.start_ns
    LEFT JOIN records rec ON rec.run_id = g.run_id
    LEFT JOIN called c ON c.run_id = g.run_id AND c.correlation = g.correlation
), span AS (        -- first to last GPU interval of each window (TraceLens's total time)
    SELECT run_id, iteration, max(e) - min(s) AS gpu_span_ns FROM gw GROUP BY run_id, iteration
), api AS (         -- API calls of every thread, clipped
    SELECT w.run_id, w.iteration, api_category(l.name) AS c, greatest(l.ts_ns, w.start_ns) AS s,
           least(l.ts_ns + l.dur_ns, w.end_ns) AS e, l.name ILIKE '%BeginCapture%' AS capture, l.ts_ns >= w.start_ns AS starts,
           lt.run_id IS NOT NULL AS on_lt
    FROM launches l JOIN w ON w.run_id = l.run_id AND l.ts_ns < w.end_ns AND l.ts_ns + l.dur_ns > w.start_ns
    LEFT JOIN lt ON lt.run_id = l.run_id AND lt.pid IS NOT DISTINCT FROM l.pid AND lt.tid IS NOT DISTINCT FROM l.tid
    WHERE l.run_id IN (SELECT unnest(ids))
), cpu AS (         -- the launching threads' recorded activity, clipped
    SELECT run_id, iteration, s, e FROM api WHERE on_lt
    UNION ALL
    SELECT w.run_id, w.iteration, greatest(o.ts_ns, w.start_ns), least(o.ts_ns + o.dur_ns, w.end_ns)
    FROM ops o JOIN lt ON lt.run_id = o.run_id AND lt.pid IS NOT DISTINCT FROM o.pid AND lt.tid IS NOT DISTINCT FROM o.tid
    JOIN w ON w.run_id = o.run_id AND o.ts_ns < w.end_ns AND o.ts_ns + o.dur_ns > w.start_ns
    WHERE o.run_id IN (SELECT unnest(ids)) AND o.cat = 'cpu_op'
      AND o.name NOT LIKE 'ProfilerStep#%'   -- 2020-era traces record the step as an op
), cls AS (         -- each interval once per measure it belongs to; 'active' gets the window's
                    -- two ends as empty intervals so that leading and trailing gaps show
    SELECT run_id, iteration, 'active' AS c, s, e FROM gw
    UNION ALL SELECT run_id, iteration, 'active', start_ns, start_ns FROM w
    UNION ALL SELECT run_id, iteration, 'active', end_ns, end_ns FROM w
    UNION ALL SELECT run_id, iteration, 'attributed', s, e FROM gw WHERE NOT unattributed
    UNION ALL SELECT run_id, iteration, 'busy', s, e FROM gw WHERE own
    UNION ALL SELECT run_id, iteration, 'kernel', s, e FROM gw WHERE own AND kind = 'kernel'
    UNION ALL SELECT run_id, iteration, 'comm', s, e FROM gw WHERE own AND comm
    UNION ALL SELECT run_id, iteration, 'copy', s, e FROM gw WHERE own AND kind = 'copy'
    UNION ALL SELECT run_id, iteration, 'cpu', s, e FROM cpu
    UNION ALL SELECT run_id, iteration, 'launch', s, e FROM api WHERE c = 'launch'
    UNION ALL SELECT run_id, iteration, 'sync', s, e FROM api WHERE c = 'sync'
), frontier AS (    -- sorted by start, an interval adds what lies beyond the furthest end so far
    SELECT run_id, iteration, c, s, e,
           max(e) OVER (PARTITION BY run_id, iteration, c ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM cls
), unions AS (
    SELECT run_id, iteration,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'active') AS gpu_active_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'attributed') AS attributed_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'busy') AS gpu_busy_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'kernel') AS kernel_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'comm') AS comm_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'copy') AS copy_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'cpu') AS cpu_busy_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'launch') AS launch_api_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'sync') AS sync_ns,
           count(*) FILTER (WHERE c = 'cpu') AS cpu_events,
           count(*) FILTER (WHERE c = 'active' AND reach IS NOT NULL AND s > reach) AS idle_gaps,
           max(s - reach) FILTER (WHERE c = 'active' AND reach IS NOT NULL AND s > reach) AS max_gap_ns
    FROM frontier GROUP BY run_id, iteration
), calls AS (       -- launch calls starting in the window; graph capture calls
    SELECT run_id, iteration, count(*) FILTER (WHERE c = 'launch' AND starts) AS launch_calls,
           count(*) FILTER (WHERE capture) AS capture_calls
    FROM api GROUP BY ALL
), kn AS (
    SELECT w.run_id, w.iteration, count(*) AS kernels, sum(k.dur_ns) AS kernel_sum_ns
    FROM kernels k JOIN w ON w.run_id = k.run_id
     AND (CASE WHEN w.stored THEN k.iteration = w.iteration ELSE true END)
    WHERE k.run_id IN (SELECT unnest(ids)) GROUP BY ALL
), threads AS (
    SELECT run_id, count(*) AS launching_threads FROM lt GROUP BY ALL
), z AS (           -- every measure of every window: 0 where the window had none of it
    SELECT w.run_id, w.iteration, w.name, w.start_ns, w.end_ns,
           coalesce(COLUMNS(* EXCLUDE (run_id, iteration, name, start_ns, end_ns, stored, idle_names)), 0),
           idle_names
    FROM w
    LEFT JOIN unions u USING (run_id, iteration)
    LEFT JOIN calls USING (run_id, iteration)
    LEFT JOIN kn USING (run_id, iteration)
    LEFT JOIN span USING (run_id, iteration)
    LEFT JOIN threads USING (run_id)
    LEFT JOIN step_work(ids) USING (run_id, iteration)
    LEFT JOIN idle_causes(ids) USING (run_id, iteration)
)
SELECT run_id, iteration, name, start_ns, end_ns, end_ns - start_ns AS wall_ns,
       gpu_active_ns, gpu_busy_ns, attributed_ns - gpu_busy_ns AS carried_ns,
       end_ns - start_ns - gpu_active_ns AS gpu_idle_ns,
       kernel_ns, copy_ns, comm_ns, kernel_sum_ns, kernels, cpu_busy_ns, cpu_events,
       launch_api_ns, launch_calls, sync_ns, gpu_span_ns, idle_gaps, max_gap_ns,
       launching_threads, capture_calls,
       gpu_work_ns, gpu_work_sum_ns, kernel_work_ns, spilled_ns, unattributed_ns, unattributed,
       idle_sync_ns, idle_collective_ns, idle_input_ns, idle_launch_ns, idle_cpu_ns,
       idle_annotation_ns, idle_unrecorded_ns, idle_names
FROM z;

-- stored_iteration_metrics (a table): iteration_metrics of every run, kept: computed once per run at ingest (profiler/storage/metrics.py
-- fills in runs that lack it and recomputes all when this file changes).
CREATE TABLE IF NOT EXISTS stored_iteration_metrics AS
SELECT * FROM iteration_metrics([]::VARCHAR[]) LIMIT 0;

-- run_metrics: per selected run: the means per iteration (µs), the shares of the iteration (%),
-- the spread of the step's GPU work over the steps, and the verdict.
--   gpu_work_us_per_iter   the step's GPU work (step_work.sql): what one step needs of the GPU
--   gpu_work_min_us, gpu_work_max_us  its least and most over the steps; steps_differ: they
--          differ by more than 10 % of the mean (warm-up, outliers: look at the steps)
--   bound  'none'     no GPU work at all
--          'capture'  the trace records graph capture calls (Begin/EndCapture): its launches
--                     record a graph rather than run work; timings of it are not a run's
--          'gpu'      the GPU ran work (own, carried or unattributed) at least 85 % of the
--                     iteration: it sets the pace; feeding it faster saves at most the idle 15 %
--          'unrecorded' else, when the host recorded nothing during at least half of the idle
--                     time (idle_causes.sql): no verdict
--          else the largest recorded part of the idle time: 'sync', 'collective', 'input',
--          'launch', 'cpu' or 'annotation' (ties: in that order)
--   profiler_overhead_likely  bound 'cpu' or 'launch' and the idle time under 15 µs per recorded
--          CPU event of the launching threads: gaps of the size of the profiler's own per-event cost
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, iterations BIGINT, wall_us_per_iter DOUBLE,
--          gpu_active_us_per_iter DOUBLE, gpu_busy_us_per_iter DOUBLE, carried_us_per_iter DOUBLE,
--          gpu_idle_us_per_iter DOUBLE, kernel_us_per_iter DOUBLE, copy_us_per_iter DOUBLE,
--          comm_us_per_iter DOUBLE, kernel_sum_us_per_iter DOUBLE, cpu_busy_us_per_iter DOUBLE,
--          launch_api_us_per_iter DOUBLE, sync_us_per_iter DOUBLE, gpu_span_us_per_iter DOUBLE,
--          gpu_work_us_per_iter DOUBLE, gpu_work_sum_us_per_iter DOUBLE,
--          kernel_work_us_per_iter DOUBLE, spilled_us_per_iter DOUBLE,
--          unattributed_us_per_iter DOUBLE, idle_sync_us_per_iter DOUBLE,
--          idle_collective_us_per_iter DOUBLE, idle_input_us_per_iter DOUBLE,
--          idle_launch_us_per_iter DOUBLE, idle_cpu_us_per_iter DOUBLE,
--          idle_annotation_us_per_iter DOUBLE, idle_unrecorded_us_per_iter DOUBLE,
--          exposed_copy_us_per_iter DOUBLE, kernels_per_iter DOUBLE, cpu_events_per_iter DOUBLE,
--          launch_calls_per_iter DOUBLE, idle_gaps_per_iter DOUBLE, unattributed_per_iter DOUBLE,
--          max_gap_us DOUBLE, gpu_work_min_us DOUBLE, gpu_work_max_us DOUBLE,
--          steps_differ BOOLEAN, launching_threads BIGINT, capture_calls BIGINT,
--          idle_names VARCHAR, gpu_active_pct DOUBLE, gpu_busy_pct DOUBLE, carried_pct DOUBLE,
--          gpu_idle_pct DOUBLE, kernel_pct DOUBLE, comm_pct DOUBLE, cpu_busy_pct DOUBLE,
--          span_busy_pct DOUBLE, exposed_copy_pct DOUBLE, bound VARCHAR,
--          profiler_overhead_likely BOOLEAN
CREATE OR REPLACE MACRO run_metrics(ids) AS TABLE
WITH m AS (SELECT * FROM stored_iteration_metrics WHERE run_id IN (SELECT unnest(ids))), r AS (
    SELECT run_id, count(*) AS iterations,
           sum(COLUMNS(* EXCLUDE (run_id, iteration, name, start_ns, end_ns, max_gap_ns,
                                  launching_threads, idle_names))),
           max(max_gap_ns) AS max_gap_ns, max(launching_threads) AS launching_threads,
           min(gpu_work_ns) AS gpu_work_min_ns, max(gpu_work_ns) AS gpu_work_max_ns,
           arg_max(idle_names, gpu_idle_ns) AS idle_names   -- those of the idlest step
    FROM m GROUP BY run_id
), v AS (
    SELECT *,
           CASE WHEN gpu_active_ns = 0 AND gpu_work_ns = 0 THEN 'none'
                WHEN capture_calls > 0 THEN 'capture'
                WHEN gpu_active_ns >= 0.85 * wall_ns THEN 'gpu'
                WHEN idle_unrecorded_ns >= 0.5 * gpu_idle_ns THEN 'unrecorded'
                ELSE ['sync', 'collective', 'input', 'launch', 'cpu', 'annotation'][
                    list_position(list_value(idle_sync_ns, idle_collective_ns, idle_input_ns, idle_launch_ns,
                                             idle_cpu_ns, idle_annotation_ns),
                                  greatest(idle_sync_ns, idle_collective_ns, idle_input_ns, idle_launch_ns,
                                           idle_cpu_ns, idle_annotation_ns))] END AS bound
    FROM r
)
SELECT run_id, iterations,
       COLUMNS('^(wall|gpu_busy|gpu_idle|carried|gpu_active|gpu_span|kernel|copy|comm|kernel_sum|cpu_busy|'
               'launch_api|sync|gpu_work|gpu_work_sum|kernel_work|spilled|unattributed|idle_sync|'
               'idle_collective|idle_input|idle_launch|idle_cpu|idle_annotation|idle_unrecorded)_ns$')
           / 1e3 / iterations AS '\1_us_per_iter',
       (gpu_busy_ns - kernel_ns) / 1e3 / iterations AS exposed_copy_us_per_iter,
       COLUMNS('^(idle_gaps|kernels|launch_calls|cpu_events|unattributed)$') / iterations AS '\1_per_iter',
       max_gap_ns / 1e3 AS max_gap_us,
       gpu_work_min_ns / 1e3 AS gpu_work_min_us, gpu_work_max_ns / 1e3 AS gpu_work_max_us,
       gpu_work_max_ns - gpu_work_min_ns > 0.1 * gpu_work_ns / iterations AS steps_differ,
       launching_threads, capture_calls::BIGINT AS capture_calls, idle_names,
       COLUMNS('^(gpu_busy|gpu_idle|carried|gpu_active|kernel|comm|cpu_busy)_ns$') * 100.0 / wall_ns AS '\1_pct',
       100.0 * gpu_active_ns / nullif(gpu_span_ns, 0) AS span_busy_pct,
       100.0 * (gpu_busy_ns - kernel_ns) / wall_ns AS exposed_copy_pct,
       bound,
       bound IN ('cpu', 'launch') AND cpu_events > 0 AND gpu_idle_ns < 15e3 * cpu_events
           AS profiler_overhead_likely
FROM v;
