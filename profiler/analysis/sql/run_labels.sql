-- A short human label per selected run: the variant and shape for captures, the name otherwise.
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT run_id,
       CASE WHEN variant IS NULL THEN name
            ELSE variant || ' ' || coalesce(dtype, '') || ' L=' || coalesce(seq_len::VARCHAR, '?')
                 || CASE WHEN cold THEN ' (cold)' ELSE '' END
       END || ' · ' || left(run_id, 6) AS label,
       name, source, gpu_name, variant, cold
FROM traces
WHERE run_id IN (SELECT unnest($run_ids))
ORDER BY list_position($run_ids, run_id);
