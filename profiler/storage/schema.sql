-- Store schema, version 10 (10: GPU work belongs to the step that launched it, else to none; 9: counters keep dram_bytes, occupancy_note and device_check; gpu_ceilings; 8: job summaries; 7: traces keep mode, kv_heads, kv_len, window, varlen; 6: counter_reports, kernel_counters; 5: lane_names; 4: every table's run id column is run_id; 2: ops keep record_shapes' input dims, types and concrete values; 3: ops keep collectives' sizes). Times are integer nanoseconds (ts_ns relative to nothing: the
-- trace's own clock, exactly as written, microseconds * 1000 with no float in between).
-- Every table is keyed by run_id; a trace and all its rows land in one transaction.
-- includes: none
-- params: none

CREATE TABLE IF NOT EXISTS store_meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS traces (
    run_id            VARCHAR PRIMARY KEY,  -- first 16 hex digits of sha256(uncompressed JSON bytes)
    name              VARCHAR NOT NULL,     -- file name (uploads) or a run label (captures)
    source            VARCHAR NOT NULL,     -- 'captured' | 'uploaded'
    added_at          TIMESTAMP NOT NULL,   -- UTC
    size_bytes        BIGINT NOT NULL,      -- uncompressed JSON size
    gpu_name          VARCHAR,              -- deviceProperties[0].name (or run metadata)
    device_properties JSON,                 -- deviceProperties list as written
    torch_version     VARCHAR,
    cuda_version      VARCHAR,              -- CUDA runtime version
    cudnn_version     VARCHAR,
    driver_version    VARCHAR,              -- CUDA driver version
    rank              INTEGER,              -- distributedInfo.rank
    world_size        INTEGER,              -- distributedInfo.world_size
    events            BIGINT NOT NULL,      -- events in the file (all phases)
    kernels           BIGINT NOT NULL,      -- kernel events stored
    skipped_events    BIGINT NOT NULL,      -- events of the wrong type, skipped
    start_ns          BIGINT,               -- first event start
    end_ns            BIGINT,               -- last event end
    -- captured runs (from the trace's top-level "attention_run" object); NULL for uploads
    variant           VARCHAR,
    batch             INTEGER,
    heads             INTEGER,
    seq_len           INTEGER,
    head_dim          INTEGER,
    dtype             VARCHAR,
    causal            BOOLEAN,
    cold              BOOLEAN,              -- first call of a fresh shape, before any warm-up
    mode              VARCHAR,              -- 'prefill' | 'decode' | 'train' (captured before modes: 'prefill')
    kv_heads          INTEGER,              -- K/V heads (GQA/MQA: fewer than heads; before modes: heads)
    kv_len            INTEGER,              -- keys per sequence (decode: the KV cache; before modes: seq_len)
    "window"          INTEGER,              -- sliding window in keys; NULL: none
    varlen            VARCHAR,              -- packed sequence lengths, comma-separated; NULL: not packed
    run_meta          JSON                  -- the whole "attention_run" object
);

CREATE TABLE IF NOT EXISTS iterations (
    run_id     VARCHAR NOT NULL,
    iteration  INTEGER NOT NULL,            -- 0-based order in the trace
    name       VARCHAR NOT NULL,            -- e.g. 'ProfilerStep#5'
    start_ns   BIGINT NOT NULL,
    end_ns     BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS kernels (
    run_id               VARCHAR NOT NULL,
    name                 VARCHAR NOT NULL,
    device               INTEGER,
    stream               BIGINT,
    ts_ns                BIGINT NOT NULL,
    dur_ns               BIGINT NOT NULL,
    grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
    block_x INTEGER, block_y INTEGER, block_z INTEGER,
    registers_per_thread INTEGER,
    shared_mem_bytes     BIGINT,            -- static + dynamic, per block
    blocks_per_sm        DOUBLE,
    warps_per_sm         DOUBLE,
    est_occupancy_pct    DOUBLE,            -- Kineto's static estimate, as reported
    correlation          UBIGINT,
    external_id          UBIGINT,
    iteration            INTEGER            -- NULL when outside every iteration
);

CREATE TABLE IF NOT EXISTS memops (            -- gpu_memcpy and gpu_memset
    run_id          VARCHAR NOT NULL,
    kind            VARCHAR NOT NULL,        -- 'memcpy' | 'memset'
    name            VARCHAR NOT NULL,        -- e.g. 'Memcpy DtoD (Device -> Device)'
    device          INTEGER,
    stream          BIGINT,
    ts_ns           BIGINT NOT NULL,
    dur_ns          BIGINT NOT NULL,
    bytes           UBIGINT,
    bandwidth_gbps  DOUBLE,                  -- as reported ('memory bandwidth (GB/s)')
    correlation     UBIGINT,
    external_id     UBIGINT,
    iteration       INTEGER
);

CREATE TABLE IF NOT EXISTS launches (          -- every runtime / driver API call
    run_id       VARCHAR NOT NULL,
    name         VARCHAR NOT NULL,           -- cudaLaunchKernel, cuLaunchKernelEx, hipLaunchKernel, ...
    api_kind     VARCHAR NOT NULL,           -- 'runtime' | 'driver'
    cbid         INTEGER,                    -- CUPTI callback id (ROCm: cid)
    pid          VARCHAR,
    tid          VARCHAR,
    ts_ns        BIGINT NOT NULL,
    dur_ns       BIGINT NOT NULL,
    correlation  UBIGINT,
    external_id  UBIGINT,
    iteration    INTEGER
);

CREATE TABLE IF NOT EXISTS ops (               -- cpu_op, user_annotation, gpu_user_annotation (+ python_function, opt-in)
    run_id       VARCHAR NOT NULL,
    op_id        BIGINT NOT NULL,            -- unique within a trace
    parent_id    BIGINT,                     -- enclosing op on the same thread (or GPU stream); NULL at top
    depth        INTEGER NOT NULL,           -- 0 at top level
    cat          VARCHAR NOT NULL,
    name         VARCHAR NOT NULL,
    pid          VARCHAR,
    tid          VARCHAR,
    ts_ns        BIGINT NOT NULL,
    dur_ns       BIGINT NOT NULL,
    self_ns      BIGINT NOT NULL,            -- dur_ns minus the children's dur_ns
    external_id  UBIGINT,
    iteration    INTEGER,
    input_dims      VARCHAR,                 -- record_shapes: 'Input Dims' as JSON text, e.g. [[16,559,1024],[]]
    input_types     VARCHAR,                 -- 'Input type' as JSON text, e.g. ["c10::BFloat16","Scalar"]
    concrete_inputs VARCHAR,                 -- 'Concrete Inputs' as JSON text, e.g. ["","","0.","True"]
    -- collectives (schema version 3): PyTorch's record_param_comms args, or a nccl:* annotation's
    -- first input (Input Dims / Input type); NULL on every other op
    collective     VARCHAR,                  -- 'allreduce', 'all_to_all', ... as written
    in_msg_nelems  UBIGINT,                  -- elements in / out of this rank
    out_msg_nelems UBIGINT,
    msg_dtype      VARCHAR,                  -- 'Float', 'float', 'BFloat16', ... as written
    group_size     INTEGER                   -- ranks in the process group
);

-- What each API call launched: the kernel or copy with the same correlation id.
CREATE OR REPLACE VIEW launch_targets AS
SELECT l.run_id, l.name AS api, l.api_kind, l.ts_ns AS api_ts_ns, l.dur_ns AS api_dur_ns,
       l.correlation, l.iteration, g.kind AS target_kind, g.name AS target_name,
       g.ts_ns AS target_ts_ns, g.dur_ns AS target_dur_ns
FROM launches l
JOIN (
    SELECT run_id, 'kernel' AS kind, name, ts_ns, dur_ns, correlation FROM kernels
    UNION ALL
    SELECT run_id, kind, name, ts_ns, dur_ns, correlation FROM memops
) g ON g.run_id = l.run_id AND g.correlation = l.correlation;

CREATE TABLE IF NOT EXISTS memory_events (     -- '[memory]' instants (captured with profile_memory=True)
    run_id                VARCHAR NOT NULL,
    event_idx             BIGINT NOT NULL,     -- order in the trace, 0-based (ties in time stay ordered)
    ts_ns                 BIGINT NOT NULL,
    device_type           INTEGER,             -- 'Device Type': 0 CPU, 1 CUDA (PyTorch's DeviceType)
    device                INTEGER,             -- 'Device Id' (-1 for the CPU)
    addr                  UBIGINT,             -- 'Addr' of the block
    change_bytes          BIGINT,              -- 'Bytes': + allocated, - freed
    total_allocated_bytes BIGINT,              -- 'Total Allocated' on that device just after the event
    total_reserved_bytes  BIGINT,              -- 'Total Reserved' (the caching allocator's segments)
    pid                   VARCHAR,
    tid                   VARCHAR,
    op_id                 BIGINT,              -- the CPU op that made it (see sql/ingest/insert_memory_events.sql)
    op_name               VARCHAR,
    op_input_dims         VARCHAR,             -- that op's 'Input Dims' as JSON text, when shapes were recorded
    iteration             INTEGER              -- NULL when outside every iteration
);

CREATE TABLE IF NOT EXISTS lane_names (        -- the trace's metadata ('M') events that name its lanes (schema version 5)
    run_id  VARCHAR NOT NULL,
    kind    VARCHAR NOT NULL,                  -- 'thread' | 'process' | 'process_labels'
    pid     VARCHAR,                           -- CPU: the process id; GPU: the device index
    tid     VARCHAR,                           -- CPU: the thread id; GPU: the stream; NULL for a process
    name    VARCHAR                            -- as written, trimmed, e.g. 'thread 1262 (pt_autograd_0)', 'GPU 0'
);

-- The completeness verdict's findings, computed at ingest (schema version 11;
-- profiler/storage/completeness.py, sql/completeness.sql): one row per check that found something,
-- and one 'checked' row per run, so that a whole trace is told from one not checked yet.
CREATE TABLE IF NOT EXISTS stored_completeness (
    run_id    VARCHAR NOT NULL,
    iteration INTEGER,                         -- the step the finding is about; NULL: the whole run
    reason    VARCHAR NOT NULL,                -- a check's name (docs/analysis.md, "Completeness"), or 'checked'
    count     BIGINT,                          -- what it found (events, calls; step_one_event: µs)
    of_count  BIGINT,                          -- what that is counted among
    expected  BOOLEAN                          -- a note of what every trace holds, not damage
);

-- Hardware counters from Nsight Compute, attached to a stored run (schema version 6;
-- profiler/storage/counters.py). One row per run that has them:
CREATE TABLE IF NOT EXISTS counter_reports (
    run_id        VARCHAR PRIMARY KEY,
    source        VARCHAR NOT NULL,          -- the export's file name
    attached_at   TIMESTAMP NOT NULL,        -- UTC; part of the run's stamp (kept results are recomputed)
    ncu_seconds   DOUBLE,                    -- wall seconds the capture spent under ncu (never in the run's timings); NULL for an import
    report_kernels INTEGER NOT NULL,         -- kernel rows in the export
    matched       INTEGER NOT NULL,          -- of them, matched to a launch of the run
    unmatched     JSON NOT NULL,             -- [{"id", "kernel", "grid", "block"}] of the rows that matched no launch
    device_check  VARCHAR                    -- 'same GPU: …' or 'cannot tell: …' (schema 9; another GPU's report is refused)
);

-- One row per matched launch: the launch (run_id, name, ts_ns as in kernels) and what ncu read.
CREATE TABLE IF NOT EXISTS kernel_counters (
    run_id                        VARCHAR NOT NULL,
    name                          VARCHAR NOT NULL,   -- kernels.name of the matched launch
    ts_ns                         BIGINT NOT NULL,    -- kernels.ts_ns of the matched launch
    report_id                     INTEGER NOT NULL,   -- the row's ID in the export
    ncu_duration_ns               DOUBLE,   -- gpu__time_duration.sum: the launch as replayed under ncu
    occupancy_achieved_pct        DOUBLE,   -- sm__warps_active.avg.pct_of_peak_sustained_active
    occupancy_theoretical_ncu_pct DOUBLE,   -- sm__maximum_warps_per_active_cycle_pct
    sm_throughput_pct             DOUBLE,   -- sm__throughput.avg.pct_of_peak_sustained_elapsed
    dram_throughput_pct           DOUBLE,   -- gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
    l2_throughput_pct             DOUBLE,   -- lts__throughput.avg.pct_of_peak_sustained_elapsed
    tensor_pipe_active_pct        DOUBLE,   -- sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
    registers_per_thread          INTEGER,  -- launch__registers_per_thread
    local_load_instructions       DOUBLE,   -- smsp__inst_executed_op_local_ld.sum: warp instructions (spills, local arrays)
    local_store_instructions      DOUBLE,   -- smsp__inst_executed_op_local_st.sum
    limit_registers               INTEGER,  -- launch__occupancy_limit_*: blocks per SM each resource allows
    limit_shared_mem              INTEGER,
    limit_warps                   INTEGER,
    limit_blocks                  INTEGER,
    limit_barriers                INTEGER,
    ncu_limiter                   VARCHAR,  -- the resources allowing the fewest blocks, e.g. 'registers and shared memory'
    dram_bytes                    DOUBLE,   -- dram__bytes.sum (schema 9): bytes read and written in DRAM
    occupancy_note                VARCHAR   -- why achieved is above theoretical, or that theoretical was derived (schema 9)
);

-- Measured ceilings of a GPU under one software stack (schema version 9; profiler/capture/ceilings.py,
-- profiler/storage/ceilings.py): what its GEMMs and its memory really sustain, measured once and kept.
-- One row per (gpu_name, stack, what): what = 'gemm_bf16' | 'gemm_fp16' | 'gemm_fp8' (TFLOP/s) |
-- 'hbm_read' | 'hbm_copy' (TB/s).
CREATE TABLE IF NOT EXISTS gpu_ceilings (
    gpu_name      VARCHAR NOT NULL,          -- as torch names the device, e.g. 'NVIDIA H200'
    stack         VARCHAR NOT NULL,          -- 'driver 580.159.04; torch 2.11.0+cu130; CUDA 13.0; cuDNN 91900'
    what          VARCHAR NOT NULL,
    value         DOUBLE NOT NULL,           -- TFLOP/s for a GEMM, TB/s for memory: the best over the sweep
    unit          VARCHAR NOT NULL,          -- 'TFLOP/s' | 'TB/s'
    device        VARCHAR NOT NULL,          -- 'cuda' (a CPU measurement is never stored as a GPU's)
    measured_at   TIMESTAMP NOT NULL,        -- UTC
    detail        JSON NOT NULL,             -- every shape or size tried, with its value and spread
    PRIMARY KEY (gpu_name, stack, what)
);

-- A job's summary (schema version 8): what `python -m profiler job NAME` and the job page show,
-- computed once when the job is ingested, by the same queries (profiler/analysis/reads/sql/job_*.sql)
-- over its ranks' Parquet files, so that reading a job of a thousand ranks does not scan them
-- again (profiler/storage/jobs/job_summary.py). job_summaries: one row per job whose summary is kept,
-- with its stamp (a digest of the manifest and of the definitions; a summary of another stamp is
-- out of date and never read). The other tables: the job's name, pos (the row's place in the
-- query's order), then the query's own columns.
CREATE TABLE IF NOT EXISTS job_summaries (
    job        VARCHAR PRIMARY KEY,
    stamp      VARCHAR NOT NULL,
    written_at TIMESTAMP NOT NULL   -- UTC
);
CREATE TABLE IF NOT EXISTS job_summary_iterations (  -- sql/job_rank_iterations.sql
    job VARCHAR NOT NULL, pos BIGINT NOT NULL,
    rank BIGINT, iteration INTEGER, iteration_name VARCHAR, run_id VARCHAR,
    step_us DOUBLE, gpu_busy_us DOUBLE, carried_us DOUBLE, gpu_idle_us DOUBLE, collective_us DOUBLE,
    gpu_work_us DOUBLE  -- schema 11
);
CREATE TABLE IF NOT EXISTS job_summary_waits (  -- sql/job_rank_waits.sql
    job VARCHAR NOT NULL, pos BIGINT NOT NULL,
    rank BIGINT, iteration INTEGER, collectives BIGINT, arrived_last BIGINT,
    wait_us DOUBLE, late_us DOUBLE, caused_wait_us DOUBLE
);
CREATE TABLE IF NOT EXISTS job_summary_collectives (  -- sql/job_collectives.sql
    job VARCHAR NOT NULL, pos BIGINT NOT NULL,
    iteration INTEGER, name VARCHAR, seq BIGINT, ranks BIGINT, last_rank BIGINT,
    skew_us DOUBLE, wait_us DOUBLE, mean_dur_us DOUBLE, collective VARCHAR, group_size INTEGER,
    bytes HUGEINT, algbw_gbps DOUBLE, busbw_gbps DOUBLE
);
CREATE TABLE IF NOT EXISTS job_summary_clock (  -- sql/job_clock.sql
    job VARCHAR NOT NULL, pos BIGINT NOT NULL,
    rank BIGINT, matched BIGINT, offset_us DOUBLE, uncertainty_us DOUBLE, applied_us DOUBLE,
    impossible BIGINT, worst_excess_us DOUBLE
);
