-- A step's GPU work: the one definition (docs/analysis.md, "A step's GPU work"). Part of the
-- metrics layer: the store loads it before metrics.sql (profiler/storage/metrics.py).
--
-- A GPU event (kernel, copy, set) belongs to the step whose call launched it (same correlation
-- id; the call's start time picks the step: kernels.iteration, set at ingest), wherever and
-- whenever it runs. An event whose call is in the trace but outside every step belongs to none.
-- In a run that records launch calls, an event with no call in the trace (launched before
-- profiling began) is "unattributed": counted apart, never placed in a step. A run that records
-- no launch calls at all places its events by their own start time. A run without steps is one
-- step, the whole trace: every GPU event in it is its own (unattributed ones still counted apart).
--   gpu_work_ns       union of the step's own GPU events, unclipped (it can exceed the step's
--                     wall time when work spills out)
--   gpu_work_sum_ns   their summed durations (streams may overlap: can exceed the union)
--   kernel_work_ns    union of the step's own kernels alone
--   spilled_ns        the part of gpu_work_ns that ran after the step ended
--   unattributed_ns   union of events with no launch call, clipped to the step's window
--   unattributed      how many such events overlap the window
-- includes: windows
-- params: none

-- step_work: one row per iteration window of the selected runs (run_windows), the measures above.
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, iteration INTEGER, gpu_work_ns HUGEINT, gpu_work_sum_ns HUGEINT,
--          kernel_work_ns HUGEINT, spilled_ns HUGEINT, unattributed_ns HUGEINT, unattributed BIGINT
CREATE OR REPLACE MACRO step_work(ids) AS TABLE
WITH w AS (
    SELECT * FROM run_windows(ids)
), called AS (      -- every correlation id a call in the trace carries
    SELECT DISTINCT run_id, correlation FROM launches
    WHERE run_id IN (SELECT unnest(ids)) AND correlation IS NOT NULL
), records AS (
    SELECT DISTINCT run_id FROM called
), g AS (
    SELECT run_id, true AS kernel, ts_ns, ts_ns + dur_ns AS end_ns, dur_ns, correlation, iteration
    FROM kernels WHERE run_id IN (SELECT unnest(ids))
    UNION ALL
    SELECT run_id, false, ts_ns, ts_ns + dur_ns, dur_ns, correlation, iteration
    FROM memops WHERE run_id IN (SELECT unnest(ids))
), tagged AS (      -- unattributed: the run records calls and none carries this event's id
    SELECT g.*, rec.run_id IS NOT NULL AND c.run_id IS NULL AS unattributed
    FROM g LEFT JOIN records rec ON rec.run_id = g.run_id
    LEFT JOIN called c ON c.run_id = g.run_id AND c.correlation = g.correlation
), own AS (
    SELECT w.run_id, w.iteration, w.end_ns AS w_end, t.kernel, t.ts_ns AS s, t.end_ns AS e, t.dur_ns
    FROM tagged t JOIN w ON w.run_id = t.run_id
     AND (CASE WHEN w.stored THEN t.iteration = w.iteration ELSE true END)
), cls AS (
    SELECT run_id, iteration, 'work' AS c, s, e FROM own
    UNION ALL SELECT run_id, iteration, 'kernel', s, e FROM own WHERE kernel
    UNION ALL SELECT run_id, iteration, 'spill', greatest(s, w_end), e FROM own WHERE e > w_end
    UNION ALL
    SELECT w.run_id, w.iteration, 'unattributed', greatest(t.ts_ns, w.start_ns), least(t.end_ns, w.end_ns)
    FROM tagged t JOIN w ON w.run_id = t.run_id AND t.ts_ns < w.end_ns AND t.end_ns > w.start_ns
    WHERE t.unattributed
), frontier AS (
    SELECT run_id, iteration, c, s, e,
           max(e) OVER (PARTITION BY run_id, iteration, c ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM cls
), unions AS (
    SELECT run_id, iteration,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'work') AS gpu_work_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'kernel') AS kernel_work_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'spill') AS spilled_ns,
           sum(greatest(e - greatest(s, coalesce(reach, s)), 0)) FILTER (WHERE c = 'unattributed') AS unattributed_ns,
           count(*) FILTER (WHERE c = 'unattributed') AS unattributed
    FROM frontier GROUP BY run_id, iteration
), sums AS (
    SELECT run_id, iteration, sum(dur_ns) AS gpu_work_sum_ns FROM own GROUP BY ALL
)
SELECT w.run_id, w.iteration, coalesce(u.gpu_work_ns, 0) AS gpu_work_ns,
       coalesce(s.gpu_work_sum_ns, 0) AS gpu_work_sum_ns, coalesce(u.kernel_work_ns, 0) AS kernel_work_ns,
       coalesce(u.spilled_ns, 0) AS spilled_ns, coalesce(u.unattributed_ns, 0) AS unattributed_ns,
       coalesce(u.unattributed, 0) AS unattributed
FROM w LEFT JOIN unions u USING (run_id, iteration) LEFT JOIN sums s USING (run_id, iteration);
