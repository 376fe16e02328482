"""A load on the GPU for a while: back-to-back bf16 GEMMs, so that a run captured meanwhile is
measured under another process's load (bench/gpu_issue38.sh: its record should show the other
process, and its clocks or power what the load did to them).

    python -m bench.gpu_load SECONDS
"""
from __future__ import annotations

import sys
import time

import torch


def main(seconds: float) -> int:
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end, calls = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()
        calls += 20
    print(f"load: {calls} GEMMs of 8192^3 bf16 in {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1])))
