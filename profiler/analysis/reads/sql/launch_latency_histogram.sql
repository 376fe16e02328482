-- Launch latency (API call start -> kernel start) per selected run and launch API, as a
-- histogram over log-spaced bins (5 per decade); latencies below 0.1 us fall in the first bin.
-- includes: none
-- params: $run_ids VARCHAR[]
WITH lat AS (
    SELECT run_id, api, greatest((target_ts_ns - api_ts_ns) / 1e3, 0.1) AS latency_us
    FROM launch_targets
    WHERE run_id IN (SELECT unnest($run_ids)) AND target_kind = 'kernel'
), b AS (
    SELECT run_id, api, floor(log10(latency_us) * 5) AS bin FROM lat
)
SELECT run_id, api, pow(10, bin / 5) AS bin_start_us, pow(10, (bin + 1) / 5) AS bin_end_us,
       count(*) AS launches
FROM b
GROUP BY run_id, api, bin
ORDER BY run_id, api, bin_start_us;
