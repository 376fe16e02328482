-- Each collective of a job across its ranks: the n-th kernel of one name in an iteration on every
-- rank is one collective. How far apart the ranks start it (skew) is how long the first rank to
-- arrive waits for the last; wait_us is the mean wait of all ranks (the last one waits 0).
-- Rank clocks are compared as written (the traces' own clocks, usually epoch time).
-- A collective is a communication kernel (is_communication, sql/metrics.sql).
-- params: $job (job name)
WITH ranks AS (
    SELECT rank, run_id FROM job_ranks WHERE job = $job
), c AS (
    SELECT r.rank, k.iteration, k.name, k.ts_ns, k.dur_ns,
           k.ts_ns - min(k.ts_ns) OVER () AS rel_ns,  -- small numbers, so their mean stays exact
           row_number() OVER (PARTITION BY k.trace_id, k.iteration, k.name ORDER BY k.ts_ns) AS seq
    FROM kernels k JOIN ranks r ON r.run_id = k.trace_id
    WHERE k.iteration IS NOT NULL AND is_communication(k.name)
), one AS (
    SELECT iteration, name, seq, count(*) AS ranks,
           min(ts_ns) AS first_start_ns, max(ts_ns) AS last_start_ns,
           arg_max(rank, ts_ns) AS last_rank, avg(dur_ns) AS mean_dur_ns, max(rel_ns) - avg(rel_ns) AS wait_ns
    FROM c GROUP BY iteration, name, seq
)
SELECT iteration, name, seq, ranks, last_rank,
       (last_start_ns - first_start_ns) / 1e3 AS skew_us,
       wait_ns / 1e3 AS wait_us,
       mean_dur_ns / 1e3 AS mean_dur_us
FROM one
ORDER BY iteration, first_start_ns, name, seq
