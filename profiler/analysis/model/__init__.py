"""The model: GPUs and their SKUs, occupancy, tensor cores, kernel names and
families, counters' columns, the cost model's formulas. It reads no store.
"""
