"""The DuckDB store: schema and migrations, one-transaction ingest, the metrics layer it keeps per run, rename/delete, isolated ingest, multi-rank jobs."""
