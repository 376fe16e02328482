"""Write a Kineto trace shaped like a `with_stack=True` capture (plain .json), for the ingest bench.

The shape of a real ROCm capture of a diffusion transformer recorded with `with_stack=True`:
56 % python_function events, 16 % flow events (`ac2g`, four `f` for each `s`), 13 % runtime
calls, 11 % cpu_op events with ~7.6 args each, 3 % kernels; ~261 bytes per event. Each unit of
98 events is 11 ops on the CPU thread, each under a stack of Python frames (56 frames in all),
holding 13 runtime calls of which 3 launch a kernel on a GPU stream, each launch linked to its
kernel by one `s` and four `f` flow events with the launch's correlation id. The events of a
ProfilerStep window are written one after the other; nothing is random, so a size gives the same
file every time. Usage: python -m bench.make_stack_trace OUT.json [--mb 500]
"""
import argparse
from pathlib import Path

T0 = 1_733_000_000_000_000  # µs, an epoch clock
SITE = "/opt/conda/envs/py_3.10/lib/python3.10/site-packages/"
PY_FILES = ("diffusers/models/transformers/transformer_flux.py", "torch/nn/modules/module.py",
            "diffusers/models/attention_processor.py", "torch/nn/functional.py",
            "diffusers/models/normalization.py", "torch/_tensor.py")
OPS = ("aten::linear", "aten::addmm", "aten::layer_norm", "aten::native_layer_norm", "aten::gelu",
       "aten::scaled_dot_product_attention", "aten::_efficient_attention_forward", "aten::mul",
       "aten::add", "aten::view", "aten::copy_")
KERNELS = ("Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1",
           "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
           "attn_fwd_kernel_bf16_causal_hdim64")
UNIT_US = 400  # one unit's span on the CPU thread


def _unit(u: int, out: list[str], ids: list[int]) -> None:
    """Append unit `u`'s 98 events (as JSON text) to `out`; ids = [next python id, next correlation]."""
    base = T0 + 1_000 + u * UNIT_US
    runtime_left = 13
    launches = 0
    for k in range(11):
        t = base + k * 36
        depth = 5 if k < 10 else 6  # 10 x 5 + 1 x 6 = 56 frames
        parent = 0
        for d in range(depth):
            ids[0] += 1
            f = PY_FILES[(k + d) % len(PY_FILES)]
            out.append(f'{{"ph": "X", "cat": "python_function", "name": "{SITE}{f}({100 + 37 * d + k}): forward", '
                       f'"pid": 4242, "tid": 4242, "ts": {t + d}.{k:03d}, "dur": {34 - 2 * d}.500, '
                       f'"args": {{"Python parent id": {parent}, "Python id": {ids[0]}, "Python thread": 0}}}}')
            parent = ids[0]
        ts = t + depth
        ext = u * 11 + k + 1
        out.append(f'{{"ph": "X", "cat": "cpu_op", "name": "{OPS[k]}", "pid": 4242, "tid": 4242, '
                   f'"ts": {ts}.250, "dur": {33 - 2 * depth}.000, "args": {{"External id": {ext}, '
                   f'"Record function id": 0, "Sequence number": {ext}, "Fwd thread id": 0, '
                   f'"Input Dims": [[2, 4096, 3072], [3072]], "Input type": ["c10::BFloat16", "c10::BFloat16"], '
                   f'"Ev Idx": {ext * 9}, "Concrete Inputs": ["", ""]}}}}')
        calls = 2 if k < 2 else 1  # 13 runtime calls in 11 ops
        for c in range(calls):
            runtime_left -= 1
            rts = ts + 1 + c * 8
            ids[1] += 1
            corr = ids[1]
            launch = launches < 3 and k in (1, 5, 9) and c == 0
            name = "hipLaunchKernel" if launch else ("hipGetDevice", "hipStreamIsCapturing")[c]
            out.append(f'{{"ph": "X", "cat": "cuda_runtime", "name": "{name}", "pid": 4242, "tid": 4242, '
                       f'"ts": {rts}.125, "dur": 6.375, "args": {{"External id": {ext}, "cbid": 0, '
                       f'"correlation": {corr}}}}}')
            if not launch:
                continue
            launches += 1
            kts = rts + 20
            out.append(f'{{"ph": "s", "id": {corr}, "pid": 4242, "tid": 4242, "ts": {rts}.125, '
                       f'"cat": "ac2g", "name": "ac2g"}}')
            out.append(f'{{"ph": "X", "cat": "kernel", "name": "{KERNELS[launches - 1]}", "pid": 2, "tid": 7, '
                       f'"ts": {kts}.000, "dur": 11.250, "args": {{"External id": {ext}, "device": 0, '
                       f'"stream": 7, "correlation": {corr}, "kind": "Dispatch Kernel", "grid": [1024, 1, 1], '
                       f'"block": [256, 1, 1]}}}}')
            for _ in range(4):
                out.append(f'{{"ph": "f", "id": {corr}, "pid": 2, "tid": 7, "ts": {kts}.000, '
                           f'"cat": "ac2g", "name": "ac2g", "bp": "e"}}')
    assert runtime_left == 0 and launches == 3


def make_stack_trace(path, min_bytes: int, units_per_step: int = 2_000) -> dict:
    """Write a trace of at least min_bytes to path; return its size and event count."""
    events = 0
    ids = [0, 1_000_000]  # correlation ids of a long-running process: above int16 (HTA downcasts by range)
    with open(path, "w") as out:
        written = out.write('{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n')
        u = 0
        first = True
        while written < min_bytes:
            step = u // units_per_step
            chunk: list[str] = [(
                f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 4242, '
                f'"tid": 4242, "ts": {T0 + 1_000 + step * units_per_step * UNIT_US - 1}.000, '
                f'"dur": {units_per_step * UNIT_US}.000, "args": {{"External id": 0}}}}')]
            for _ in range(units_per_step):
                _unit(u, chunk, ids)
                u += 1
            written += out.write(("" if first else ",\n") + ",\n".join(chunk))
            events += len(chunk)
            first = False
        written += out.write('\n], "traceName": "bench_stack_trace"}\n')
    return {"path": str(path), "bytes": written, "events": events, "units": u}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mb", type=float, default=500, help="minimum size, MB (10^6 bytes)")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(make_stack_trace(args.out, int(args.mb * 1e6)))


if __name__ == "__main__":
    main()
