-- Per iteration of each selected run: calls and CPU time of the outermost cuDNN attention ops (an
-- op whose name mentions cudnn and attention and whose parent does not), and the GPU time of the kernels launched from
-- inside them: launch calls on the op's thread during the op, linked to kernels by correlation
-- (a kernel's External id often names a child op, so time and thread are the reliable link).
-- includes: none
-- params: $run_ids VARCHAR[]
WITH c AS (
    SELECT o.run_id, o.op_id, o.iteration, o.tid, o.ts_ns, o.dur_ns
    FROM ops o LEFT JOIN ops p ON p.run_id = o.run_id AND p.op_id = o.parent_id
    WHERE o.run_id IN (SELECT unnest($run_ids)) AND o.name ILIKE '%cudnn%attention%'
      AND o.cat = 'cpu_op' AND (p.name IS NULL OR p.name NOT ILIKE '%cudnn%attention%')
), kt AS (   -- each launch to the latest cuDNN op started before it on its thread (ASOF)
    SELECT c.run_id, c.op_id, sum(k.dur_ns) AS kernel_ns
    FROM (SELECT * FROM launches WHERE run_id IN (SELECT unnest($run_ids))) l
    ASOF JOIN c ON l.run_id = c.run_id AND l.tid = c.tid AND l.ts_ns >= c.ts_ns
    JOIN kernels k ON k.run_id = l.run_id AND k.correlation = l.correlation
    WHERE l.ts_ns < c.ts_ns + c.dur_ns
    GROUP BY c.run_id, c.op_id
)
SELECT c.run_id, c.iteration, count(*) AS cudnn_calls,
       sum(c.dur_ns) / 1e3 AS cudnn_cpu_us,
       coalesce(sum(kt.kernel_ns), 0) / 1e3 AS cudnn_kernel_us
FROM c LEFT JOIN kt ON kt.run_id = c.run_id AND kt.op_id = c.op_id
GROUP BY c.run_id, c.iteration
ORDER BY run_id, iteration NULLS LAST;
