-- The attention shape of each selected run (captured runs describe themselves; NULLs for uploads).
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT run_id, variant, batch, heads, seq_len, head_dim, dtype, causal, cold, gpu_name
FROM traces
WHERE run_id IN (SELECT unnest($run_ids))
ORDER BY list_position($run_ids, run_id);
