"""Multi-rank jobs and parallel parsing: rank files, manifests, the job views,
chunks of a large file, tasks and where they run. Imports the store core.
"""
