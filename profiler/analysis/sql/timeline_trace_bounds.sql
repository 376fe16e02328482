-- Where each selected run's trace starts and ends, for the timeline's whole-trace view: one row a
-- run, start_ns (the earliest start) and end_ns (the latest end) over the events the timeline
-- draws (CPU ops, runtime/driver API calls, kernels, copies and sets). Runs without such events
-- are left out.
-- includes: none
-- params: $run_ids VARCHAR[]
WITH ev AS (
    SELECT run_id, ts_ns, ts_ns + dur_ns AS end_ns FROM ops
    WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[])) AND cat <> 'gpu_user_annotation'
    UNION ALL
    SELECT run_id, ts_ns, ts_ns + dur_ns FROM launches WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[]))
    UNION ALL
    SELECT run_id, ts_ns, ts_ns + dur_ns FROM kernels WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[]))
    UNION ALL
    SELECT run_id, ts_ns, ts_ns + dur_ns FROM memops WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[]))
)
SELECT run_id, min(ts_ns) AS start_ns, max(end_ns) AS end_ns
FROM ev
GROUP BY run_id
ORDER BY run_id;
