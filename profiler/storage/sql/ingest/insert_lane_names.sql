-- One name per lane: where the trace names a thread (or process) more than once, the last name
-- written wins, as in the trace viewers (PyTorch renames its backward thread 'pt_autograd_0').
-- includes: none
-- params: $run_id VARCHAR
INSERT INTO lane_names
SELECT $run_id, kind, pid, tid, arg_max(name, event_idx)
FROM stage_lane_names
GROUP BY kind, pid, tid
