-- Allocated bytes over time on each run's memory device: one row per '[memory]' event, the time
-- relative to the run's first iteration start (or first event) in microseconds.
-- params: $run_ids VARCHAR[]
WITH dev AS (
    SELECT run_id, device_type, device
    FROM memory_events
    WHERE run_id IN (SELECT unnest($run_ids))
    GROUP BY run_id, device_type, device
    QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY device_type = 1 DESC, count(*) DESC, device) = 1
), origin AS (
    SELECT d.run_id, coalesce((SELECT min(start_ns) FROM iterations i WHERE i.run_id = d.run_id),
                              (SELECT min(ts_ns) FROM memory_events m WHERE m.run_id = d.run_id)) AS origin_ns
    FROM dev d
)
SELECT m.run_id, m.event_idx, (m.ts_ns - o.origin_ns) / 1000.0 AS t_us, m.iteration,
       m.change_bytes, m.total_allocated_bytes, m.total_reserved_bytes
FROM memory_events m
JOIN dev d ON m.run_id = d.run_id AND m.device_type IS NOT DISTINCT FROM d.device_type
    AND m.device IS NOT DISTINCT FROM d.device
JOIN origin o ON o.run_id = m.run_id
ORDER BY m.run_id, m.event_idx
