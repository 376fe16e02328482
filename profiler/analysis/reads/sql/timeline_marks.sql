-- The marks of timeline panels, one panel per entry of the parallel lists $run_ids, $origins_ns,
-- $t0s_ns, $t1s_ns, $buckets_ns: the events of run_id in the window [t0_ns, t1_ns), namely CPU ops
-- (one row per nesting depth up to $max_depth), runtime/driver API calls per thread, and GPU work
-- per stream; external_id links an op to the launches and kernels it caused. Events shorter
-- than bucket_ns (about one pixel) are merged per row and bucket, and the buckets of a row that
-- follow one another without a gap (a run of pixel columns each holding short events) into one
-- mark that counts them (a lone short event keeps its own fields); at most $max_marks marks per
-- panel come back, the longest first.
-- Times are microseconds relative to origin_ns (the start of the panel's chosen iteration).
-- A panel draws only its own step: events whose iteration is the panel's (kernels and copies
-- belong to the step of the call that launched them, so a step's GPU tail past its end is kept
-- and the next step's work is not); a NULL step or a run without
-- stored iterations keeps every event.
-- Lanes carry the names the trace gives its threads and streams (lane_names), else their ids.
-- includes: none
-- params: $run_ids VARCHAR[], $origins_ns BIGINT[], $t0s_ns BIGINT[], $t1s_ns BIGINT[],
--         $buckets_ns BIGINT[], $steps BIGINT[] (parallel lists: one entry a panel),
--         $max_depth INTEGER, $max_marks INTEGER
WITH p0 AS (
    SELECT unnest($run_ids) AS run_id, unnest($origins_ns) AS origin_ns, unnest($t0s_ns) AS t0_ns,
           unnest($t1s_ns) AS t1_ns, unnest($buckets_ns) AS bucket_ns,
           unnest($steps) AS step
), p AS (
    SELECT *, step IS NOT NULL AND EXISTS (SELECT 1 FROM iterations i WHERE i.run_id = p0.run_id)
           AS stepped
    FROM p0
), names AS (
    SELECT n.run_id, n.kind, n.pid, n.tid, n.name
    FROM lane_names n JOIN p ON n.run_id = p.run_id
    WHERE n.kind IN ('thread', 'process_labels') AND n.name <> ''
), ev AS (
    SELECT p.*, 0 AS lane_group, coalesce(tn.name, 'thread ' || coalesce(o.tid, '?')) AS lane_base,
           o.depth AS level, 'op' AS kind, o.name, o.ts_ns, o.dur_ns, NULL::UBIGINT AS correlation,
           o.external_id,
           NULL AS grid, NULL AS block, NULL::INTEGER AS registers_per_thread,
           NULL::BIGINT AS shared_mem_bytes, NULL::DOUBLE AS est_occupancy_pct, NULL AS launch_api
    FROM ops o JOIN p ON o.run_id = p.run_id AND o.ts_ns < p.t1_ns AND o.ts_ns + o.dur_ns > p.t0_ns
                         AND (NOT p.stepped OR o.iteration = p.step)
    LEFT JOIN names tn ON tn.run_id = o.run_id AND tn.kind = 'thread' AND tn.pid = o.pid AND tn.tid = o.tid
    WHERE o.cat <> 'gpu_user_annotation' AND o.depth <= $max_depth
    UNION ALL
    SELECT p.*, 1, coalesce(tn.name, 'thread ' || coalesce(l.tid, '?')) || ' · API', 0, l.api_kind, l.name,
           l.ts_ns, l.dur_ns, l.correlation, l.external_id, NULL, NULL, NULL, NULL, NULL, NULL
    FROM launches l JOIN p ON l.run_id = p.run_id AND l.ts_ns < p.t1_ns AND l.ts_ns + l.dur_ns > p.t0_ns
                         AND (NOT p.stepped OR l.iteration = p.step)
    LEFT JOIN names tn ON tn.run_id = l.run_id AND tn.kind = 'thread' AND tn.pid = l.pid AND tn.tid = l.tid
    UNION ALL
    SELECT p.*, 2, coalesce(gn.name, 'GPU ' || coalesce(k.device, 0)) || ' · '
                   || coalesce(sn.name, 'stream ' || coalesce(k.stream, 0)), 0,
           'kernel', k.name, k.ts_ns, k.dur_ns, k.correlation, k.external_id,
           k.grid_x || '×' || k.grid_y || '×' || k.grid_z,
           k.block_x || '×' || k.block_y || '×' || k.block_z,
           k.registers_per_thread, k.shared_mem_bytes, k.est_occupancy_pct, l.name
    FROM kernels k JOIN p ON k.run_id = p.run_id AND k.ts_ns < p.t1_ns AND k.ts_ns + k.dur_ns > p.t0_ns
                         AND (NOT p.stepped OR k.iteration = p.step)
    LEFT JOIN launches l ON l.run_id = k.run_id AND l.correlation = k.correlation
    LEFT JOIN names gn ON gn.run_id = k.run_id AND gn.kind = 'process_labels' AND gn.pid = k.device::VARCHAR
    LEFT JOIN names sn ON sn.run_id = k.run_id AND sn.kind = 'thread' AND sn.pid = k.device::VARCHAR
                       AND sn.tid = k.stream::VARCHAR
    UNION ALL
    SELECT p.*, 2, coalesce(gn.name, 'GPU ' || coalesce(m.device, 0)) || ' · '
                   || coalesce(sn.name, 'stream ' || coalesce(m.stream, 0)), 0,
           m.kind, m.name, m.ts_ns, m.dur_ns, m.correlation, m.external_id, NULL, NULL, NULL, NULL, NULL, NULL
    FROM memops m JOIN p ON m.run_id = p.run_id AND m.ts_ns < p.t1_ns AND m.ts_ns + m.dur_ns > p.t0_ns
                         AND (NOT p.stepped OR m.iteration = p.step)
    LEFT JOIN names gn ON gn.run_id = m.run_id AND gn.kind = 'process_labels' AND gn.pid = m.device::VARCHAR
    LEFT JOIN names sn ON sn.run_id = m.run_id AND sn.kind = 'thread' AND sn.pid = m.device::VARCHAR
                       AND sn.tid = m.stream::VARCHAR
), rows AS (
    SELECT *, lane_base || CASE WHEN lane_group = 0 THEN ' · depth ' || level ELSE '' END AS lane,
           (greatest(ts_ns, t0_ns) - t0_ns) // bucket_ns AS bucket
    FROM ev
), small AS (   -- one hash aggregation: a lone short event keeps its own fields (any_value of one)
    SELECT run_id, lane_group, lane, level, bucket, count(*) AS events,
           CASE WHEN count(*) = 1 THEN any_value(kind) ELSE 'merged' END AS kind,
           CASE WHEN count(*) = 1 THEN any_value(name) ELSE count(*) || ' short events' END AS name,
           min(ts_ns) AS ts_ns,
           CASE WHEN count(*) = 1 THEN any_value(dur_ns)
                ELSE greatest(max(ts_ns + dur_ns) - min(ts_ns), any_value(bucket_ns)) END AS dur_ns,
           CASE WHEN count(*) = 1 THEN any_value(correlation) END AS correlation,
           CASE WHEN count(*) = 1 THEN any_value(external_id) END AS external_id,
           CASE WHEN count(*) = 1 THEN any_value(grid) END AS grid,
           CASE WHEN count(*) = 1 THEN any_value(block) END AS block,
           CASE WHEN count(*) = 1 THEN any_value(registers_per_thread) END AS registers_per_thread,
           CASE WHEN count(*) = 1 THEN any_value(shared_mem_bytes) END AS shared_mem_bytes,
           CASE WHEN count(*) = 1 THEN any_value(est_occupancy_pct) END AS est_occupancy_pct,
           CASE WHEN count(*) = 1 THEN any_value(launch_api) END AS launch_api
    FROM rows
    WHERE dur_ns < bucket_ns
    GROUP BY run_id, lane_group, lane, level, bucket
), runs AS (    -- buckets of a row next to each other share an island number
    SELECT *, bucket - row_number() OVER (PARTITION BY run_id, lane ORDER BY bucket) AS island
    FROM small
), kept AS (
    SELECT run_id, lane_group, lane, level, sum(events)::BIGINT AS events,
           CASE WHEN sum(events) = 1 THEN any_value(kind) ELSE 'merged' END AS kind,
           CASE WHEN sum(events) = 1 THEN any_value(name) ELSE sum(events) || ' short events' END AS name,
           min(ts_ns) AS ts_ns,
           CASE WHEN sum(events) = 1 THEN any_value(dur_ns) ELSE max(ts_ns + dur_ns) - min(ts_ns) END AS dur_ns,
           CASE WHEN sum(events) = 1 THEN any_value(correlation) END AS correlation,
           CASE WHEN sum(events) = 1 THEN any_value(external_id) END AS external_id,
           CASE WHEN sum(events) = 1 THEN any_value(grid) END AS grid,
           CASE WHEN sum(events) = 1 THEN any_value(block) END AS block,
           CASE WHEN sum(events) = 1 THEN any_value(registers_per_thread) END AS registers_per_thread,
           CASE WHEN sum(events) = 1 THEN any_value(shared_mem_bytes) END AS shared_mem_bytes,
           CASE WHEN sum(events) = 1 THEN any_value(est_occupancy_pct) END AS est_occupancy_pct,
           CASE WHEN sum(events) = 1 THEN any_value(launch_api) END AS launch_api
    FROM runs
    GROUP BY run_id, lane_group, lane, level, island
    UNION ALL
    SELECT run_id, lane_group, lane, level, 1, kind, name, ts_ns, dur_ns, correlation, external_id,
           grid, block,
           registers_per_thread, shared_mem_bytes, est_occupancy_pct, launch_api
    FROM rows
    WHERE dur_ns >= bucket_ns
)
SELECT k.run_id, lane_group, lane, level, kind, name,
       (ts_ns - p.origin_ns) / 1e3 AS start_us, (ts_ns + dur_ns - p.origin_ns) / 1e3 AS end_us,
       dur_ns / 1e3 AS dur_us, events, correlation, external_id, grid, block, registers_per_thread,
       shared_mem_bytes, est_occupancy_pct, launch_api,
       count(*) OVER (PARTITION BY k.run_id) AS marks_before_cap
FROM kept k JOIN p ON p.run_id = k.run_id
QUALIFY row_number() OVER (PARTITION BY k.run_id ORDER BY dur_ns DESC, start_us) <= $max_marks
ORDER BY k.run_id, dur_ns DESC, start_us;
