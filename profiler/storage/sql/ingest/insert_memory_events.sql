-- Each '[memory]' instant with the CPU op that made it: the innermost cpu_op on the same thread
-- whose span holds the event, skipping ops that only allocate or copy for their caller
-- (aten::empty*, aten::clone, ...), so a block is credited to aten::bmm, not aten::empty_strided.
-- Its iteration is the CPU iteration window it falls in.
INSERT INTO memory_events
WITH maker AS (
    SELECT m.event_idx, arg_max(o.op_id, o.depth) AS op_id
    FROM stage_memory m
    JOIN stage_ops o ON o.pid = m.pid AND o.tid = m.tid AND o.ts_ns <= m.ts_ns AND m.ts_ns <= o.ts_ns + o.dur_ns
    WHERE o.cat = 'cpu_op'
      AND NOT (o.name LIKE 'aten::empty%' OR o.name LIKE 'aten::new_empty%'
               OR o.name IN ('aten::resize_', 'aten::clone', 'aten::contiguous'))
    GROUP BY m.event_idx
)
SELECT $run_id, m.event_idx, m.ts_ns, m.device_type, m.device, m.addr, m.change_bytes,
       m.total_allocated_bytes, m.total_reserved_bytes, m.pid, m.tid, w.op_id, o.name, o.input_dims,
       CASE WHEN m.ts_ns < it.end_ns THEN it.iteration END
FROM stage_memory m
LEFT JOIN maker w ON w.event_idx = m.event_idx
LEFT JOIN stage_ops o ON o.op_id = w.op_id
ASOF LEFT JOIN stage_iterations it ON m.ts_ns >= it.start_ns
