-- The GPU work of the selected runs with the CPU op whose call launched it: a kernel's
-- launch call (same correlation id) carries the External id of the innermost CPU op; kernels
-- launched before the trace window fall back to their own External id. Older traces give the
-- launch call its correlation id as External id instead: for those, before_op_id is the last CPU
-- op on the launching thread that started before the call (the cost model walks up from it to
-- the op that encloses the call). One row per kernel or copy: run_id, launch_op_id (by External
-- id; NULL: none), launch_ts_ns, before_op_id, kernel_hash (hash of the name:
-- sql/kernel_name_hashes.sql names them), dur_ns, iteration, flex (a compiled flex attention
-- kernel, which has no op of its own). The cost model (profiler/analysis/op_costs.py) walks up the op
-- tree from there.
-- params: $run_ids VARCHAR[]
WITH gpu AS (
    SELECT run_id, name, dur_ns, correlation, external_id, iteration FROM kernels
    WHERE run_id IN (SELECT unnest($run_ids))
    UNION ALL
    SELECT run_id, name, dur_ns, correlation, external_id, iteration FROM memops
    WHERE run_id IN (SELECT unnest($run_ids))
), by_external AS (  -- External id -> op (the innermost, should two ops share one)
    SELECT run_id, external_id, arg_max(op_id, depth) AS op_id
    FROM ops
    WHERE run_id IN (SELECT unnest($run_ids)) AND cat = 'cpu_op' AND external_id IS NOT NULL
    GROUP BY run_id, external_id
), cpu AS (
    SELECT run_id, op_id, pid, tid, ts_ns FROM ops
    WHERE run_id IN (SELECT unnest($run_ids)) AND cat = 'cpu_op'
), launched AS (
    SELECT g.run_id, e.op_id AS launch_op_id, l.ts_ns AS launch_ts_ns,
           hash(g.name) AS kernel_hash, g.dur_ns, g.iteration, g.name LIKE '%flex_attention%' AS flex,
           l.run_id AS l_trace, l.pid, l.tid
    FROM gpu g
    LEFT JOIN launches l ON l.run_id = g.run_id AND l.correlation = g.correlation
    LEFT JOIN by_external e ON e.run_id = g.run_id
         AND e.external_id = coalesce(l.external_id, g.external_id)
)
SELECT k.run_id, k.launch_op_id, k.launch_ts_ns, o.op_id AS before_op_id, k.kernel_hash, k.dur_ns,
       k.iteration, k.flex
FROM launched k
ASOF LEFT JOIN cpu o ON o.run_id = k.l_trace AND o.pid = k.pid AND o.tid = k.tid AND o.ts_ns <= k.launch_ts_ns;
