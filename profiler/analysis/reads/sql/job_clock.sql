-- The clock of each rank of a job (lib/job_clock.sql says how it is estimated) and whether the
-- estimate holds: one row per rank that took part in a collective of at least two ranks.
--   matched         collectives its offset was estimated from
--   offset_us       its clock minus the job's consensus clock (the median rank), as estimated
--   uncertainty_us  the spread of that estimate over its collectives (a robust standard
--                   deviation, at least 1 µs)
--   applied_us      the offset taken off its times (offset_us where it is larger than 3 x its
--                   uncertainty, else 0)
--   impossible      collectives where, on the consensus clock, it would have waited longer than its
--                   own kernel ran (a rank waits inside its collective kernel, so that cannot be):
--                   wait - kernel time > 6 x the job's median uncertainty (twice the end-matching
--                   noise of a typical rank, 3 times over; a rank whose own estimate is poor cannot
--                   widen it). Any makes the estimate inconsistent: the job's waits are not stated.
--   worst_excess_us the largest such excess (0 when none)
-- includes: metrics, job_clock
-- params: $job VARCHAR (the job's name)
WITH o AS (
    SELECT * FROM job_clock_offsets($job)
), k AS (
    SELECT a.rank, a.iteration, a.name, a.seq, a.ts_ns, a.dur_ns,
           count(*) OVER (PARTITION BY a.iteration, a.name, a.seq) AS ranks,
           max(a.ts_ns) OVER (PARTITION BY a.iteration, a.name, a.seq) AS last_ns
    FROM job_aligned_comm_kernels($job) a
), excess AS (
    SELECT k.rank, (k.last_ns - k.ts_ns) - k.dur_ns AS over_ns,
           6 * (SELECT median(uncertainty_ns) FROM o) AS tolerance_ns
    FROM k WHERE k.ranks >= 2
)
SELECT o.rank, o.matched, o.raw_offset_ns / 1e3 AS offset_us, o.uncertainty_ns / 1e3 AS uncertainty_us,
       o.offset_ns / 1e3 AS applied_us,
       count(*) FILTER (WHERE e.over_ns > e.tolerance_ns) AS impossible,
       coalesce(max(e.over_ns) FILTER (WHERE e.over_ns > e.tolerance_ns), 0) / 1e3 AS worst_excess_us
FROM o LEFT JOIN excess e ON e.rank = o.rank
GROUP BY o.rank, o.matched, o.raw_offset_ns, o.uncertainty_ns, o.offset_ns
ORDER BY o.rank
