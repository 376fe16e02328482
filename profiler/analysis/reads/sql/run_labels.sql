-- A short human label per selected run: the variant, mode and shape for captures, the name otherwise.
--   prefill                 'naive bf16 L=1024'            (as before modes: no mode word)
--   decode                  'flex bf16 decode KV=32768 GQA 32/8' (Q=4 when more than one query)
--   train                   'flex bf16 train L=1024'
--   a sliding window        '… L=4096 W=1024'
--   packed lengths (varlen) '… L=512+1536+1024+1024'; over 4 of them '… L=512+1536+… (8 seqs, 8192)'
--   K/V heads < heads       '… GQA 32/8' (query heads / K/V heads) in any mode
-- then ' (cold)' for a cold run and ' · ' with the run id's first 6 characters.
-- includes: none
-- params: $run_ids VARCHAR[]
WITH shaped AS (
    SELECT *, string_split(varlen, ',') AS _docs
    FROM traces
    WHERE run_id IN (SELECT unnest($run_ids))
), parts AS (
    SELECT *,
           CASE WHEN _docs IS NULL OR len(_docs) = 0 THEN coalesce(seq_len::VARCHAR, '?')
                WHEN len(_docs) <= 4 THEN array_to_string(_docs, '+')
                ELSE array_to_string(_docs[1:2], '+') || '+… (' || len(_docs) || ' seqs, '
                     || coalesce(list_sum(list_transform(_docs, lambda d: TRY_CAST(d AS BIGINT)))::VARCHAR, '?') || ')'
           END AS _lengths
    FROM shaped
)
SELECT run_id,
       CASE WHEN variant IS NULL THEN name
            ELSE variant || ' ' || coalesce(dtype, '')
                 || CASE coalesce(mode, 'prefill')
                         WHEN 'prefill' THEN ' L=' || _lengths
                         WHEN 'decode' THEN ' decode KV=' || coalesce(kv_len::VARCHAR, '?')
                                            || CASE WHEN seq_len > 1 THEN ' Q=' || seq_len ELSE '' END
                         ELSE ' ' || mode || ' L=' || _lengths
                    END
                 || CASE WHEN "window" > 0 THEN ' W=' || "window" ELSE '' END
                 || CASE WHEN kv_heads IS NOT NULL AND heads IS NOT NULL AND kv_heads <> heads
                         THEN ' GQA ' || heads || '/' || kv_heads ELSE '' END
                 || CASE WHEN cold THEN ' (cold)' ELSE '' END
       END || ' · ' || left(run_id, 6) AS label,
       name, source, gpu_name, variant, cold
FROM parts
ORDER BY list_position($run_ids, run_id);
