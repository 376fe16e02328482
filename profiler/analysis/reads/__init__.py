"""Queries over the store (one query per sql/*.sql file), and their rows enriched
from the model: kernel details, op charges and prices, roofline points. Imports model/.
"""
