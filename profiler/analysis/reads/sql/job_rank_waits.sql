-- Who waits for whom in a job: one row per rank and iteration. The straggler is the rank the
-- others wait for, found by arrival at each collective, not by the length of its step.
--
-- A collective is the n-th communication kernel (is_communication, sql/metrics.sql) of one name in
-- an iteration, on every rank that runs it (as in job_collectives.sql); it counts here when at
-- least two ranks run it. A rank arrives at it when its kernel starts (an NCCL kernel then spins
-- until its peers are there). The last rank to arrive is the one the others wait for.
--   collectives      how many collectives of the iteration the rank took part in
--   arrived_last     at how many of them it was the last to arrive (ties: the highest start wins,
--                    then the higher rank)
--   wait_us          summed over its collectives: last arrival - its own arrival, the time it
--                    waited for the others (0 where it was last)
--   late_us          summed over its collectives: its own arrival - the first arrival, how late
--                    it came (wait_us + late_us = the summed skew of its collectives)
--   caused_wait_us   summed over the collectives it arrived last at: every other rank's wait, the
--                    time the others waited for it
-- A rank's wait runs inside its collective kernels, so its step (wall time) grows with it: the
-- rank with the longest step is often one that waited, not the straggler (job_queries.stragglers
-- keeps "longest step" as a figure of its own).
-- Arrivals are compared on the job's consensus clock (lib/job_clock.sql: each rank's clock offset,
-- estimated from the collectives' ends, taken off), so a host's clock offset does not read as
-- arrival order; job_clock.sql says whether the estimate holds.
-- includes: metrics, windows, job_clock
-- params: $job VARCHAR (the job's name)
WITH ranks AS (
    SELECT j.rank, j.run_id FROM job_ranks j WHERE j.job = $job
), c AS (
    SELECT rank, iteration, name, ts_ns, seq FROM job_aligned_comm_kernels($job)
), one AS (
    SELECT iteration, name, seq, max(ts_ns) AS last_ns, min(ts_ns) AS first_ns,
           arg_max(rank, (ts_ns, rank)) AS last_rank
    FROM c GROUP BY iteration, name, seq HAVING count(*) >= 2
), per AS (
    SELECT c.rank, c.iteration, one.last_rank = c.rank AS last, one.last_ns - c.ts_ns AS wait_ns,
           c.ts_ns - one.first_ns AS late_ns,
           sum(one.last_ns - c.ts_ns) OVER (PARTITION BY c.iteration, c.name, c.seq) AS all_wait_ns
    FROM c JOIN one USING (iteration, name, seq)
)
SELECT r.rank, it.iteration,
       coalesce(count(per.rank), 0) AS collectives,
       coalesce(count(*) FILTER (WHERE per.last), 0) AS arrived_last,
       coalesce(sum(per.wait_ns), 0) / 1e3 AS wait_us,
       coalesce(sum(per.late_ns), 0) / 1e3 AS late_us,
       coalesce(sum(per.all_wait_ns) FILTER (WHERE per.last), 0) / 1e3 AS caused_wait_us
FROM ranks r
JOIN (SELECT DISTINCT iteration FROM c) it ON true
LEFT JOIN per ON per.rank = r.rank AND per.iteration = it.iteration
GROUP BY r.rank, it.iteration
ORDER BY it.iteration, r.rank
