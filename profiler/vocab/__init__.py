"""The project's vocabulary: what the names in a trace mean, defined once and read by every layer."""
