-- Fallback iteration windows: the occurrences of the most repeated top-level CPU user annotation.
-- includes: none
-- params: none
WITH top_level AS (
    SELECT o.name, o.ts_ns, o.dur_ns
    FROM stage_ops o
    WHERE o.cat = 'user_annotation' AND o.depth = 0
), best AS (
    SELECT name FROM top_level GROUP BY name HAVING count(*) >= 2
    ORDER BY count(*) DESC, sum(dur_ns) DESC, name LIMIT 1
)
SELECT (row_number() OVER (ORDER BY ts_ns) - 1)::INTEGER AS iteration, name,
       ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
FROM top_level WHERE name IN (SELECT name FROM best)
ORDER BY ts_ns
