-- Every run in the store, newest first: what a kernel engineer needs to pick runs to compare.
-- The per-iteration numbers and the verdict come from the metrics layer (metrics.sql):
--   shape                 B×H×L×D (batch × heads × seq_len × head_dim) of captured runs, else NULL
--   batch, heads, seq_len, head_dim  the shape's parts (NULL for uploads), for filters and sweeps
--   mode, kv_heads, kv_len, window, varlen  the rest of a captured run's shape as sql/run_shapes.sql
--                         gives it (never NULL for a captured run: window 0 and varlen '' when none)
--   kernels_per_iter      kernel launches per iteration
--   gpu_work_us_per_iter  the GPU work one iteration launched (step_work.sql; union of kernels,
--                         copies, sets, wherever they ran)
--   gpu_busy_us_per_iter  the part of it inside the iteration (own busy); gpu_busy_pct: its share
--   cpu_busy_us_per_iter  CPU wall time of the launching threads per iteration
--   bound                 the verdict (metrics.sql: run_metrics)
--   repeat                which repeat of its variant and shape a capture is, from 1 (run_meta's
--                         0-based `repeat` + 1); NULL when the capture did not say
--   captured_at           when its capture began (UTC), read from the sweep id run_meta carries
--                         (`…-20261201T050143Z`); NULL for runs captured outside a sweep and uploads
-- includes: metrics
-- params: $run_ids VARCHAR[] (every run id: the metrics layer reads only these runs)
SELECT t.run_id, t.name, t.variant,
       CASE WHEN t.seq_len IS NOT NULL THEN concat_ws('×', coalesce(t.batch::VARCHAR, '?'),
            coalesce(t.heads::VARCHAR, '?'), t.seq_len::VARCHAR, coalesce(t.head_dim::VARCHAR, '?'))
       END AS shape,
       t.batch, t.heads, t.seq_len, t.head_dim,
       CASE WHEN t.seq_len IS NOT NULL THEN COALESCE(t.mode, 'prefill') END AS mode,
       CASE WHEN t.seq_len IS NOT NULL THEN COALESCE(t.kv_heads, t.heads) END AS kv_heads,
       CASE WHEN t.seq_len IS NOT NULL THEN COALESCE(t.kv_len, t.seq_len) END AS kv_len,
       CASE WHEN t.seq_len IS NOT NULL THEN COALESCE(t."window", 0) END AS "window",
       CASE WHEN t.seq_len IS NOT NULL THEN COALESCE(t.varlen, '') END AS varlen,
       t.dtype, t.causal, t.cold, t.gpu_name,
       concat_ws(' · ', 'torch ' || t.torch_version, 'CUDA ' || t.cuda_version,
                 'cuDNN ' || t.cudnn_version) AS versions,
       coalesce(m.iterations, 0) AS iterations,
       coalesce(m.kernels_per_iter, 0) AS kernels_per_iter,
       coalesce(m.gpu_work_us_per_iter, 0) AS gpu_work_us_per_iter,
       coalesce(m.gpu_busy_us_per_iter, 0) AS gpu_busy_us_per_iter,
       m.gpu_busy_pct, m.gpu_idle_pct,
       coalesce(m.cpu_busy_us_per_iter, 0) AS cpu_busy_us_per_iter,
       m.bound,
       TRY_CAST(json_extract_string(t.run_meta, '$.repeat') AS INTEGER) + 1 AS repeat,
       try_strptime(regexp_extract(json_extract_string(t.run_meta, '$.sweep'), '([0-9]{8}T[0-9]{6}Z)', 1),
                    '%Y%m%dT%H%M%SZ') AS captured_at,
       t.events, t.size_bytes, t.source, t.added_at
FROM traces t
LEFT JOIN run_metrics($run_ids::VARCHAR[]) m
       ON m.run_id = t.run_id
ORDER BY t.added_at DESC, t.run_id;
