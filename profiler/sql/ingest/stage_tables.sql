-- Staging tables of one ingest: exactly the columns the parser emits (profiler/trace.py COLUMNS).
CREATE TABLE kernels (
    name VARCHAR, device INTEGER, stream BIGINT, ts_ns BIGINT, dur_ns BIGINT,
    grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER,
    registers_per_thread INTEGER, shared_mem_bytes BIGINT, blocks_per_sm DOUBLE, warps_per_sm DOUBLE,
    est_occupancy_pct DOUBLE, correlation UBIGINT, external_id UBIGINT
);
CREATE TABLE memops (
    kind VARCHAR, name VARCHAR, device INTEGER, stream BIGINT, ts_ns BIGINT, dur_ns BIGINT,
    bytes UBIGINT, bandwidth_gbps DOUBLE, correlation UBIGINT, external_id UBIGINT
);
CREATE TABLE launches (
    name VARCHAR, api_kind VARCHAR, cbid INTEGER, pid VARCHAR, tid VARCHAR, ts_ns BIGINT,
    dur_ns BIGINT, correlation UBIGINT, external_id UBIGINT
);
CREATE TABLE ops (
    op_id BIGINT, cat VARCHAR, name VARCHAR, pid VARCHAR, tid VARCHAR, ts_ns BIGINT, dur_ns BIGINT,
    external_id UBIGINT
);
CREATE TABLE op_nest (op_id BIGINT, parent_id BIGINT, depth INTEGER, self_ns BIGINT);
