-- The GPU work of the selected runs with the CPU op whose call launched it: a kernel's
-- launch call (same correlation id) carries the External id of the innermost CPU op; kernels
-- launched before the trace window fall back to their own External id. Older traces give the
-- launch call its correlation id as External id instead: for those, the cost model
-- (profiler/analysis/reads/op_costs.py) finds the last CPU op the launching thread (launch_pid,
-- launch_tid) started before the call (sql/thread_ops.sql) and walks up from it to the op that
-- encloses the call. One row per kernel or copy, in GPU start order: run_id, launch_op_id (by
-- External id; NULL: none), launch_ts_ns, launch_pid, launch_tid (NULL: no launch call),
-- kernel_hash (hash of the name: sql/kernel_name_hashes.sql names them), ts_ns (its GPU start), dur_ns,
-- iteration, flex
-- (a compiled flex attention kernel, which has no op of its own), replayed (launched by a
-- …GraphLaunch call: its op, where a capture was joined in, is the one of its External id).
-- includes: none
-- params: $run_ids VARCHAR[]
WITH gpu AS (
    SELECT run_id, name, ts_ns, dur_ns, correlation, external_id, iteration FROM kernels
    WHERE run_id IN (SELECT unnest($run_ids))
    UNION ALL
    SELECT run_id, name, ts_ns, dur_ns, correlation, external_id, iteration FROM memops
    WHERE run_id IN (SELECT unnest($run_ids))
), launched AS (
    SELECT g.*, coalesce(l.external_id, g.external_id) AS ext, l.ts_ns AS launch_ts_ns,
           l.pid AS launch_pid, l.tid AS launch_tid, coalesce(l.name ILIKE '%graphlaunch%', false) AS replayed
    FROM gpu g
    LEFT JOIN launches l ON l.run_id = g.run_id AND l.correlation = g.correlation
), by_external AS (  -- External id -> op (the innermost, should two ops share one)
    SELECT run_id, external_id, arg_max(op_id, depth) AS op_id
    FROM ops
    WHERE run_id IN (SELECT unnest($run_ids)) AND cat = 'cpu_op'
      AND external_id IN (SELECT ext FROM launched)
    GROUP BY run_id, external_id
)
SELECT k.run_id, e.op_id AS launch_op_id, k.launch_ts_ns, k.launch_pid, k.launch_tid,
       hash(k.name) AS kernel_hash, k.ts_ns, k.dur_ns, k.iteration,
       -- a flex call is its Triton template kernel; pointwise and reduction kernels inductor fused
       -- around it (their names say flex_attention too) are not calls of their own
       k.name LIKE '%flex_attention%' AND NOT regexp_matches(k.name, '^triton_(poi|red|per)_') AS flex,
       k.replayed
FROM launched k
LEFT JOIN by_external e ON e.run_id = k.run_id AND e.external_id = k.ext
ORDER BY k.run_id, k.ts_ns, k.correlation, kernel_hash, k.dur_ns;
