"""Read the store (one query per sql/*.sql file) and compute what the pages say: occupancy, engines, roofline, diffs, findings."""
