-- One row per trace for `python -m profiler summary`: counts, summed kernel time, launch APIs.
WITH kernel_totals AS (
    SELECT trace_id, sum(dur_ns) / 1000.0 AS kernel_time_us FROM kernels GROUP BY trace_id
), iteration_counts AS (
    SELECT trace_id, count(*) AS iterations FROM iterations GROUP BY trace_id
), api_counts AS (
    SELECT trace_id, name, count(*) AS calls FROM launches GROUP BY trace_id, name
), apis AS (
    SELECT trace_id, map(list(name ORDER BY name), list(calls ORDER BY name)) AS launch_apis
    FROM api_counts GROUP BY trace_id
)
SELECT t.trace_id AS id, t.name, t.source, t.variant, t.gpu_name AS gpu, t.events,
       t.kernels, coalesce(k.kernel_time_us, 0) AS kernel_time_us,
       coalesce(i.iterations, 0) AS iterations, a.launch_apis, t.added_at
FROM traces t
LEFT JOIN kernel_totals k USING (trace_id)
LEFT JOIN iteration_counts i USING (trace_id)
LEFT JOIN apis a USING (trace_id)
ORDER BY t.added_at, t.trace_id
