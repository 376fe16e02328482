-- The attention shape of each selected run (captured runs describe themselves; NULLs for uploads).
-- A captured run's mode, K/V heads and K/V length are never NULL (runs captured before modes read
-- prefill, heads and seq_len); its window is 0 and varlen '' when it has none, so runs group on them.
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT run_id, variant,
       CASE WHEN seq_len IS NOT NULL THEN COALESCE(mode, 'prefill') END AS mode,
       batch, heads,
       CASE WHEN seq_len IS NOT NULL THEN COALESCE(kv_heads, heads) END AS kv_heads,
       seq_len,
       CASE WHEN seq_len IS NOT NULL THEN COALESCE(kv_len, seq_len) END AS kv_len,
       head_dim,
       CASE WHEN seq_len IS NOT NULL THEN COALESCE("window", 0) END AS "window",
       CASE WHEN seq_len IS NOT NULL THEN COALESCE(varlen, '') END AS varlen,
       dtype, causal, cold, gpu_name
FROM traces
WHERE run_id IN (SELECT unnest($run_ids))
ORDER BY list_position($run_ids, run_id);
