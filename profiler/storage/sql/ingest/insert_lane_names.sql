-- One name per lane: where the trace names a thread (or process) more than once, the last name
-- written wins, as in the trace viewers (PyTorch renames its backward thread 'pt_autograd_0').
-- includes: none
-- params: none (each staged row carries its run_id: a batch of one or more runs)
INSERT INTO lane_names
SELECT run_id, kind, pid, tid, arg_max(name, event_idx)
FROM stage_lane_names
GROUP BY run_id, kind, pid, tid
