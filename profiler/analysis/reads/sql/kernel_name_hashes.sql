-- The distinct kernel and copy names of each of the runs with their hash (sql/op_kernels.sql
-- returns the hash, so a million-event trace does not ship every name to Python): run_id,
-- kernel_hash, kernel. Many runs in one read (the cost model over a ranking's runs).
-- includes: none
-- params: $run_ids VARCHAR[]
SELECT DISTINCT run_id, hash(name) AS kernel_hash, name AS kernel FROM kernels WHERE run_id IN (SELECT unnest($run_ids))
UNION
SELECT DISTINCT run_id, hash(name), name FROM memops WHERE run_id IN (SELECT unnest($run_ids));
