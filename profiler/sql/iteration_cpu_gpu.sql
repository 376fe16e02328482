-- CPU vs GPU time per iteration of each selected run. A run without iterations counts as one
-- iteration (0) spanning the whole trace.
--   wall_us          iteration length
--   cpu_op_self_us   self time of CPU ops and annotations (ProfilerStep#N excluded), all threads
--   launch_api_us    time inside runtime / driver API calls
--   gpu_kernel_us    summed kernel durations (streams may overlap)
--   gpu_memop_us     summed memcpy / memset durations
-- params: $run_ids VARCHAR[]
WITH it AS (
    SELECT i.trace_id, i.iteration, (i.end_ns - i.start_ns) / 1e3 AS wall_us, false AS whole
    FROM iterations i WHERE i.trace_id IN (SELECT unnest($run_ids))
    UNION ALL
    SELECT t.trace_id, 0, (t.end_ns - t.start_ns) / 1e3, true
    FROM traces t
    WHERE t.trace_id IN (SELECT unnest($run_ids))
      AND NOT EXISTS (SELECT 1 FROM iterations i WHERE i.trace_id = t.trace_id)
), ev AS (   -- pre-aggregated per iteration; -1 collects events outside every iteration
    SELECT trace_id, coalesce(iteration, -1) AS iteration, 'cpu' AS what, sum(self_ns) AS ns
    FROM ops
    WHERE trace_id IN (SELECT unnest($run_ids)) AND cat IN ('cpu_op', 'user_annotation')
      AND name NOT LIKE 'ProfilerStep#%'
    GROUP BY ALL
    UNION ALL
    SELECT trace_id, coalesce(iteration, -1), 'api', sum(dur_ns) FROM launches
    WHERE trace_id IN (SELECT unnest($run_ids)) GROUP BY ALL
    UNION ALL
    SELECT trace_id, coalesce(iteration, -1), 'kernel', sum(dur_ns) FROM kernels
    WHERE trace_id IN (SELECT unnest($run_ids)) GROUP BY ALL
    UNION ALL
    SELECT trace_id, coalesce(iteration, -1), 'memop', sum(dur_ns) FROM memops
    WHERE trace_id IN (SELECT unnest($run_ids)) GROUP BY ALL
)
SELECT it.trace_id AS run_id, it.iteration, any_value(it.wall_us) AS wall_us,
       coalesce(sum(ev.ns) FILTER (WHERE ev.what = 'cpu'), 0) / 1e3 AS cpu_op_self_us,
       coalesce(sum(ev.ns) FILTER (WHERE ev.what = 'api'), 0) / 1e3 AS launch_api_us,
       coalesce(sum(ev.ns) FILTER (WHERE ev.what = 'kernel'), 0) / 1e3 AS gpu_kernel_us,
       coalesce(sum(ev.ns) FILTER (WHERE ev.what = 'memop'), 0) / 1e3 AS gpu_memop_us
FROM it LEFT JOIN ev ON ev.trace_id = it.trace_id
    AND ev.iteration = CASE WHEN it.whole THEN -1 ELSE it.iteration END
GROUP BY it.trace_id, it.iteration
ORDER BY run_id, iteration;
