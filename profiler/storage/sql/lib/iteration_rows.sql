-- Events inside an iteration: what every per-iteration table counts. A run with iterations counts
-- the events that belong to one (an event's iteration column); a run without any counts all its
-- events as its one iteration, the whole trace (metrics.sql: run_iteration_counts).
-- includes: metrics, windows
-- params: none

-- iteration_rows: the rows of the event table `tbl` (kernels, memops, launches, launch_targets or
-- ops: any table with run_id and iteration) of the selected runs that lie inside an iteration,
-- each with its run's number of iterations n_iter (per-iteration figures divide by it).
-- args: tbl VARCHAR ('kernels', 'memops', 'launches', 'launch_targets', 'ops'), run_ids VARCHAR[]
-- outputs: the columns of tbl, n_iter BIGINT
CREATE OR REPLACE TEMP MACRO iteration_rows(tbl, run_ids) AS TABLE
SELECT e.*, n.n_iter
FROM query_table(tbl) e JOIN run_iteration_counts(run_ids) n ON n.run_id = e.run_id
WHERE n.whole OR e.iteration IS NOT NULL;
