-- Every kernel of the selected runs, one row per launch (not summed per name): run_id, name,
-- dur_ns, start_ns (from the start of the trace), step (its iteration; NULL: outside every one)
-- and start_in_step_ns (from that iteration's start: where the Timeline page draws it), device,
-- stream, grid and block ('x×y×z'), api (the runtime / driver call with its correlation id; NULL:
-- launched before the trace), launch_op (the innermost CPU op whose External id the launch call
-- carries, else the kernel's own: the op that launched it; NULL: none recorded), external_id (the
-- key the Timeline's flow arrows join on), correlation, and matching (how many launches matched).
-- $search (empty: all) keeps launches whose kernel, launching op or API name contains it (any
-- case); the $limit longest come back, longest first (ties: in time order).
-- includes: metrics, windows
-- params: $run_ids VARCHAR[], $search VARCHAR, $limit INTEGER
WITH k AS (
    SELECT k.*, l.name AS api, coalesce(l.external_id, k.external_id) AS ext
    FROM kernels k
    LEFT JOIN launches l ON l.run_id = k.run_id AND l.correlation = k.correlation
    WHERE k.run_id IN (SELECT unnest($run_ids::VARCHAR[]))
), launching AS (  -- External id -> the innermost CPU op carrying it
    SELECT run_id, external_id, arg_max(name, depth) AS launch_op
    FROM ops
    WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[])) AND cat = 'cpu_op'
      AND external_id IN (SELECT ext FROM k)
    GROUP BY run_id, external_id
), w AS (
    SELECT run_id, iteration, start_ns, stored FROM run_windows($run_ids::VARCHAR[])
), rows AS (
    SELECT k.run_id, k.name, k.dur_ns, k.ts_ns - t.start_ns AS start_ns,
           CASE WHEN w.stored THEN k.iteration ELSE 0 END AS step, k.ts_ns - w.start_ns AS start_in_step_ns,
           k.device, k.stream, k.grid_x || '×' || k.grid_y || '×' || k.grid_z AS grid,
           k.block_x || '×' || k.block_y || '×' || k.block_z AS block, k.api, o.launch_op,
           k.ext AS external_id, k.correlation, k.ts_ns
    FROM k
    JOIN traces t ON t.run_id = k.run_id
    LEFT JOIN launching o ON o.run_id = k.run_id AND o.external_id = k.ext
    LEFT JOIN w ON w.run_id = k.run_id AND (w.iteration = k.iteration OR NOT w.stored)
    WHERE $search = '' OR contains(lower(k.name), lower($search)) OR contains(lower(o.launch_op), lower($search))
       OR contains(lower(k.api), lower($search))
)
SELECT * EXCLUDE (ts_ns), count(*) OVER () AS matching
FROM rows
ORDER BY dur_ns DESC, run_id, ts_ns, correlation
LIMIT $limit
