-- The GPU description of each selected run: deviceProperties as written and the GPU name.
-- params: $run_ids VARCHAR[]
SELECT trace_id AS run_id, device_properties, gpu_name
FROM traces
WHERE trace_id IN (SELECT unnest($run_ids));
