"""The command line: python -m profiler <command>."""
