"""Attention trace dashboard: profile attention variants, store their traces in DuckDB, explain them."""
