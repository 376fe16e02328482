-- The distinct kernel and copy names of the selected runs with their hash (sql/op_kernels.sql
-- returns the hash, so a million-event trace does not ship every name to Python).
-- params: $run_ids VARCHAR[]
SELECT DISTINCT hash(name) AS kernel_hash, name AS kernel FROM kernels WHERE run_id IN (SELECT unnest($run_ids))
UNION
SELECT DISTINCT hash(name), name FROM memops WHERE run_id IN (SELECT unnest($run_ids));
