-- One row per rank and iteration of a job: the step time, GPU busy and collective time.
--   step_us        the iteration's window (ProfilerStep#N, else the repeated annotation; see iterations)
--   gpu_busy_us    length of the union of the intervals of the kernels and memcpy/memset that the
--                  iteration launched, clipped to its window (streams that overlap count once)
--   gpu_idle_us    step_us - gpu_busy_us
--   collective_us  length of the union of the collective kernels' intervals (kernel name matches
--                  $collective), clipped the same way
-- params: $job (job name), $collective (regular expression on kernel names)
WITH ranks AS (
    SELECT rank, run_id FROM job_ranks WHERE job = $job
), it AS (
    SELECT r.rank, i.trace_id, i.iteration, i.name, i.start_ns, i.end_ns
    FROM iterations i JOIN ranks r ON r.run_id = i.trace_id
), work AS (
    SELECT k.trace_id, k.iteration, k.ts_ns AS s, k.ts_ns + k.dur_ns AS e,
           regexp_matches(k.name, $collective) AS collective
    FROM kernels k WHERE k.trace_id IN (SELECT run_id FROM ranks) AND k.iteration IS NOT NULL
    UNION ALL
    SELECT m.trace_id, m.iteration, m.ts_ns, m.ts_ns + m.dur_ns, false
    FROM memops m WHERE m.trace_id IN (SELECT run_id FROM ranks) AND m.iteration IS NOT NULL
), clipped AS (
    SELECT w.trace_id, w.iteration, greatest(w.s, it.start_ns) AS s, least(w.e, it.end_ns) AS e, w.collective
    FROM work w JOIN it USING (trace_id, iteration)
    WHERE least(w.e, it.end_ns) > greatest(w.s, it.start_ns)
), kinds AS (  -- every interval counts for busy; collective ones also for collective time
    SELECT trace_id, iteration, 'busy' AS kind, s, e FROM clipped
    UNION ALL SELECT trace_id, iteration, 'collective', s, e FROM clipped WHERE collective
), ordered AS (
    SELECT *, max(e) OVER (PARTITION BY trace_id, iteration, kind ORDER BY s, e
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM kinds
), islands AS (
    SELECT *, sum(CASE WHEN reach IS NULL OR s > reach THEN 1 ELSE 0 END)
              OVER (PARTITION BY trace_id, iteration, kind ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
), merged AS (
    SELECT trace_id, iteration, kind, max(e) - min(s) AS ns FROM islands GROUP BY trace_id, iteration, kind, island
), totals AS (
    SELECT trace_id, iteration,
           sum(ns) FILTER (WHERE kind = 'busy') AS busy_ns,
           sum(ns) FILTER (WHERE kind = 'collective') AS collective_ns
    FROM merged GROUP BY trace_id, iteration
)
SELECT it.rank, it.iteration, it.name AS iteration_name, it.trace_id AS run_id,
       (it.end_ns - it.start_ns) / 1e3 AS step_us,
       coalesce(t.busy_ns, 0) / 1e3 AS gpu_busy_us,
       (it.end_ns - it.start_ns - coalesce(t.busy_ns, 0)) / 1e3 AS gpu_idle_us,
       coalesce(t.collective_ns, 0) / 1e3 AS collective_us
FROM it LEFT JOIN totals t USING (trace_id, iteration)
ORDER BY it.iteration, it.rank
