-- The blocks allocated during the recording and still live at a run's peak (the first event
-- with the highest allocated bytes on its memory device: lib/memory_device.sql), largest first,
-- each with the CPU op that made it and that op's input shapes. A block is live from its
-- allocation until the next event at the same address (its free). Blocks held from before the
-- recording are not events: memory_summary.sql's held_at_start_bytes counts them.
-- includes: memory_device
-- params: $run_id VARCHAR, $limit INTEGER
WITH ev AS (
    SELECT m.*, lead(m.event_idx) OVER (PARTITION BY m.addr ORDER BY m.event_idx) AS next_idx
    FROM memory_device_events([$run_id]::VARCHAR[]) m
), peak AS (
    SELECT event_idx FROM ev ORDER BY total_allocated_bytes DESC, event_idx LIMIT 1
)
SELECT ev.event_idx, ev.ts_ns, ev.iteration, ev.change_bytes AS size_bytes, ev.op_name, ev.op_input_dims
FROM ev, peak
WHERE ev.change_bytes > 0 AND ev.event_idx <= peak.event_idx
  AND (ev.next_idx IS NULL OR ev.next_idx > peak.event_idx)
ORDER BY ev.change_bytes DESC, ev.event_idx
LIMIT $limit
