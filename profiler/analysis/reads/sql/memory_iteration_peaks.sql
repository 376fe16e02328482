-- Per run and iteration, on the run's memory device (lib/memory_device.sql): the peak allocated
-- bytes during the iteration, the bytes allocated when it began (before its first event), and the
-- peak above that.
-- includes: memory_device
-- params: $run_ids VARCHAR[]
SELECT m.run_id, m.iteration, count(*) AS events,
       max(m.total_allocated_bytes) AS peak_allocated_bytes,
       arg_min(m.total_allocated_bytes - m.change_bytes, m.event_idx) AS start_allocated_bytes,
       max(m.total_allocated_bytes) - arg_min(m.total_allocated_bytes - m.change_bytes, m.event_idx)
           AS peak_above_start_bytes
FROM memory_device_events($run_ids::VARCHAR[]) m
WHERE m.iteration IS NOT NULL
GROUP BY m.run_id, m.iteration
ORDER BY m.run_id, m.iteration
