-- Per run and iteration, on the run's memory device: the peak allocated bytes during the
-- iteration, the bytes allocated when it began (before its first event), and the peak above that.
-- params: $run_ids VARCHAR[]
WITH dev AS (
    SELECT run_id, device_type, device
    FROM memory_events
    WHERE run_id IN (SELECT unnest($run_ids))
    GROUP BY run_id, device_type, device
    QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY device_type = 1 DESC, count(*) DESC, device) = 1
)
SELECT m.run_id, m.iteration, count(*) AS events,
       max(m.total_allocated_bytes) AS peak_allocated_bytes,
       arg_min(m.total_allocated_bytes - m.change_bytes, m.event_idx) AS start_allocated_bytes,
       max(m.total_allocated_bytes) - arg_min(m.total_allocated_bytes - m.change_bytes, m.event_idx)
           AS peak_above_start_bytes
FROM memory_events m
JOIN dev d ON m.run_id = d.run_id AND m.device_type IS NOT DISTINCT FROM d.device_type
    AND m.device IS NOT DISTINCT FROM d.device
WHERE m.iteration IS NOT NULL
GROUP BY m.run_id, m.iteration
ORDER BY m.run_id, m.iteration
