-- The GPU description of each selected run: deviceProperties as written and the GPU name.
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT run_id, device_properties, gpu_name
FROM traces
WHERE run_id IN (SELECT unnest($run_ids));
