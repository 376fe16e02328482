-- API calls, with the CPU iteration window each one starts in.
INSERT INTO launches
SELECT $run_id, l.name, l.api_kind, l.cbid, l.pid, l.tid, l.ts_ns, l.dur_ns, l.correlation,
       l.external_id, CASE WHEN l.ts_ns < it.end_ns THEN it.iteration END
FROM stage_launches l
ASOF LEFT JOIN stage_iterations it ON l.ts_ns >= it.start_ns
