-- Per run, on its memory device (lib/memory_device.sql): the peak of allocated bytes (the
-- allocator's 'Total Allocated'), the peak reserved, what was held before the first recorded
-- event (allocated then, minus that event's own change), and when the peak came (first time).
-- includes: memory_device
-- params: $run_ids VARCHAR[]
SELECT ev.run_id, ev.device_type, ev.device, count(*) AS events,
       max(ev.total_allocated_bytes) AS peak_allocated_bytes,
       max(ev.total_reserved_bytes) AS peak_reserved_bytes,
       arg_min(ev.total_allocated_bytes - ev.change_bytes, ev.event_idx) AS held_at_start_bytes,
       arg_max(ev.event_idx, [ev.total_allocated_bytes, -ev.event_idx]) AS peak_event_idx,
       arg_max(ev.ts_ns, [ev.total_allocated_bytes, -ev.event_idx]) AS peak_ts_ns,
       arg_max(ev.iteration, [ev.total_allocated_bytes, -ev.event_idx]) AS peak_iteration
FROM memory_device_events($run_ids::VARCHAR[]) ev
GROUP BY ev.run_id, ev.device_type, ev.device
