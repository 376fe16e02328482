-- The GPU work of the selected runs with the CPU op whose call launched it: a kernel's
-- launch call (same correlation id) carries the External id of the innermost CPU op; kernels
-- launched before the trace window fall back to their own External id. One row per kernel or copy:
-- run_id, launch_op_id (NULL: no CPU op found), kernel_hash (hash of the name: sql/kernel_name_hashes.sql
-- names them), dur_ns, iteration, flex (a compiled flex
-- attention kernel, which has no op of its own). The cost model (profiler/op_costs.py) walks up
-- the op tree from launch_op_id.
-- params: $run_ids VARCHAR[]
WITH gpu AS (
    SELECT trace_id, name, dur_ns, correlation, external_id, iteration FROM kernels
    WHERE trace_id IN (SELECT unnest($run_ids))
    UNION ALL
    SELECT trace_id, name, dur_ns, correlation, external_id, iteration FROM memops
    WHERE trace_id IN (SELECT unnest($run_ids))
), by_external AS (  -- External id -> op (the innermost, should two ops share one)
    SELECT trace_id, external_id, arg_max(op_id, depth) AS op_id
    FROM ops
    WHERE trace_id IN (SELECT unnest($run_ids)) AND cat = 'cpu_op' AND external_id IS NOT NULL
    GROUP BY trace_id, external_id
), launched AS (
    SELECT g.trace_id AS run_id, e.op_id AS launch_op_id, hash(g.name) AS kernel_hash, g.dur_ns, g.iteration,
           g.name LIKE '%flex_attention%' AS flex
    FROM gpu g
    LEFT JOIN launches l ON l.trace_id = g.trace_id AND l.correlation = g.correlation
    LEFT JOIN by_external e ON e.trace_id = g.trace_id
         AND e.external_id = coalesce(l.external_id, g.external_id)
)
SELECT * FROM launched;
