"""Profile attention variants with torch.profiler; the shipped sample traces."""
