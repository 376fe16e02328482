-- Every run in the store, newest first: what a kernel engineer needs to pick runs to compare.
-- Per-iteration numbers divide by the run's ProfilerStep count; a run without iterations counts
-- as one iteration spanning the whole trace (iterations = 0).
--   shape             B×H×L×D (batch × heads × seq_len × head_dim) of captured runs, else NULL
--   kernels_per_iter  kernel launches per iteration
--   gpu_us_per_iter   summed kernel time per iteration (streams may overlap)
--   cpu_us_per_iter   self time of CPU ops and annotations per iteration (ProfilerStep#N excluded)
-- params: none
WITH it AS (
    SELECT trace_id, count(*) AS n FROM iterations GROUP BY trace_id
), k AS (
    SELECT k.trace_id, count(*) AS n, sum(k.dur_ns) AS ns
    FROM kernels k LEFT JOIN it USING (trace_id)
    WHERE k.iteration IS NOT NULL OR it.n IS NULL
    GROUP BY k.trace_id
), c AS (
    SELECT o.trace_id, sum(o.self_ns) AS ns
    FROM ops o LEFT JOIN it USING (trace_id)
    WHERE o.cat IN ('cpu_op', 'user_annotation') AND o.name NOT LIKE 'ProfilerStep#%'
      AND (o.iteration IS NOT NULL OR it.n IS NULL)
    GROUP BY o.trace_id
)
SELECT t.trace_id AS run_id, t.name, t.variant,
       CASE WHEN t.seq_len IS NOT NULL THEN concat_ws('×', coalesce(t.batch::VARCHAR, '?'),
            coalesce(t.heads::VARCHAR, '?'), t.seq_len::VARCHAR, coalesce(t.head_dim::VARCHAR, '?'))
       END AS shape,
       t.dtype, t.causal, t.cold, t.gpu_name,
       concat_ws(' · ', 'torch ' || t.torch_version, 'CUDA ' || t.cuda_version,
                 'cuDNN ' || t.cudnn_version) AS versions,
       coalesce(it.n, 0) AS iterations,
       coalesce(k.n, 0) / coalesce(it.n, 1) AS kernels_per_iter,
       coalesce(k.ns, 0) / 1e3 / coalesce(it.n, 1) AS gpu_us_per_iter,
       coalesce(c.ns, 0) / 1e3 / coalesce(it.n, 1) AS cpu_us_per_iter,
       t.events, t.size_bytes, t.source, t.added_at
FROM traces t
LEFT JOIN it USING (trace_id)
LEFT JOIN k USING (trace_id)
LEFT JOIN c USING (trace_id)
ORDER BY t.added_at DESC, t.trace_id;
