-- One row per rank and iteration of a job, read from the metrics layer (sql/metrics.sql, the one
-- definition of these numbers; each rank's rows are computed at ingest like a single upload's):
--   step_us        the iteration's window (wall_ns)
--   gpu_work_us    the GPU work the step launched (step_work.sql's gpu_work_ns: the one figure of a
--                  step's GPU work; unclipped, it can exceed step_us when work spills out)
--   gpu_busy_us    own busy: the part of it inside the window (gpu_busy_ns), a share of step_us
--   carried_us     time only GPU work launched before the window ran (carried_ns)
--   gpu_idle_us    no GPU work at all (gpu_idle_ns); busy + carried + idle = step
--   collective_us  union of its communication kernels (comm_ns: is_communication)
-- includes: metrics
-- params: $job VARCHAR (the job's name)
SELECT r.rank, m.iteration, m.name AS iteration_name, m.run_id,
       m.wall_ns / 1e3 AS step_us,
       m.gpu_work_ns / 1e3 AS gpu_work_us,
       m.gpu_busy_ns / 1e3 AS gpu_busy_us,
       m.carried_ns / 1e3 AS carried_us,
       m.gpu_idle_ns / 1e3 AS gpu_idle_us,
       m.comm_ns / 1e3 AS collective_us
FROM stored_iteration_metrics m JOIN job_ranks r ON r.run_id = m.run_id
WHERE r.job = $job
ORDER BY m.iteration, r.rank
