-- The memory device of a run: the one device whose '[memory]' events the memory views read (the
-- summary, the timeline, the peaks per iteration, the blocks live at the peak).
-- includes: none
-- params: none

-- memory_device: per selected run with memory events, its memory device: a GPU (device_type 1)
-- before any other, then the device with the most events, then the lowest device id.
-- args: run_ids VARCHAR[]
-- outputs: run_id VARCHAR, device_type INTEGER, device INTEGER
CREATE OR REPLACE TEMP MACRO memory_device(run_ids) AS TABLE
SELECT run_id, device_type, device
FROM memory_events
WHERE run_id IN (SELECT unnest(run_ids))
GROUP BY run_id, device_type, device
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY device_type = 1 DESC, count(*) DESC, device) = 1;

-- memory_device_events: the memory events of each selected run on its memory device, every column
-- of memory_events.
-- args: run_ids VARCHAR[]
-- outputs: the columns of memory_events
CREATE OR REPLACE TEMP MACRO memory_device_events(run_ids) AS TABLE
SELECT m.*
FROM memory_events m
JOIN memory_device(run_ids) d ON m.run_id = d.run_id AND m.device_type IS NOT DISTINCT FROM d.device_type
    AND m.device IS NOT DISTINCT FROM d.device;
