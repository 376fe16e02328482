-- The distinct kernel and copy names of one run with their hash (sql/op_kernels.sql returns the
-- hash, so a million-event trace does not ship every name to Python).
-- includes: none
-- params: $run_id VARCHAR
SELECT DISTINCT hash(name) AS kernel_hash, name AS kernel FROM kernels WHERE run_id = $run_id
UNION
SELECT DISTINCT hash(name), name FROM memops WHERE run_id = $run_id;
