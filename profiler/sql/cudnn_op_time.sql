-- Per iteration of each selected run: calls and CPU time of the outermost cuDNN ops (an op whose
-- name mentions cudnn and whose parent does not), and the GPU time of the kernels they launched.
-- params: $run_ids VARCHAR[]
WITH c AS (
    SELECT o.trace_id, o.op_id, o.iteration, o.dur_ns, o.external_id
    FROM ops o LEFT JOIN ops p ON p.trace_id = o.trace_id AND p.op_id = o.parent_id
    WHERE o.trace_id IN (SELECT unnest($run_ids)) AND o.name ILIKE '%cudnn%'
      AND o.cat = 'cpu_op' AND (p.name IS NULL OR p.name NOT ILIKE '%cudnn%')
), kt AS (
    SELECT k.trace_id, k.external_id, sum(k.dur_ns) AS kernel_ns
    FROM kernels k WHERE k.trace_id IN (SELECT unnest($run_ids))
    GROUP BY k.trace_id, k.external_id
)
SELECT c.trace_id AS run_id, c.iteration, count(*) AS cudnn_calls,
       sum(c.dur_ns) / 1e3 AS cudnn_cpu_us,
       coalesce(sum(kt.kernel_ns), 0) / 1e3 AS cudnn_kernel_us
FROM c LEFT JOIN kt ON kt.trace_id = c.trace_id AND kt.external_id = c.external_id
GROUP BY c.trace_id, c.iteration
ORDER BY run_id, iteration NULLS LAST;
