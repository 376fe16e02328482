-- The metrics layer: the one definition of every per-iteration and per-run number that pages,
-- findings, the command line and the benches show. Loaded after schema.sql on every open.
-- Times are integer nanoseconds; "per iteration" means the mean over the run's iterations.
--
-- Iteration windows: the run's iterations (ProfilerStep#N, else a repeated annotation, else the
-- whole trace as iteration 0, chosen at ingest).
--
-- GPU work of an iteration = kernels, copies and sets whose interval overlaps the window, clipped
-- to it. Own or carried (the one rule, `carried` in iteration_metrics):
--   * its launch call is in the trace: carried when that call started before the window opened
--     (launched in an earlier iteration, or before the first one);
--   * no launch call in the trace for it, in a run that records launch calls: carried (it was
--     launched before profiling began: the profiler records every launch it sees);
--   * a run that records no launch calls at all: carried when the work itself starts earlier.
-- Carried work is counted apart, never in busy.
--   wall_ns        window length
--   gpu_active_ns  union of all GPU intervals over every device and stream (own or carried)
--   gpu_busy_ns    "own busy": union of the iteration's own GPU work (kernels + copies + sets)
--   carried_ns     gpu_active_ns - gpu_busy_ns: time only carried-in work ran
--   gpu_span_ns    from the first GPU interval's start to the last one's end in the window
--                  (clipped): the denominator of TraceLens's busy share, span_busy_pct =
--                  gpu_active_ns / gpu_span_ns, a figure of its own (not the step's own busy share)
--   gpu_idle_ns    wall_ns - gpu_active_ns: no GPU work at all
--   idle_gaps      how many stretches of the window had no GPU work; max_gap_ns the longest
--   kernel_ns      union of the iteration's own kernels; copy_ns: of its copies and sets;
--   comm_ns        of its communication kernels (is_communication)
--   kernel_sum_ns  summed durations of the kernels launched in the iteration (per-name tables add
--                  up to this; streams may overlap, so it can exceed kernel_ns)
-- The launching thread (pid, tid) is the thread that made most launch calls in the run.
--   cpu_busy_ns    "recorded CPU time": union of its CPU ops (cat cpu_op) and runtime / driver
--                  calls in the window. User annotations (record_function ranges, ProfilerStep#N)
--                  are labels around work, not work: one spanning the trace would count it all
--   launch_api_ns  time in launch calls (api_category 'launch'), all threads, calls starting in the window
--   sync_ns        time in synchronize calls (api_category 'sync'), all threads
--   idle_sync_ns   GPU idle time in gaps that opened while the launching thread was in a
--                  synchronize call: the GPU ran dry because the CPU waited for it, then had to
--                  issue new work (sync-bound); the rest of the idle time is idle_cpu_ns
--                  (the launching thread was doing something else: CPU-bound)
-- A SQL module (profiler/analysis/sql_library.py) that the store loads when it opens
-- (profiler/storage/metrics.py); query files that use its macros or table say `-- includes: metrics`.
-- includes: none
-- params: none

-- api_category: what an API call does, by name: 'launch' | 'sync' | 'memcpy' | 'memset' | 'other'.
-- args: name VARCHAR
-- outputs: VARCHAR
CREATE OR REPLACE MACRO api_category(name) AS CASE
    WHEN name ILIKE '%launch%' THEN 'launch'
    WHEN name ILIKE '%synchronize%' THEN 'sync'
    WHEN name ILIKE '%memcpy%' THEN 'memcpy'
    WHEN name ILIKE '%memset%' THEN 'memset'
    ELSE 'other' END;

-- is_communication: whether a kernel, by name, is a communication kernel (NCCL/RCCL collectives,
-- NVLink multimem all-reduce). The same pattern is tensor_cores.COMMUNICATION (a test keeps the
-- two equal).
-- args: name VARCHAR
-- outputs: BOOLEAN
CREATE OR REPLACE MACRO is_communication(name) AS
    regexp_matches(name, '(?i)nccl|rccl|multimem|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all');

-- run_windows: the iteration windows of the selected runs (every run has at least one, the whole
-- trace); stored is false for the whole-trace window of a run without stored iterations (its
-- events carry no iteration number: they all belong to iteration 0).
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, iteration INTEGER, name VARCHAR, start_ns BIGINT, end_ns BIGINT,
--          stored BOOLEAN
CREATE OR REPLACE MACRO run_windows(ids) AS TABLE
SELECT i.run_id, i.iteration, i.name, i.start_ns, i.end_ns, true AS stored
FROM iterations i WHERE i.run_id IN (SELECT unnest(ids))
UNION ALL
SELECT t.run_id, 0, '(whole trace)', t.start_ns, t.end_ns, false
FROM traces t
WHERE t.run_id IN (SELECT unnest(ids)) AND t.start_ns IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM iterations i WHERE i.run_id = t.run_id);

-- launching_thread: the thread that made most launch calls in each selected run (ties: the
-- smallest pid, tid).
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, pid VARCHAR, tid VARCHAR, launches BIGINT
CREATE OR REPLACE MACRO launching_thread(ids) AS TABLE
SELECT run_id, pid, tid, count(*) AS launches
FROM launches
WHERE run_id IN (SELECT unnest(ids)) AND api_category(name) = 'launch'
GROUP BY run_id, pid, tid
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY count(*) DESC, pid, tid) = 1;

-- iteration_metrics: one row per iteration window of the selected runs, every measure above.
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, iteration INTEGER, name VARCHAR, start_ns BIGINT, end_ns BIGINT,
--          wall_ns BIGINT, gpu_active_ns HUGEINT, gpu_busy_ns HUGEINT, carried_ns HUGEINT,
--          gpu_idle_ns HUGEINT, idle_sync_ns HUGEINT, idle_cpu_ns HUGEINT, kernel_ns HUGEINT,
--          copy_ns HUGEINT, comm_ns HUGEINT, kernel_sum_ns HUGEINT, kernels BIGINT,
--          cpu_busy_ns HUGEINT, cpu_events BIGINT, launch_api_ns HUGEINT, launch_calls BIGINT,
--          sync_ns HUGEINT, gpu_span_ns BIGINT, idle_gaps BIGINT, max_gap_ns BIGINT
CREATE OR REPLACE MACRO iteration_metrics(ids) AS TABLE
WITH w AS (
    SELECT * FROM run_windows(ids)
), lt AS (
    SELECT * FROM launching_thread(ids)
), launch_at AS (   -- when each GPU activity was launched
    SELECT run_id, correlation, min(ts_ns) AS launch_ns
    FROM launches WHERE run_id IN (SELECT unnest(ids)) AND correlation IS NOT NULL
    GROUP BY ALL
), g AS (
    SELECT run_id, 'kernel' AS kind, is_communication(name) AS comm, ts_ns, ts_ns + dur_ns AS end_ns,
           correlation
    FROM kernels WHERE run_id IN (SELECT unnest(ids))
    UNION ALL
    SELECT run_id, 'copy', false, ts_ns, ts_ns + dur_ns, correlation
    FROM memops WHERE run_id IN (SELECT unnest(ids))
), records AS (     -- runs whose trace records launch calls (with a correlation id)
    SELECT DISTINCT run_id FROM launch_at
), gw AS (          -- GPU intervals clipped to the windows they overlap; own or carried (above)
    SELECT w.run_id, w.iteration, greatest(g.ts_ns, w.start_ns) AS s, least(g.end_ns, w.end_ns) AS e,
           g.kind, g.comm,
           CASE WHEN la.launch_ns IS NOT NULL THEN la.launch_ns < w.start_ns
                WHEN rec.run_id IS NOT NULL THEN true
                ELSE g.ts_ns < w.start_ns END AS carried
    FROM g JOIN w ON g.run_id = w.run_id AND g.ts_ns < w.end_ns AND g.end_ns > w.start_ns
    LEFT JOIN launch_at la ON la.run_id = g.run_id AND la.correlation = g.correlation
    LEFT JOIN records rec ON rec.run_id = g.run_id
), span AS (        -- first to last GPU interval of each window (TraceLens's total time)
    SELECT run_id, iteration, max(e) - min(s) AS gpu_span_ns FROM gw GROUP BY run_id, iteration
), cpu AS (         -- the launching thread's recorded activity, clipped
    SELECT w.run_id, w.iteration, greatest(x.ts_ns, w.start_ns) AS s,
           least(x.ts_ns + x.dur_ns, w.end_ns) AS e
    FROM (SELECT o.run_id, o.pid, o.tid, o.ts_ns, o.dur_ns FROM ops o
          WHERE o.run_id IN (SELECT unnest(ids)) AND o.cat = 'cpu_op'
            AND o.name NOT LIKE 'ProfilerStep#%'   -- 2020-era traces record the step as an op
          UNION ALL
          SELECT l.run_id, l.pid, l.tid, l.ts_ns, l.dur_ns FROM launches l
          WHERE l.run_id IN (SELECT unnest(ids))) x
    JOIN lt ON lt.run_id = x.run_id AND lt.pid IS NOT DISTINCT FROM x.pid AND lt.tid IS NOT DISTINCT FROM x.tid
    JOIN w ON w.run_id = x.run_id AND x.ts_ns < w.end_ns AND x.ts_ns + x.dur_ns > w.start_ns
), cls AS (         -- each interval once per measure it belongs to; 'active' gets the window's
                    -- two ends as empty intervals so that leading and trailing gaps show
    SELECT run_id, iteration, 'active' AS c, s, e FROM gw
    UNION ALL SELECT run_id, iteration, 'active', start_ns, start_ns FROM w
    UNION ALL SELECT run_id, iteration, 'active', end_ns, end_ns FROM w
    UNION ALL SELECT run_id, iteration, 'busy', s, e FROM gw WHERE NOT carried
    UNION ALL SELECT run_id, iteration, 'kernel', s, e FROM gw WHERE NOT carried AND kind = 'kernel'
    UNION ALL SELECT run_id, iteration, 'comm', s, e FROM gw WHERE NOT carried AND comm
    UNION ALL SELECT run_id, iteration, 'copy', s, e FROM gw WHERE NOT carried AND kind = 'copy'
    UNION ALL SELECT run_id, iteration, 'cpu', s, e FROM cpu
), frontier AS (    -- sorted by start, an interval adds what lies beyond the furthest end so far
    SELECT run_id, iteration, c, s, e,
           max(e) OVER (PARTITION BY run_id, iteration, c ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM cls
), unions AS (
    SELECT run_id, iteration,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'active') AS gpu_active_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'busy') AS gpu_busy_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'kernel') AS kernel_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'comm') AS comm_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'copy') AS copy_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'cpu') AS cpu_busy_ns
    FROM frontier GROUP BY run_id, iteration
), gaps AS (        -- GPU idle gaps: (when the gap opened, its length)
    SELECT run_id, iteration, reach AS gap_start, s - reach AS gap_ns
    FROM frontier WHERE c = 'active' AND reach IS NOT NULL AND s > reach
), syncs AS (
    SELECT l.run_id, l.ts_ns, l.ts_ns + l.dur_ns AS end_ns
    FROM launches l JOIN lt ON lt.run_id = l.run_id AND lt.pid IS NOT DISTINCT FROM l.pid
                             AND lt.tid IS NOT DISTINCT FROM l.tid
    WHERE l.run_id IN (SELECT unnest(ids)) AND api_category(l.name) = 'sync'
), gap_cause AS (
    SELECT gaps.run_id, gaps.iteration,
           sum(gap_ns) FILTER (WHERE syncs.end_ns >= gaps.gap_start) AS idle_sync_ns,
           count(*) AS idle_gaps, max(gap_ns) AS max_gap_ns
    FROM gaps ASOF LEFT JOIN syncs ON syncs.run_id = gaps.run_id AND syncs.ts_ns <= gaps.gap_start
    GROUP BY gaps.run_id, gaps.iteration
), whole AS (      -- runs without stored iterations: all their events are iteration 0
    SELECT run_id FROM w WHERE NOT stored
), api AS (
    SELECT run_id, coalesce(iteration, 0) AS iteration,
           sum(dur_ns) FILTER (WHERE api_category(name) = 'launch') AS launch_api_ns,
           sum(dur_ns) FILTER (WHERE api_category(name) = 'sync') AS sync_ns,
           count(*) FILTER (WHERE api_category(name) = 'launch') AS launch_calls
    FROM launches WHERE run_id IN (SELECT unnest(ids))
      AND (iteration IS NOT NULL OR run_id IN (SELECT run_id FROM whole))
    GROUP BY ALL
), kn AS (
    SELECT run_id, coalesce(iteration, 0) AS iteration, count(*) AS kernels,
           sum(dur_ns) AS kernel_sum_ns
    FROM kernels WHERE run_id IN (SELECT unnest(ids))
      AND (iteration IS NOT NULL OR run_id IN (SELECT run_id FROM whole))
    GROUP BY ALL
), ev AS (          -- recorded CPU events of the launching thread (ops + API calls)
    SELECT run_id, iteration, count(*) AS cpu_events FROM cpu GROUP BY ALL
), z AS (           -- every measure of every window: 0 where the window had none of it
    SELECT w.run_id, w.iteration, w.name, w.start_ns, w.end_ns,
           coalesce(COLUMNS(* EXCLUDE (run_id, iteration, name, start_ns, end_ns, stored)), 0)
    FROM w
    LEFT JOIN unions u USING (run_id, iteration)
    LEFT JOIN gap_cause gc USING (run_id, iteration)
    LEFT JOIN api USING (run_id, iteration)
    LEFT JOIN kn USING (run_id, iteration)
    LEFT JOIN ev USING (run_id, iteration)
    LEFT JOIN span USING (run_id, iteration)
)
SELECT run_id, iteration, name, start_ns, end_ns, end_ns - start_ns AS wall_ns,
       gpu_active_ns, gpu_busy_ns, gpu_active_ns - gpu_busy_ns AS carried_ns,
       end_ns - start_ns - gpu_active_ns AS gpu_idle_ns, idle_sync_ns,
       end_ns - start_ns - gpu_active_ns - idle_sync_ns AS idle_cpu_ns,
       kernel_ns, copy_ns, comm_ns, kernel_sum_ns, kernels, cpu_busy_ns, cpu_events,
       launch_api_ns, launch_calls, sync_ns, gpu_span_ns, idle_gaps, max_gap_ns
FROM z;

-- stored_iteration_metrics (a table): iteration_metrics of every run, kept: computed once per run at ingest (profiler/storage/metrics.py
-- fills in runs that lack it and recomputes all when this file changes).
CREATE TABLE IF NOT EXISTS stored_iteration_metrics AS
SELECT * FROM iteration_metrics([]::VARCHAR[]) LIMIT 0;

-- run_metrics: per selected run: the means per iteration (µs), the shares of the iteration (%), and the verdict.
--   bound  'gpu'   the GPU ran work (own or carried) at least 85 % of the iteration: it sets the
--                  pace; feeding it faster could save at most the idle 15 %
--          'sync'  else, if at least 60 % of the idle time opened during a synchronize call
--          'cpu'   else, if at most 40 % did (the launching thread was busy elsewhere)
--          'mixed' otherwise; 'none' when the run has no GPU work at all
--   profiler_overhead_likely  not GPU-bound and the idle time is under 15 µs per recorded CPU
--          event of the launching thread: gaps of the size of the profiler's own per-event cost
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, iterations BIGINT, wall_us_per_iter DOUBLE, gpu_busy_us_per_iter DOUBLE,
--          gpu_idle_us_per_iter DOUBLE, carried_us_per_iter DOUBLE, gpu_active_us_per_iter DOUBLE,
--          gpu_span_us_per_iter DOUBLE, idle_gaps_per_iter DOUBLE, max_gap_us DOUBLE,
--          kernel_us_per_iter DOUBLE, copy_us_per_iter DOUBLE, exposed_copy_us_per_iter DOUBLE,
--          comm_us_per_iter DOUBLE, kernel_sum_us_per_iter DOUBLE, kernels_per_iter DOUBLE,
--          cpu_busy_us_per_iter DOUBLE, launch_api_us_per_iter DOUBLE, launch_calls_per_iter DOUBLE,
--          sync_us_per_iter DOUBLE, idle_sync_us_per_iter DOUBLE, idle_cpu_us_per_iter DOUBLE,
--          cpu_events_per_iter DOUBLE, gpu_busy_pct DOUBLE, gpu_idle_pct DOUBLE, carried_pct DOUBLE,
--          gpu_active_pct DOUBLE, span_busy_pct DOUBLE, kernel_pct DOUBLE, comm_pct DOUBLE,
--          exposed_copy_pct DOUBLE, cpu_busy_pct DOUBLE, bound VARCHAR, profiler_overhead_likely BOOLEAN
CREATE OR REPLACE MACRO run_metrics(ids) AS TABLE
WITH m AS (SELECT * FROM stored_iteration_metrics WHERE run_id IN (SELECT unnest(ids))), r AS (
    SELECT run_id, count(*) AS iterations,
           sum(wall_ns) AS wall_ns, sum(gpu_active_ns) AS gpu_active_ns, sum(gpu_busy_ns) AS gpu_busy_ns,
           sum(carried_ns) AS carried_ns, sum(gpu_idle_ns) AS gpu_idle_ns,
           sum(idle_sync_ns) AS idle_sync_ns, sum(idle_cpu_ns) AS idle_cpu_ns,
           sum(kernel_ns) AS kernel_ns, sum(copy_ns) AS copy_ns, sum(comm_ns) AS comm_ns,
           sum(kernel_sum_ns) AS kernel_sum_ns, sum(kernels) AS kernels,
           sum(cpu_busy_ns) AS cpu_busy_ns, sum(cpu_events) AS cpu_events,
           sum(launch_api_ns) AS launch_api_ns, sum(launch_calls) AS launch_calls, sum(sync_ns) AS sync_ns,
           sum(gpu_span_ns) AS gpu_span_ns, sum(idle_gaps) AS idle_gaps, max(max_gap_ns) AS max_gap_ns
    FROM m GROUP BY run_id
), v AS (
    SELECT *,
           CASE WHEN gpu_active_ns = 0 THEN 'none'
                WHEN gpu_active_ns >= 0.85 * wall_ns THEN 'gpu'
                WHEN idle_sync_ns >= 0.6 * gpu_idle_ns THEN 'sync'
                WHEN idle_sync_ns <= 0.4 * gpu_idle_ns THEN 'cpu'
                ELSE 'mixed' END AS bound
    FROM r
)
SELECT run_id, iterations,
       wall_ns / 1e3 / iterations AS wall_us_per_iter,
       gpu_busy_ns / 1e3 / iterations AS gpu_busy_us_per_iter,
       gpu_idle_ns / 1e3 / iterations AS gpu_idle_us_per_iter,
       carried_ns / 1e3 / iterations AS carried_us_per_iter,
       gpu_active_ns / 1e3 / iterations AS gpu_active_us_per_iter,
       gpu_span_ns / 1e3 / iterations AS gpu_span_us_per_iter,
       idle_gaps / iterations AS idle_gaps_per_iter,
       max_gap_ns / 1e3 AS max_gap_us,
       kernel_ns / 1e3 / iterations AS kernel_us_per_iter,
       copy_ns / 1e3 / iterations AS copy_us_per_iter,
       (gpu_busy_ns - kernel_ns) / 1e3 / iterations AS exposed_copy_us_per_iter,
       comm_ns / 1e3 / iterations AS comm_us_per_iter,
       kernel_sum_ns / 1e3 / iterations AS kernel_sum_us_per_iter,
       kernels / iterations AS kernels_per_iter,
       cpu_busy_ns / 1e3 / iterations AS cpu_busy_us_per_iter,
       launch_api_ns / 1e3 / iterations AS launch_api_us_per_iter,
       launch_calls / iterations AS launch_calls_per_iter,
       sync_ns / 1e3 / iterations AS sync_us_per_iter,
       idle_sync_ns / 1e3 / iterations AS idle_sync_us_per_iter,
       idle_cpu_ns / 1e3 / iterations AS idle_cpu_us_per_iter,
       cpu_events / iterations AS cpu_events_per_iter,
       100.0 * gpu_busy_ns / wall_ns AS gpu_busy_pct,
       100.0 * gpu_idle_ns / wall_ns AS gpu_idle_pct,
       100.0 * carried_ns / wall_ns AS carried_pct,
       100.0 * gpu_active_ns / wall_ns AS gpu_active_pct,
       100.0 * gpu_active_ns / nullif(gpu_span_ns, 0) AS span_busy_pct,
       100.0 * kernel_ns / wall_ns AS kernel_pct,
       100.0 * comm_ns / wall_ns AS comm_pct,
       100.0 * (gpu_busy_ns - kernel_ns) / wall_ns AS exposed_copy_pct,
       100.0 * cpu_busy_ns / wall_ns AS cpu_busy_pct,
       bound,
       bound NOT IN ('gpu', 'none') AND cpu_events > 0 AND gpu_idle_ns < 15e3 * cpu_events
           AS profiler_overhead_likely
FROM v;

-- run_iteration_counts: how many iterations each selected run has (at least 1) and whether it has
-- no stored ones (the whole trace is its iteration, so events outside every iteration count too).
-- Per-iteration tables divide by n_iter and keep events with an iteration, or all events when
-- whole (profiler/analysis/sql/lib/iteration_rows.sql).
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, n_iter BIGINT, whole BOOLEAN
CREATE OR REPLACE MACRO run_iteration_counts(ids) AS TABLE
SELECT run_id, count(*) AS n_iter, bool_and(NOT stored) AS whole
FROM run_windows(ids) GROUP BY run_id;
