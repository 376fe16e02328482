-- API calls, with the CPU iteration window each one starts in. CUPTI names a callback id it
-- cannot resolve 'INVALID' (flashinfer's FA3 runs make 7-9 such calls): that is no API the code
-- called, so it is stored as 'unnamed runtime call (cbid N)' (docs/analysis.md, "Engines").
-- includes: none
-- params: none (each staged row carries its run_id: a batch of one or more runs)
INSERT INTO launches
SELECT l.run_id,
       CASE WHEN l.name = 'INVALID'
            THEN 'unnamed runtime call (cbid ' || coalesce(CAST(l.cbid AS VARCHAR), 'unknown') || ')'
            ELSE l.name END,
       l.api_kind, l.cbid, l.pid, l.tid, l.ts_ns, l.dur_ns, l.correlation,
       l.external_id, CASE WHEN l.ts_ns < it.end_ns THEN it.iteration END
FROM stage_launches l
ASOF LEFT JOIN stage_iterations it ON it.run_id = l.run_id AND l.ts_ns >= it.start_ns
