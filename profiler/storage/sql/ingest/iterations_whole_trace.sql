-- Last resort: the whole trace is one iteration.
-- includes: none
-- params: none
WITH spans AS (
    SELECT ts_ns, ts_ns + dur_ns AS end_ns FROM stage_ops
    UNION ALL SELECT ts_ns, ts_ns + dur_ns FROM stage_launches
    UNION ALL SELECT ts_ns, ts_ns + dur_ns FROM stage_kernels
    UNION ALL SELECT ts_ns, ts_ns + dur_ns FROM stage_memops
)
SELECT 0 AS iteration, '(whole trace)' AS name, min(ts_ns) AS start_ns, max(end_ns) + 1 AS end_ns
FROM spans HAVING count(*) > 0
