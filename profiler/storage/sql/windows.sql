-- The metrics layer's first module: what an API call does, which kernels communicate, the
-- iteration windows of a run and how many it has. The store loads it first, then step_work.sql,
-- idle_causes.sql and metrics.sql (profiler/storage/metrics.py), each using what came before.
-- includes: none
-- params: none

-- api_category: what an API call does, by name: 'launch' | 'sync' | 'memcpy' | 'memset' | 'other'.
-- args: name VARCHAR
-- outputs: VARCHAR
CREATE OR REPLACE MACRO api_category(name) AS CASE
    WHEN name ILIKE '%launch%' THEN 'launch'
    WHEN name ILIKE '%synchronize%' THEN 'sync'
    WHEN name ILIKE '%memcpy%' THEN 'memcpy'
    WHEN name ILIKE '%memset%' THEN 'memset'
    ELSE 'other' END;

-- is_communication: whether a kernel, by name, is a communication kernel (NCCL/RCCL collectives,
-- NVLink multimem all-reduce). The same pattern is tensor_cores.COMMUNICATION (a test keeps the
-- two equal).
-- args: name VARCHAR
-- outputs: BOOLEAN
CREATE OR REPLACE MACRO is_communication(name) AS
    regexp_matches(name, '(?i)nccl|rccl|multimem|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all');

-- run_windows: the iteration windows of the selected runs (every run has at least one, the whole
-- trace); stored is false for the whole-trace window of a run without stored iterations (its
-- events carry no iteration number: they all belong to iteration 0).
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, iteration INTEGER, name VARCHAR, start_ns BIGINT, end_ns BIGINT,
--          stored BOOLEAN
CREATE OR REPLACE MACRO run_windows(ids) AS TABLE
SELECT i.run_id, i.iteration, i.name, i.start_ns, i.end_ns, true AS stored
FROM iterations i WHERE i.run_id IN (SELECT unnest(ids))
UNION ALL
SELECT t.run_id, 0, '(whole trace)', t.start_ns, t.end_ns, false
FROM traces t
WHERE t.run_id IN (SELECT unnest(ids)) AND t.start_ns IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM iterations i WHERE i.run_id = t.run_id);

-- run_iteration_counts: how many iterations each selected run has (at least 1) and whether it has
-- no stored ones (the whole trace is its iteration, so events outside every iteration count too).
-- Per-iteration tables divide by n_iter and keep events with an iteration, or all events when
-- whole (profiler/analysis/reads/sql/lib/iteration_rows.sql).
-- args: ids VARCHAR[]
-- outputs: run_id VARCHAR, n_iter BIGINT, whole BOOLEAN
CREATE OR REPLACE MACRO run_iteration_counts(ids) AS TABLE
SELECT run_id, count(*) AS n_iter, bool_and(NOT stored) AS whole
FROM run_windows(ids) GROUP BY run_id;
