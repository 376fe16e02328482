-- The CPU ops of each of the runs on the given threads, in start order per run and thread (of ops
-- starting together, the lower op_id first): the cost model looks up the last one a thread
-- started before a launch call (profiler/analysis/reads/op_costs.py). run_id, pid, tid, ts_ns, op_id.
-- includes: none
-- params: $run_ids VARCHAR[], $pids VARCHAR[], $tids VARCHAR[]
--         (any pid with any tid: the caller keeps its pairs)
SELECT run_id, pid, tid, ts_ns, op_id
FROM ops
WHERE run_id IN (SELECT unnest($run_ids)) AND cat = 'cpu_op' AND pid IN (SELECT unnest($pids))
  AND tid IN (SELECT unnest($tids))
ORDER BY run_id, pid, tid, ts_ns, op_id;
