"""Tensor cores or CUDA cores, and math precision, from a kernel's name.

`classify(name)` applies the ordered rules in `RULES` (first match wins) and returns a
`MathClass`: which engine does the math ('tensor core', 'CUDA core' or 'unknown'), the math
precision where the name tells ('fp32', 'tf32', 'bf16', 'fp16', 'fp8', 'int8', 'fp64'), what
kind of kernel it is ('gemm', 'attention', 'conv', 'communication', 'other') and the rule that
decided, so a page can show its evidence. The rules, with examples, are in `docs/analysis.md`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import pandas as pd

TENSOR, CUDA, UNKNOWN = "tensor core", "CUDA core", "unknown"


@dataclass(frozen=True)
class MathClass:
    engine: str               # 'tensor core' | 'CUDA core' | 'unknown'
    precision: str | None     # 'fp32' | 'tf32' | 'bf16' | 'fp16' | 'fp16/bf16' | 'fp8' | 'int8' |
                              # 'fp64' | None
    op: str                   # 'gemm' | 'attention' | 'conv' | 'communication' | 'other'
    rule: str                 # the rule that decided (see RULES)


# Precision tokens, most specific first ('bf16' before 'f16', 'tf32' before 'f32').
_TOKENS = (
    ("fp8", r"fp8|e4m3|e5m2"), ("bf16", r"bf16|bfloat16"), ("tf32", r"tf32"),
    ("fp16", r"fp16|f16|half|(?<![a-z])h(?=884|1688|16816)|hgemm"),
    ("int8", r"int8|(?<![a-z])i8|imma"), ("fp64", r"f64|dgemm|double"),
    ("fp32", r"f32|fp32|float|sgemm|scudnn|ffma"),
)
_CONV = re.compile(r"conv|cudnn|fprop|dgrad|wgrad|winograd|implicit_gemm", re.I)
_NVJET = {"h": "fp16", "t": "bf16", "e": "fp8", "s": "tf32"}
_TENSILE = {"S": "fp32", "H": "fp16", "B": "bf16", "D": "fp64", "I8": "int8", "F8": "fp8"}


def precision_from_tokens(name: str) -> str | None:
    """The first precision whose token appears in the (lower-cased) name."""
    lowered = name.lower()
    for precision, pattern in _TOKENS:
        if re.search(pattern, lowered):
            return precision
    return None


def _op(name: str, default: str = "gemm") -> str:
    return "conv" if _CONV.search(name) else default


def _triton(name: str) -> MathClass:
    if re.match(r"triton_(poi|per|red)_", name):
        return MathClass(CUDA, None, "other", "triton pointwise/reduction")
    op = "attention" if "attention" in name else "gemm" if re.search(r"_(mm|bmm|addmm)", name) else "other"
    return MathClass(UNKNOWN, None, op, "triton (engine depends on tl.dot and dtype)")


def _attention(name: str) -> MathClass:
    precision = precision_from_tokens(name)
    if precision == "fp32" and re.search(r"sm(50|70|75)", name):
        return MathClass(CUDA, "fp32", "attention", "fmha fp32 before sm80 (SIMT)")
    if precision == "fp16" and name.startswith("cudnn_generated"):
        precision = "fp16/bf16"  # cuDNN's generated SDPA kernels say f16 for bf16 inputs too
    return MathClass(TENSOR, precision, "attention", "fused attention")


def _nvjet(name: str) -> MathClass:
    types = re.match(r"nvjet_(?:sm\d+_)?([a-z])([a-z])([a-z])_", name)
    precision = _NVJET.get(types.group(1)) if types else None
    return MathClass(TENSOR, precision, "gemm", "cuBLAS nvjet (wgmma)")


def _xmma(name: str) -> MathClass:
    if "tf32" in name:
        return MathClass(TENSOR, "tf32", _op(name), "xmma tf32")
    if "ffma" in name or "f32f32_f32f32_f32" in name:
        return MathClass(CUDA, "fp32", _op(name), "xmma fp32 (ffma)")
    return MathClass(TENSOR, precision_from_tokens(name), _op(name), "xmma")


def _tensile(name: str) -> MathClass:
    types = re.search(r"_(I8|F8|[SHBD])[A-Z0-9]*_", name)
    precision = _TENSILE.get(types.group(1)) if types else None
    if re.search(r"_MI\d+x\d+x\d+", name):
        return MathClass(TENSOR, precision, "gemm", "ROCm Tensile MFMA (matrix cores)")
    return MathClass(CUDA, precision, "gemm", "ROCm Tensile without MFMA")


def _mma(name: str) -> MathClass:
    precision = precision_from_tokens(name)
    if precision in (None, "fp32") and re.search(r"s(1688|16816|16832)", name):
        precision = "tf32"  # fp32 data through an Ampere+ MMA shape is TF32
    return MathClass(TENSOR, precision, _op(name), "tensor-core MMA marker")


def _simt(name: str) -> MathClass:
    op = "conv" if _CONV.search(name) or "convolve" in name else "gemm"
    return MathClass(CUDA, precision_from_tokens(name) or "fp32", op, "SIMT GEMM/conv (FFMA)")


def _fixed(engine: str, op: str, rule: str) -> Callable[[str], MathClass]:
    return lambda name: MathClass(engine, None, op, rule)


RULES: tuple[tuple[str, Callable[[str], MathClass]], ...] = (
    (r"^triton_|triton", _triton),
    (r"flash_fwd|flash_bwd|flash::|flash_attn|fmha|sdpa|attentionkernel|attention_kernel", _attention),
    (r"^nvjet_", _nvjet),
    (r"xmma", _xmma),
    (r"^cijk_", _tensile),
    (r"simt|sgemm|dgemm|hgemm|scudnn|(?<![a-z])(gemv|gemmsn_|gemmk1_|dot_kernel)|convolve_sgemm"
     r"|winograd|wgrad_alg\d_engine|dgrad_engine|im2col", _simt),
    (r"[hsi](884|1688|16816|8816|16832|1684)|tensorop|wgmma|gmma|hmma|imma|_xdl|mfma|wmma", _mma),
    (r"^nccl|nccl", _fixed(CUDA, "communication", "NCCL collective")),
)
_COMPILED = tuple((re.compile(p, re.I), f) for p, f in RULES)


def classify(name: str) -> MathClass:
    """Classify one kernel by name; kernels with no matrix-math marker are CUDA-core 'other'."""
    for pattern, decide in _COMPILED:
        if pattern.search(name):
            return decide(name)
    return MathClass(CUDA, None, "other", "no matrix-math marker (elementwise, reduction, copy)")


def classify_frame(kernels: pd.DataFrame, name_column: str = "name") -> pd.DataFrame:
    """`kernels` plus columns tc_engine, tc_precision, tc_op, tc_rule (one classify per name)."""
    names = kernels[name_column].drop_duplicates()
    columns = ["tc_engine", "tc_precision", "tc_op", "tc_rule"]
    rows = [list(classify(n).__dict__.values()) for n in names]
    table = pd.DataFrame(rows, index=names.to_numpy(), columns=columns)
    return kernels.join(table, on=name_column)
