-- Each '[memory]' instant with the CPU op that made it: stage_memory.op_id, the innermost cpu_op on
-- the same thread whose span holds the event, skipping ops that only allocate or copy for their
-- caller (aten::empty*, aten::clone, ...), so a block is credited to aten::bmm, not
-- aten::empty_strided (computed at staging: profiler/storage/staging.py, Staging._makers).
-- Its iteration is the CPU iteration window it falls in.
-- includes: none
-- params: none (each staged row carries its run_id: a batch of one or more runs)
INSERT INTO memory_events
SELECT m.run_id, m.event_idx, m.ts_ns, m.device_type, m.device, m.addr, m.change_bytes,
       m.total_allocated_bytes, m.total_reserved_bytes, m.pid, m.tid, m.op_id, o.name, o.input_dims,
       CASE WHEN m.ts_ns < it.end_ns THEN it.iteration END
FROM stage_memory m
LEFT JOIN stage_ops o ON o.run_id = m.run_id AND o.op_id = m.op_id
ASOF LEFT JOIN stage_iterations it ON it.run_id = m.run_id AND m.ts_ns >= it.start_ns
