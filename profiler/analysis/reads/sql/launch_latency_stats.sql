-- Launch latency (API call start -> kernel start) quantiles per selected run and launch API.
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT run_id, api, count(*) AS launches,
       quantile_cont((target_ts_ns - api_ts_ns) / 1e3, 0.5) AS p50_us,
       quantile_cont((target_ts_ns - api_ts_ns) / 1e3, 0.9) AS p90_us,
       quantile_cont((target_ts_ns - api_ts_ns) / 1e3, 0.99) AS p99_us,
       max((target_ts_ns - api_ts_ns) / 1e3) AS max_us
FROM launch_targets
WHERE run_id IN (SELECT unnest($run_ids)) AND target_kind = 'kernel'
GROUP BY run_id, api
ORDER BY run_id, launches DESC, api;
