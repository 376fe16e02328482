-- The kernels and copies of one iteration of one run in start order, with the API that launched
-- each (by correlation). $start_ns/$end_ns bound the iteration.
-- includes: none
-- params: $run_id VARCHAR, $start_ns BIGINT, $end_ns BIGINT
WITH g AS (
    SELECT 'kernel' AS kind, name, stream, ts_ns, dur_ns, correlation FROM kernels
    WHERE run_id = $run_id AND ts_ns >= $start_ns AND ts_ns < $end_ns
    UNION ALL
    SELECT kind, name, stream, ts_ns, dur_ns, correlation FROM memops
    WHERE run_id = $run_id AND ts_ns >= $start_ns AND ts_ns < $end_ns
)
SELECT row_number() OVER (ORDER BY g.ts_ns, g.name) - 1 AS seq, g.kind, g.name, g.stream,
       (g.ts_ns - $start_ns) / 1e3 AS start_us, g.dur_ns / 1e3 AS dur_us, l.name AS launch_api
FROM g LEFT JOIN launches l ON l.run_id = $run_id AND l.correlation = g.correlation
ORDER BY seq;
