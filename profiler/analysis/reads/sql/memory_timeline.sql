-- Allocated bytes over time on each run's memory device (lib/memory_device.sql): one row per
-- '[memory]' event, the time relative to the run's first iteration start (or first event) in
-- microseconds.
-- includes: memory_device
-- params: $run_ids VARCHAR[]
WITH origin AS (
    SELECT d.run_id, coalesce((SELECT min(start_ns) FROM iterations i WHERE i.run_id = d.run_id),
                              (SELECT min(ts_ns) FROM memory_events m WHERE m.run_id = d.run_id)) AS origin_ns
    FROM memory_device($run_ids::VARCHAR[]) d
)
SELECT m.run_id, m.event_idx, (m.ts_ns - o.origin_ns) / 1000.0 AS t_us, m.iteration,
       m.change_bytes, m.total_allocated_bytes, m.total_reserved_bytes
FROM memory_device_events($run_ids::VARCHAR[]) m
JOIN origin o ON o.run_id = m.run_id
ORDER BY m.run_id, m.event_idx
