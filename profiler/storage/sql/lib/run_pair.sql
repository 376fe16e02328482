-- Two runs compared name by name (the *_delta queries): each side's figures per iteration, and
-- whether a name shows up in one run only.
-- includes: none
-- params: none

-- per_iter_of: an aggregate: the sum of value / n_iter over the rows of run `side` (rows of the
-- other run add 0), so that with n_iter its run's iteration count it is that run's figure per
-- iteration.
-- args: run_id VARCHAR, side VARCHAR, value DOUBLE, n_iter BIGINT
-- outputs: DOUBLE
CREATE OR REPLACE TEMP MACRO per_iter_of(run_id, side, value, n_iter) AS
    sum(CASE WHEN run_id = side THEN value / n_iter ELSE 0 END);

-- presence: 'only in a' when run b has no calls of a name, 'only in b' when run a has none, else
-- 'both'.
-- args: calls_a DOUBLE, calls_b DOUBLE
-- outputs: VARCHAR
CREATE OR REPLACE TEMP MACRO presence(calls_a, calls_b) AS
    CASE WHEN calls_a = 0 THEN 'only in b' WHEN calls_b = 0 THEN 'only in a' ELSE 'both' END;
