"""Trace bytes to checked events to columns: gzip, size limits, the event cutter, exact ns."""
