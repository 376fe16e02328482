"""How an amount reads in a sentence or a table cell: the one formatter of each unit.

`binary_size(n)`: bytes in binary units with one decimal ('512 B', '131.0 KiB', '3.0 MiB'), used
by the findings' sentences (copies per iteration, shared memory per block) and the kernel table's
launch configuration.
"""
from __future__ import annotations


def binary_size(n: float) -> str:
    """Bytes as B, KiB, MiB or GiB with one decimal (binary units)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"
