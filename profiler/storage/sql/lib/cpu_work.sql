-- Which CPU-side events are the program's own work: CPU ops and user annotations (record_function
-- ranges, the variant's own call label: their self time is Python work outside any op), but not
-- the ProfilerStep#N windows, which only mark the iterations.
-- includes: none
-- params: none

-- is_cpu_work: whether the op of this category and name is CPU work (above).
-- args: cat VARCHAR, name VARCHAR
-- outputs: BOOLEAN
CREATE OR REPLACE TEMP MACRO is_cpu_work(cat, name) AS
    cat IN ('cpu_op', 'user_annotation') AND name NOT LIKE 'ProfilerStep#%';
