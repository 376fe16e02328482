-- The clocks of a job's ranks (docs/analysis.md, "Clocks across ranks"). Rank files come from
-- different hosts, whose clocks differ; every start and end compared across ranks is first put on
-- one clock. The estimate rests on one fact: a collective ends at nearly the same moment on every
-- rank that takes part (each spins in its kernel until the last one arrives, then all finish
-- together), whenever each one arrived.
--   the reference end of a collective   the median of its ranks' kernel ends (at least 2 ranks)
--   a rank's raw offset                 the median, over its collectives, of its end minus the
--                                       reference end (its clock reads that much ahead)
--   its uncertainty                     1.4826 x the median absolute deviation of those
--                                       differences (a robust standard deviation of one
--                                       collective's estimate), at least 1 µs (old traces write
--                                       whole µs; kernel ends are not matched finer)
--   the offset applied                  the raw offset where it is larger than 3 x its uncertainty,
--                                       else 0 (a rank on the others' clock is left as written)
-- Offsets are relative to the job's consensus (the median rank), not to rank 0. A collective is the
-- n-th communication kernel (is_communication, sql/metrics.sql) of one name in an iteration.
-- includes: metrics, windows
-- params: none

-- job_comm_kernels: the communication kernels of job `job_name`'s ranks inside an iteration, as
-- written, each numbered within its rank, iteration and name (seq: the n-th of that name).
-- args: job_name VARCHAR
-- outputs: rank BIGINT, run_id VARCHAR, world_size INTEGER, iteration INTEGER, name VARCHAR, seq BIGINT,
--          ts_ns BIGINT, dur_ns BIGINT, correlation UBIGINT
CREATE OR REPLACE TEMP MACRO job_comm_kernels(job_name) AS TABLE
SELECT j.rank::BIGINT AS rank, k.run_id, t.world_size::INTEGER AS world_size, k.iteration::INTEGER AS iteration,
       k.name, row_number() OVER (PARTITION BY k.run_id, k.iteration, k.name ORDER BY k.ts_ns) AS seq,
       k.ts_ns, k.dur_ns, k.correlation
FROM kernels k JOIN job_ranks j ON j.run_id = k.run_id JOIN traces t ON t.run_id = k.run_id
WHERE j.job = job_name AND k.iteration IS NOT NULL AND is_communication(k.name);

-- job_clock_offsets: one row per rank of job `job_name` that took part in a collective of at least
-- two ranks: how many (matched), its raw offset, uncertainty and the offset applied (ns; a rank's
-- clock minus the consensus).
-- args: job_name VARCHAR
-- outputs: rank BIGINT, matched BIGINT, raw_offset_ns DOUBLE, uncertainty_ns DOUBLE, offset_ns DOUBLE
CREATE OR REPLACE TEMP MACRO job_clock_offsets(job_name) AS TABLE
WITH c AS (
    SELECT rank, iteration, name, seq, ts_ns + dur_ns AS end_ns,
           count(*) OVER (PARTITION BY iteration, name, seq) AS ranks,
           (ts_ns + dur_ns) - min(ts_ns + dur_ns) OVER (PARTITION BY iteration, name, seq) AS rel_end_ns
    FROM job_comm_kernels(job_name)
), d AS (
    SELECT rank, rel_end_ns - median(rel_end_ns) OVER (PARTITION BY iteration, name, seq) AS diff_ns
    FROM c WHERE ranks >= 2
), o AS (
    SELECT rank, count(*) AS matched, median(diff_ns)::DOUBLE AS raw_offset_ns FROM d GROUP BY rank
), u AS (
    SELECT o.rank, o.matched, o.raw_offset_ns,
           greatest(1.4826 * median(abs(d.diff_ns - o.raw_offset_ns)), 1000.0)::DOUBLE AS uncertainty_ns
    FROM o JOIN d ON d.rank = o.rank GROUP BY o.rank, o.matched, o.raw_offset_ns
)
SELECT rank, matched, raw_offset_ns, uncertainty_ns,
       CASE WHEN abs(raw_offset_ns) > 3 * uncertainty_ns THEN raw_offset_ns ELSE 0.0 END AS offset_ns
FROM u;

-- job_aligned_comm_kernels: job_comm_kernels on the consensus clock: ts_ns is the kernel's start
-- minus its rank's applied offset (rounded to the ns), offset_ns that offset (0 where none).
-- args: job_name VARCHAR
-- outputs: rank BIGINT, run_id VARCHAR, world_size INTEGER, iteration INTEGER, name VARCHAR, seq BIGINT,
--          ts_ns BIGINT, dur_ns BIGINT, correlation UBIGINT, offset_ns DOUBLE
CREATE OR REPLACE TEMP MACRO job_aligned_comm_kernels(job_name) AS TABLE
SELECT k.rank, k.run_id, k.world_size, k.iteration, k.name, k.seq,
       k.ts_ns - round(coalesce(o.offset_ns, 0.0))::BIGINT AS ts_ns, k.dur_ns, k.correlation,
       coalesce(o.offset_ns, 0.0) AS offset_ns
FROM job_comm_kernels(job_name) k LEFT JOIN job_clock_offsets(job_name) o ON o.rank = k.rank;
