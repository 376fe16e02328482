-- The CPU ops of one run on the given threads, in start order per thread (of ops starting
-- together, the lower op_id first): the cost model looks up the last one a thread started
-- before a launch call (profiler/analysis/op_costs.py). pid, tid, ts_ns, op_id.
-- includes: none
-- params: $run_id VARCHAR, $pids VARCHAR[], $tids VARCHAR[]
--         (any pid with any tid: the caller keeps its pairs)
SELECT pid, tid, ts_ns, op_id
FROM ops
WHERE run_id = $run_id AND cat = 'cpu_op' AND pid IN (SELECT unnest($pids)) AND tid IN (SELECT unnest($tids))
ORDER BY pid, tid, ts_ns, op_id;
