-- Per run, on its memory device (memory_device.sql): the peak of allocated bytes (the
-- allocator's 'Total Allocated'), the peak reserved, what was held before the first recorded
-- event (allocated then, minus that event's own change), and when the peak came (first time).
-- params: $run_ids VARCHAR[]
WITH dev AS (
    SELECT run_id, device_type, device
    FROM memory_events
    WHERE run_id IN (SELECT unnest($run_ids))
    GROUP BY run_id, device_type, device
    QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY device_type = 1 DESC, count(*) DESC, device) = 1
), ev AS (
    SELECT m.* FROM memory_events m JOIN dev d ON m.run_id = d.run_id
        AND m.device_type IS NOT DISTINCT FROM d.device_type AND m.device IS NOT DISTINCT FROM d.device
)
SELECT d.run_id, d.device_type, d.device, count(*) AS events,
       max(ev.total_allocated_bytes) AS peak_allocated_bytes,
       max(ev.total_reserved_bytes) AS peak_reserved_bytes,
       arg_min(ev.total_allocated_bytes - ev.change_bytes, ev.event_idx) AS held_at_start_bytes,
       arg_max(ev.event_idx, [ev.total_allocated_bytes, -ev.event_idx]) AS peak_event_idx,
       arg_max(ev.ts_ns, [ev.total_allocated_bytes, -ev.event_idx]) AS peak_ts_ns,
       arg_max(ev.iteration, [ev.total_allocated_bytes, -ev.event_idx]) AS peak_iteration
FROM dev d JOIN ev ON ev.run_id = d.run_id
GROUP BY d.run_id, d.device_type, d.device
