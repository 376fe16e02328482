-- The marks of one run's timeline panel in the window [$t0_ns, $t1_ns): CPU ops (one row per
-- nesting depth up to $max_depth), runtime/driver API calls per thread, and GPU work per stream.
-- Events shorter than $bucket_ns (about one pixel) are merged per row and bucket into one mark
-- that counts them; at most $max_marks marks come back, the longest first.
-- Times are microseconds relative to $origin_ns (the start of the chosen iteration).
-- params: $run_id, $origin_ns, $t0_ns, $t1_ns, $bucket_ns, $max_depth, $max_marks
WITH ev AS (
    SELECT 0 AS lane_group, 'CPU ' || coalesce(tid, '?') AS lane_base, depth AS level,
           'op' AS kind, name, ts_ns, dur_ns, NULL::UBIGINT AS correlation, external_id,
           NULL AS grid, NULL AS block, NULL::INTEGER AS registers_per_thread,
           NULL::BIGINT AS shared_mem_bytes, NULL::DOUBLE AS est_occupancy_pct, NULL AS launch_api
    FROM ops
    WHERE trace_id = $run_id AND cat <> 'gpu_user_annotation' AND depth <= $max_depth
      AND ts_ns < $t1_ns AND ts_ns + dur_ns > $t0_ns
    UNION ALL
    SELECT 1, 'API ' || coalesce(tid, '?'), 0, api_kind, name, ts_ns, dur_ns, correlation,
           external_id, NULL, NULL, NULL, NULL, NULL, NULL
    FROM launches
    WHERE trace_id = $run_id AND ts_ns < $t1_ns AND ts_ns + dur_ns > $t0_ns
    UNION ALL
    SELECT 2, 'GPU ' || coalesce(k.device, 0) || ' stream ' || coalesce(k.stream, 0), 0,
           'kernel', k.name, k.ts_ns, k.dur_ns, k.correlation, k.external_id,
           k.grid_x || '×' || k.grid_y || '×' || k.grid_z,
           k.block_x || '×' || k.block_y || '×' || k.block_z,
           k.registers_per_thread, k.shared_mem_bytes, k.est_occupancy_pct, l.name
    FROM kernels k
    LEFT JOIN launches l ON l.trace_id = k.trace_id AND l.correlation = k.correlation
    WHERE k.trace_id = $run_id AND k.ts_ns < $t1_ns AND k.ts_ns + k.dur_ns > $t0_ns
    UNION ALL
    SELECT 2, 'GPU ' || coalesce(device, 0) || ' stream ' || coalesce(stream, 0), 0, kind, name,
           ts_ns, dur_ns, correlation, external_id, NULL, NULL, NULL, NULL, NULL, NULL
    FROM memops
    WHERE trace_id = $run_id AND ts_ns < $t1_ns AND ts_ns + dur_ns > $t0_ns
), rows AS (
    SELECT *, lane_base || CASE WHEN lane_group = 0 THEN ' · depth ' || level ELSE '' END AS lane,
           (greatest(ts_ns, $t0_ns) - $t0_ns) // $bucket_ns AS bucket
    FROM ev
), small AS (   -- one hash aggregation: a lone short event keeps its own fields (any_value of one)
    SELECT lane_group, lane, level, count(*) AS events,
           CASE WHEN count(*) = 1 THEN any_value(kind) ELSE 'merged' END AS kind,
           CASE WHEN count(*) = 1 THEN any_value(name) ELSE count(*) || ' short events' END AS name,
           min(ts_ns) AS ts_ns,
           CASE WHEN count(*) = 1 THEN any_value(dur_ns)
                ELSE greatest(max(ts_ns + dur_ns) - min(ts_ns), $bucket_ns) END AS dur_ns,
           CASE WHEN count(*) = 1 THEN any_value(correlation) END AS correlation,
           CASE WHEN count(*) = 1 THEN any_value(grid) END AS grid,
           CASE WHEN count(*) = 1 THEN any_value(block) END AS block,
           CASE WHEN count(*) = 1 THEN any_value(registers_per_thread) END AS registers_per_thread,
           CASE WHEN count(*) = 1 THEN any_value(shared_mem_bytes) END AS shared_mem_bytes,
           CASE WHEN count(*) = 1 THEN any_value(est_occupancy_pct) END AS est_occupancy_pct,
           CASE WHEN count(*) = 1 THEN any_value(launch_api) END AS launch_api
    FROM rows
    WHERE dur_ns < $bucket_ns
    GROUP BY lane_group, lane, level, bucket
), kept AS (
    SELECT lane_group, lane, level, events, kind, name, ts_ns, dur_ns, correlation, grid, block,
           registers_per_thread, shared_mem_bytes, est_occupancy_pct, launch_api
    FROM small
    UNION ALL
    SELECT lane_group, lane, level, 1, kind, name, ts_ns, dur_ns, correlation, grid, block,
           registers_per_thread, shared_mem_bytes, est_occupancy_pct, launch_api
    FROM rows
    WHERE dur_ns >= $bucket_ns
)
SELECT lane_group, lane, level, kind, name,
       (ts_ns - $origin_ns) / 1e3 AS start_us, (ts_ns + dur_ns - $origin_ns) / 1e3 AS end_us,
       dur_ns / 1e3 AS dur_us, events, correlation, grid, block, registers_per_thread,
       shared_mem_bytes, est_occupancy_pct, launch_api,
       count(*) OVER () AS marks_before_cap
FROM kept
ORDER BY dur_ns DESC, start_us
LIMIT $max_marks;
