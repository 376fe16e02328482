-- Each collective of a job across its ranks: the n-th kernel of one name in an iteration on every
-- rank is one collective. How far apart the ranks start it (skew) is how long the first rank to
-- arrive waits for the last; wait_us is the mean wait of all ranks (the last one waits 0).
-- Ranks' starts are compared on the job's consensus clock (lib/job_clock.sql: each rank's clock
-- offset, estimated from the collectives' ends, taken off).
-- A collective is a communication kernel (is_communication, sql/metrics.sql).
--
-- Its size, where the trace gives one: the innermost op around the kernel's launch call (same
-- thread) that carries a message (ops.in_msg_nelems: PyTorch's record_param_comms args, or a
-- nccl:* annotation's first input). bytes = max(elements in, elements out) x the element size:
-- the whole buffer, as NCCL's own benchmarks count it (an all-gather's output, a reduce-scatter's
-- input). n is the op's group size, else the rank's world size.
--   algbw_gbps  bytes / mean kernel time over the ranks (bytes per ns = GB/s). A rank that starts
--               early waits inside its kernel, so this is a lower bound of what the links moved.
--   busbw_gbps  algbw x a factor per collective that makes it comparable with the links' peak: the
--               bytes each rank must send or receive, relative to the buffer, in the optimal
--               (ring) algorithm. all-reduce 2(n-1)/n (a reduce-scatter then an all-gather, each
--               passing (n-1)/n of the buffer); all-gather, reduce-scatter and all-to-all (n-1)/n
--               (every rank gets or gives the n-1 parts it does not hold); broadcast, reduce and
--               send/receive 1 (the buffer crosses each link once). Other kinds: none.
-- includes: metrics, windows, job_clock
-- params: $job VARCHAR (the job's name)
WITH c AS (
    SELECT rank, run_id, world_size, iteration, name, ts_ns, dur_ns, correlation, seq,
           ts_ns - min(ts_ns) OVER () AS rel_ns  -- small numbers, so their mean stays exact
    FROM job_aligned_comm_kernels($job)
), msg AS (         -- each kernel's message: the innermost op with one around its launch
    SELECT c.run_id, c.correlation, o.collective, o.group_size, o.msg_dtype,
           greatest(o.in_msg_nelems, coalesce(o.out_msg_nelems, o.in_msg_nelems)) AS nelems
    FROM c JOIN launches l ON l.run_id = c.run_id AND l.correlation = c.correlation
    JOIN ops o ON o.run_id = l.run_id AND o.pid IS NOT DISTINCT FROM l.pid
              AND o.tid IS NOT DISTINCT FROM l.tid AND o.ts_ns <= l.ts_ns AND l.ts_ns < o.ts_ns + o.dur_ns
    WHERE o.in_msg_nelems IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY c.run_id, c.correlation ORDER BY o.ts_ns DESC, o.depth DESC) = 1
), sized AS (
    SELECT c.*, m.collective, coalesce(m.group_size, c.world_size) AS n,
           -- element size by type name, as PyTorch writes it ('Float', 'float', 'long int', 'c10::Half')
           m.nelems * CASE lower(regexp_replace(m.msg_dtype, '^(torch\.|c10::)', ''))
               WHEN 'double' THEN 8 WHEN 'float64' THEN 8 WHEN 'long' THEN 8 WHEN 'long int' THEN 8
               WHEN 'long long' THEN 8 WHEN 'int64' THEN 8 WHEN 'int64_t' THEN 8
               WHEN 'float' THEN 4 WHEN 'float32' THEN 4 WHEN 'int' THEN 4 WHEN 'int32' THEN 4
               WHEN 'half' THEN 2 WHEN 'float16' THEN 2 WHEN 'bfloat16' THEN 2 WHEN 'short' THEN 2
               WHEN 'short int' THEN 2 WHEN 'int16' THEN 2
               WHEN 'byte' THEN 1 WHEN 'char' THEN 1 WHEN 'signed char' THEN 1 WHEN 'unsigned char' THEN 1
               WHEN 'uint8' THEN 1 WHEN 'int8' THEN 1 WHEN 'bool' THEN 1
               WHEN 'float8_e4m3fn' THEN 1 WHEN 'float8_e5m2' THEN 1 END AS bytes
    FROM c LEFT JOIN msg m ON m.run_id = c.run_id AND m.correlation = c.correlation
), one AS (
    SELECT iteration, name, seq, count(*) AS ranks,
           min(ts_ns) AS first_start_ns, max(ts_ns) AS last_start_ns,
           arg_max(rank, ts_ns) AS last_rank, avg(dur_ns) AS mean_dur_ns, max(rel_ns) - avg(rel_ns) AS wait_ns,
           any_value(collective) AS collective, max(n) AS n, max(bytes) AS bytes
    FROM sized GROUP BY iteration, name, seq
), bw AS (
    SELECT *, bytes / nullif(mean_dur_ns, 0) AS algbw_gbps,
           CASE WHEN regexp_matches(lower(collective), 'all_?reduce') THEN 2.0 * (n - 1) / n
                WHEN regexp_matches(lower(collective), 'all_?gather|reduce_?scatter|all_?to_?all') THEN (n - 1) / n
                WHEN regexp_matches(lower(collective), '^(broadcast|reduce|send|recv)') THEN 1.0
           END AS bus_factor
    FROM one
)
SELECT iteration, name, seq, ranks, last_rank,
       (last_start_ns - first_start_ns) / 1e3 AS skew_us,
       wait_ns / 1e3 AS wait_us,
       mean_dur_ns / 1e3 AS mean_dur_us,
       collective, n AS group_size, bytes, algbw_gbps, algbw_gbps * bus_factor AS busbw_gbps
FROM bw
ORDER BY iteration, first_start_ns, name, seq
