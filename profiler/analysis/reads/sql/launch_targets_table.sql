-- Which kernels (and copies) each launch API launched, per selected run, linked by correlation.
-- includes: iteration_rows
-- params: $run_ids VARCHAR[]
SELECT lt.run_id, lt.api, lt.api_kind, lt.target_kind, lt.target_name,
       count(*) / any_value(lt.n_iter) AS launches_per_iter,
       count(*) AS launches,
       avg(lt.target_dur_ns) / 1e3 AS mean_target_us
FROM iteration_rows('launch_targets', $run_ids::VARCHAR[]) lt
GROUP BY lt.run_id, lt.api, lt.api_kind, lt.target_kind, lt.target_name
ORDER BY run_id, launches DESC, api, target_name;
