-- Ops with their nesting, and the CPU iteration window each one starts in. Columns by name: a
-- migrated store may hold them in another order.
-- includes: none
-- params: none (each staged row carries its run_id: a batch of one or more runs)
INSERT INTO ops (run_id, op_id, parent_id, depth, cat, name, pid, tid, ts_ns, dur_ns, self_ns,
                 external_id, iteration, input_dims, input_types, concrete_inputs, collective,
                 in_msg_nelems, out_msg_nelems, msg_dtype, group_size)
SELECT o.run_id, o.op_id, o.parent_id, o.depth, o.cat, o.name, o.pid, o.tid, o.ts_ns, o.dur_ns,
       o.self_ns, o.external_id, i.iteration,
       o.input_dims, o.input_types, o.concrete_inputs,
       o.collective, o.in_msg_nelems, o.out_msg_nelems, o.msg_dtype, o.group_size
FROM stage_ops o
LEFT JOIN (
    -- each op's window found from its start alone: the as-of join sorts what it joins, and with
    -- the ops' text columns that copy was the largest memory of a 500 MB ingest
    SELECT s.run_id, s.op_id, CASE WHEN s.ts_ns < it.end_ns THEN it.iteration END AS iteration
    FROM (SELECT run_id, op_id, ts_ns FROM stage_ops) s
    ASOF LEFT JOIN stage_iterations it ON it.run_id = s.run_id AND s.ts_ns >= it.start_ns
) i ON i.run_id = o.run_id AND i.op_id = o.op_id
