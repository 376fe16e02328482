-- Iteration windows from ProfilerStep#N annotations on the CPU side, in time order.
-- includes: none
-- params: none
SELECT (row_number() OVER (ORDER BY ts_ns) - 1)::INTEGER AS iteration, name,
       ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
FROM stage_ops
WHERE cat <> 'gpu_user_annotation' AND name LIKE 'ProfilerStep#%'
ORDER BY ts_ns
