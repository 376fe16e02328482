-- What happened inside a selected time range of each timeline panel (Perfetto's area selection):
-- per run, event kind and name, the events overlapping [t0_ns, t1_ns), their time inside the range
-- (total_ns: each event clipped to the range) and self time (ops: the op's self_ns scaled by the
-- share of the op inside the range; other events have no children, so self = total).
-- One panel per entry of the parallel lists $run_ids, $t0s_ns, $t1s_ns (absolute trace ns) and
-- $steps: like its panel, only the events of that iteration (a run without stored iterations:
-- every event).
-- includes: none
-- params: $run_ids VARCHAR[], $t0s_ns BIGINT[], $t1s_ns BIGINT[], $steps BIGINT[]
--         (parallel lists: one entry a panel),
--         $max_depth INTEGER, $limit INTEGER (rows per run)
WITH p0 AS (
    SELECT unnest($run_ids) AS run_id, unnest($t0s_ns) AS t0_ns, unnest($t1s_ns) AS t1_ns,
           unnest($steps) AS step
), p AS (
    SELECT *, step IS NOT NULL AND EXISTS (SELECT 1 FROM iterations i WHERE i.run_id = p0.run_id)
           AS stepped
    FROM p0
), ev AS (
    SELECT p.run_id, 'op' AS kind, o.name, o.ts_ns, o.dur_ns, o.self_ns, p.t0_ns, p.t1_ns
    FROM ops o JOIN p ON o.run_id = p.run_id AND o.ts_ns < p.t1_ns AND o.ts_ns + o.dur_ns > p.t0_ns
                    AND (NOT p.stepped OR o.iteration = p.step)
    WHERE o.cat <> 'gpu_user_annotation' AND o.depth <= $max_depth
    UNION ALL
    SELECT p.run_id, l.api_kind, l.name, l.ts_ns, l.dur_ns, l.dur_ns, p.t0_ns, p.t1_ns
    FROM launches l JOIN p ON l.run_id = p.run_id AND l.ts_ns < p.t1_ns AND l.ts_ns + l.dur_ns > p.t0_ns
                    AND (NOT p.stepped OR l.iteration = p.step)
    UNION ALL
    SELECT p.run_id, 'kernel', k.name, k.ts_ns, k.dur_ns, k.dur_ns, p.t0_ns, p.t1_ns
    FROM kernels k JOIN p ON k.run_id = p.run_id AND k.ts_ns < p.t1_ns AND k.ts_ns + k.dur_ns > p.t0_ns
                    AND (NOT p.stepped OR k.iteration = p.step)
    UNION ALL
    SELECT p.run_id, m.kind, m.name, m.ts_ns, m.dur_ns, m.dur_ns, p.t0_ns, p.t1_ns
    FROM memops m JOIN p ON m.run_id = p.run_id AND m.ts_ns < p.t1_ns AND m.ts_ns + m.dur_ns > p.t0_ns
                    AND (NOT p.stepped OR m.iteration = p.step)
), clipped AS (
    SELECT run_id, kind, name, self_ns, dur_ns,
           least(ts_ns + dur_ns, t1_ns) - greatest(ts_ns, t0_ns) AS inside_ns
    FROM ev
)
SELECT run_id, kind, name, count(*) AS events, sum(inside_ns) AS total_ns,
       round(sum(CASE WHEN dur_ns > 0 THEN self_ns * inside_ns / dur_ns ELSE 0 END)) AS self_ns
FROM clipped
GROUP BY run_id, kind, name
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY sum(inside_ns) DESC, name) <= $limit
ORDER BY list_position($run_ids, run_id), total_ns DESC, name;
