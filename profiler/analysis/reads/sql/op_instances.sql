-- Every CPU op and user annotation of the selected runs that is work (cpu_work: not the
-- ProfilerStep#N windows), one row per call: run_id, name, cat, dur_ns, self_ns, start_ns (from
-- the start of the trace), step (its iteration; NULL: outside every one) and start_in_step_ns
-- (from that iteration's start), thread ('pid/tid'), depth, parent (the enclosing op's name),
-- input_dims, kernels (GPU kernels it launched itself: launch calls carrying its External id),
-- external_id (the key the Timeline's flow arrows join on), and matching (how many calls
-- matched). $search (empty: all) keeps ops whose name contains it (any case); the $limit
-- longest come back, longest first (ties: in time order).
-- includes: metrics, windows, cpu_work
-- params: $run_ids VARCHAR[], $search VARCHAR, $limit INTEGER
WITH o AS (
    SELECT * FROM ops
    WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[])) AND is_cpu_work(cat, name)
      AND ($search = '' OR contains(lower(name), lower($search)))
), launched AS (
    SELECT l.run_id, l.external_id, count(*) AS kernels
    FROM launches l JOIN kernels k ON k.run_id = l.run_id AND k.correlation = l.correlation
    WHERE l.run_id IN (SELECT unnest($run_ids::VARCHAR[])) AND l.external_id IS NOT NULL
    GROUP BY l.run_id, l.external_id
), w AS (
    SELECT run_id, iteration, start_ns, stored FROM run_windows($run_ids::VARCHAR[])
)
SELECT o.run_id, o.name, o.cat, o.dur_ns, o.self_ns, o.ts_ns - t.start_ns AS start_ns,
       CASE WHEN w.stored THEN o.iteration ELSE 0 END AS step, o.ts_ns - w.start_ns AS start_in_step_ns,
       coalesce(o.pid, '?') || '/' || coalesce(o.tid, '?') AS thread, o.depth, p.name AS parent,
       o.input_dims, coalesce(n.kernels, 0) AS kernels, o.external_id, count(*) OVER () AS matching
FROM o
JOIN traces t ON t.run_id = o.run_id
LEFT JOIN ops p ON p.run_id = o.run_id AND p.op_id = o.parent_id
LEFT JOIN launched n ON n.run_id = o.run_id AND n.external_id = o.external_id
LEFT JOIN w ON w.run_id = o.run_id AND (w.iteration = o.iteration OR NOT w.stored)
ORDER BY o.dur_ns DESC, o.run_id, o.ts_ns, o.op_id
LIMIT $limit
