-- First start, last end and kernel count of the staged trace.
WITH spans AS (
    SELECT ts_ns, ts_ns + dur_ns AS end_ns FROM stage.ops
    UNION ALL SELECT ts_ns, ts_ns + dur_ns FROM stage.launches
    UNION ALL SELECT ts_ns, ts_ns + dur_ns FROM stage.kernels
    UNION ALL SELECT ts_ns, ts_ns + dur_ns FROM stage.memops
)
SELECT min(ts_ns), max(end_ns), (SELECT count(*) FROM stage.kernels) FROM spans
