"""Which engine does a kernel's work, and in what precision, from its name (NVIDIA and AMD).

`classify(name, vendor)` applies the ordered rules in `RULES` (first match wins) and returns a
`MathClass`: the engine, the math precision where the name tells ('fp32', 'tf32', 'bf16', 'fp16',
'fp16/bf16', 'fp8', 'fp4', 'int8', 'fp64'), the kind of kernel ('gemm', 'attention', 'conv',
'communication', 'copy', 'other') and the rule that decided, so a page can show its evidence.

Engines: matrix units are **tensor cores** on NVIDIA (HMMA/IMMA, xmma, wgmma, tcgen05) and
**matrix cores** on AMD (MFMA/xdlops); everything else runs on the vector units, **CUDA cores**
on NVIDIA and the **vector ALUs** on AMD. `communication` (NCCL/RCCL collectives, NVLink multimem)
and `copy` (memcpy/memset) are engines of their own. Where the name gives no evidence the engine
is **unknown**: we say so rather than guess. An AMD kernel is never called a CUDA-core kernel:
the vendor comes from the run's GPU name, else from vendor-only name markers (`vendor_of`); with
neither, the generic 'matrix unit' / 'vector unit' are used. The rules are in `docs/analysis.md`.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from profiler.analysis.model import kernel_names
from profiler.vocab import attention

if TYPE_CHECKING:  # pandas loads only where a frame is classified
    import pandas as pd

TENSOR, MATRIX_AMD, MATRIX_ANY = "tensor core", "matrix core", "matrix unit"
CUDA, VECTOR_AMD, VECTOR_ANY = "CUDA core", "vector ALU", "vector unit"
COMM, COPY, UNKNOWN = "communication", "copy", "unknown"
NVIDIA, AMD = "nvidia", "amd"
MATRIX_ENGINES = (TENSOR, MATRIX_AMD, MATRIX_ANY)
VECTOR_ENGINES = (CUDA, VECTOR_AMD, VECTOR_ANY)
_MATRIX = {NVIDIA: TENSOR, AMD: MATRIX_AMD, None: MATRIX_ANY}
_VECTOR = {NVIDIA: CUDA, AMD: VECTOR_AMD, None: VECTOR_ANY}

# NCCL/RCCL collectives and NVLink multimem kernels; the same pattern is is_communication() in
# sql/metrics.sql (tests keep the two equal).
COMMUNICATION = r"(?i)nccl|rccl|multimem|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all"


@dataclass(frozen=True)
class MathClass:
    engine: str               # one of the engines above
    precision: str | None
    op: str                   # 'gemm' | 'attention' | 'conv' | 'communication' | 'copy' | 'other'
    rule: str                 # the rule that decided (see RULES)


# Precision tokens, most specific first ('bf16' before 'f16', 'tf32' before 'f32').
_TOKENS = (
    ("fp4", r"fp4|e2m1|nvf4|mxf4"), ("fp8", r"fp8|e4m3|e5m2"), ("bf16", r"bf16|bfloat16"),
    ("tf32", r"tf32|tfloat32"),
    ("fp16", r"fp16|f16|half|(?<![a-z])h(?=884|1688|16816)|hgemm"),
    ("int8", r"int8|(?<![a-z])i8|imma"), ("fp64", r"f64|dgemm|double"),
    ("fp32", r"f32|fp32|float|sgemm|scudnn|ffma"),
)
_CONV = re.compile(r"conv|cudnn|fprop|dgrad|wgrad|winograd|implicit_gemm|igemm", re.I)
_NVJET = {"h": "fp16", "t": "bf16", "e": "fp8", "s": "tf32"}
_TENSILE = {"S": "fp32", "H": "fp16", "B": "bf16", "D": "fp64", "I8": "int8", "F8": "fp8"}
# Name markers that only one vendor's libraries use.
_AMD_MARKS = re.compile(r"^Cijk_|igemm_.*gtc|MIOpen|miopen|SubTensorOp|_MFMA|mfma|xdlops|rccl|"
                        r"ck::|ck_tile|hip", re.I)
_NVIDIA_MARKS = re.compile(r"^nvjet|sm\d{2,3}_xmma|volta_|turing_|ampere_|hopper_|cutlass|cudnn|"
                           r"nccl|cublas|^bmm_mx", re.I)


def vendor_of(gpu_name: str | None, kernel_names=()) -> str | None:
    """'nvidia' or 'amd' from the GPU name, else from vendor-only kernel name markers; None
    when nothing tells."""
    name = (gpu_name or "").lower()
    if re.search(r"amd|radeon|instinct|mi\d{3}|gfx\d{3}", name):
        return AMD
    if re.search(r"nvidia|tesla|geforce|quadro|rtx|[abhlv]\d{2,3}\b|gb?\d{3}", name):
        return NVIDIA
    names = list(kernel_names)
    if any(_AMD_MARKS.search(n) for n in names):
        return AMD
    if any(_NVIDIA_MARKS.search(n) for n in names):
        return NVIDIA
    return None


def precision_from_tokens(name: str) -> str | None:
    """The first precision whose token appears in the (lower-cased) name."""
    lowered = name.lower()
    for precision, pattern in _TOKENS:
        if re.search(pattern, lowered):
            return precision
    return None


def _op(name: str, default: str = "gemm") -> str:
    return "conv" if _CONV.search(name) else default


Rule = Callable[[str, str | None], MathClass]


def _triton(name: str, vendor) -> MathClass:
    if re.match(r"triton_(poi|per|red)_", name):
        return MathClass(_VECTOR[vendor], None, "other", "triton pointwise/reduction")
    op = "attention" if "attention" in name else "gemm" if re.search(r"_(mm|bmm|addmm)", name) else "other"
    return MathClass(UNKNOWN, None, op, "triton template (engine depends on tl.dot and dtype)")


def _attention(name: str, vendor) -> MathClass:
    precision = precision_from_tokens(name)
    if precision == "fp32" and re.search(r"sm(50|70|75)", name):
        return MathClass(_VECTOR[vendor], "fp32", "attention", "fmha fp32 before sm80 (SIMT)")
    if precision == "fp16" and name.startswith("cudnn_generated"):
        precision = "fp16/bf16"  # cuDNN's generated SDPA kernels say f16 for bf16 inputs too
    return MathClass(_MATRIX[vendor], precision, "attention", "fused attention")


def _nvjet(name: str, vendor) -> MathClass:
    types = re.match(r"nvjet_(?:sm\d+_)?([a-z])([a-z])([a-z])_", name)
    precision = _NVJET.get(types.group(1)) if types else None
    return MathClass(TENSOR, precision, "gemm", "cuBLAS nvjet (wgmma/tcgen05)")


def _block_scaled(name: str, vendor) -> MathClass:
    return MathClass(TENSOR, precision_from_tokens(name), "gemm", "block-scaled bmm_Mx (tcgen05)")


def _xmma(name: str, vendor) -> MathClass:
    if "tf32" in name:
        return MathClass(TENSOR, "tf32", _op(name), "xmma tf32")
    if "ffma" in name or "f32f32_f32f32_f32" in name:
        return MathClass(CUDA, "fp32", _op(name), "xmma fp32 (ffma)")
    return MathClass(TENSOR, precision_from_tokens(name), _op(name), "xmma")


def _tensile(name: str, vendor) -> MathClass:
    types = re.search(r"_(I8|F8|[SHBD])[A-Z0-9]*_", name)
    precision = _TENSILE.get(types.group(1)) if types else None
    if re.search(r"_MI\d+x\d+x\d+", name):
        return MathClass(MATRIX_AMD, precision, "gemm", "ROCm Tensile/hipBLASLt MFMA (matrix cores)")
    return MathClass(VECTOR_AMD, precision, "gemm", "ROCm Tensile without MFMA")


def _miopen_igemm(name: str, vendor) -> MathClass:
    precision = precision_from_tokens(name)
    if re.search(r"gtcx|xdlops", name, re.I):
        return MathClass(MATRIX_AMD, precision, "conv", "MIOpen igemm xdlops (matrix cores)")
    return MathClass(VECTOR_AMD, precision, "conv", "MIOpen igemm without xdlops")


def _ck(name: str, vendor) -> MathClass:
    if re.search(r"xdl|wmma|mfma", name, re.I):
        return MathClass(MATRIX_AMD, precision_from_tokens(name), _op(name), "Composable Kernel xdl/wmma")
    return MathClass(UNKNOWN, precision_from_tokens(name), _op(name, "other"),
                     "Composable Kernel without xdl/wmma marker")


def _mma(name: str, vendor) -> MathClass:
    precision = precision_from_tokens(name)
    if precision in (None, "fp32") and re.search(r"s(1688|16816|16832)", name):
        precision = "tf32"  # fp32 data through an Ampere+ MMA shape is TF32
    amd = re.search(r"_xdl|mfma|xdlops", name, re.I)
    return MathClass(MATRIX_AMD if amd else _MATRIX[vendor] if vendor else TENSOR, precision, _op(name),
                     "matrix-unit MMA marker")


def _simt(name: str, vendor) -> MathClass:
    op = "conv" if _CONV.search(name) or "convolve" in name else "gemm"
    return MathClass(_VECTOR[vendor], precision_from_tokens(name) or "fp32", op, "SIMT GEMM/conv (FFMA)")


def _fixed(engine: str, op: str, rule: str) -> Rule:
    return lambda name, vendor: MathClass(engine, None, op, rule)


def _fixed_tokens(engine: str, rule: str) -> Rule:
    return lambda name, vendor: MathClass(engine, precision_from_tokens(name), _op(name), rule)


def _vector(rule: str) -> Rule:
    return lambda name, vendor: MathClass(_VECTOR[vendor], None, "other", rule)


RULES: tuple[tuple[str, Rule], ...] = (
    (COMMUNICATION, _fixed(COMM, "communication", "NCCL/RCCL collective or multimem")),
    (r"^(memcpy|memset)", _fixed(COPY, "copy", "memcpy/memset")),
    (r"^triton_", _triton),
    (attention.KERNEL, _attention),  # what an attention kernel is: profiler/vocab/attention.py
    (r"^nvjet_", _nvjet),
    (r"^bmm_.*mx(e\d|int|f\d)|(?<![a-z])bmm_mx", _block_scaled),
    (r"xmma", _xmma),
    (r"^cijk_", _tensile),
    (r"igemm_.*gtc", _miopen_igemm),
    (r"ck::|ck_tile::|device_gemm_xdl|kernel_gemm_xdl", _ck),
    (r"subtensorop|miopen", _vector("MIOpen elementwise/tensor op")),
    (r"simt|sgemm|dgemm|hgemm|scudnn|(?<![a-z])(gemv|gemmsn_|gemmk1_|dot_kernel)|convolve_sgemm"
     r"|winograd|wgrad_alg\d_engine|dgrad_engine|im2col", _simt),
    (r"[hsi](884|1688|16816|8816|16832|1684)|tensorop|wgmma|gmma|hmma|imma|tcgen05|utcmma|_xdl|"
     r"mfma|wmma", _mma),
    (r"cutlass.*(gemm|conv|tensorop|fprop|dgrad|wgrad)|tf32|tfloat32", _CUTLASS := _fixed_tokens(TENSOR, "CUTLASS (not SIMT) or TF32: tensor cores")),
    (r"elementwise|reduce|softmax|norm|bn_(fw|bw)|copy|fill|index|scatter|gather|sort|scan|"
     r"cub::|pool|embedding|arange|triu|tril|cat_?array|where|compare|multi_tensor_apply|"
     r"scalepackedtensor|upsample|dropout|adam|cumsum|topk|masked|offsets|nchwtonhwc|nhwctonchw|"
     r"permute|bounds_check|transpose|cunn_|at::native::|finalize",
     _vector("elementwise/reduction/indexing code (no matrix unit)")),
)
_COMPILED = tuple((re.compile(p, re.I), f) for p, f in RULES)
NO_EVIDENCE = "no evidence in the name"


@functools.lru_cache(maxsize=1 << 16)
def classify(name: str, vendor: str | None = NVIDIA) -> MathClass:
    """Classify one kernel by name on a GPU of ``vendor`` ('nvidia', 'amd' or None = unknown);
    a name no rule recognises is 'unknown'. The rules are tried on the kernel's own name (with
    its namespaces, a launch wrapper unwrapped: `kernel_names.demangled`), then on the whole name
    with its template arguments. The CUTLASS rule reads the own name alone and needs a GEMM or
    convolution in it (`cutlass_80_tensorop_…`, `cutlass::gemm::kernel::GemmUniversal`):
    `cutlass` in template arguments (`finalizeKernelVecLoad<…cutlass::bfloat16_t…>`) or on a
    reduction (`cutlass_cudnn_train::…::ReduceSplitK`) is no evidence of a tensor core."""
    parts = kernel_names.demangled(name)
    for text in (parts.qualified, name):
        for pattern, decide in _COMPILED:
            if pattern.search(parts.qualified if decide is _CUTLASS else text):
                return decide(name, vendor)
    return MathClass(UNKNOWN, None, "other", NO_EVIDENCE)


def classify_frame(kernels: pd.DataFrame, name_column: str = "name",
                   vendor: str | None | dict = NVIDIA) -> pd.DataFrame:
    """`kernels` plus columns tc_engine, tc_precision, tc_op, tc_rule. ``vendor``: one vendor for
    every row, or {run_id: vendor} read against the frame's run_id column."""
    import pandas as pd

    columns = ["tc_engine", "tc_precision", "tc_op", "tc_rule"]
    if kernels.empty:
        return kernels.reindex(columns=[*kernels.columns, *columns])
    vendors = (kernels["run_id"].map(vendor) if isinstance(vendor, dict)
               else pd.Series([vendor] * len(kernels), index=kernels.index))
    pairs = pd.DataFrame({"name": kernels[name_column], "vendor": vendors.astype(object)})
    unique = {key: list(classify(key[0], key[1]).__dict__.values())
              for key in set(zip(pairs["name"], pairs["vendor"].where(pairs["vendor"].notna(), None)))}
    rows = [unique[(n, v if isinstance(v, str) else None)] for n, v in zip(pairs["name"], pairs["vendor"])]
    out = kernels.copy()
    out[columns] = pd.DataFrame(rows, index=kernels.index, columns=columns)
    return out


def engines_of(vendor: str | None) -> tuple[str, str]:
    """(matrix engine, vector engine) as named on a vendor's GPUs: ('tensor core', 'CUDA core')
    on NVIDIA, ('matrix core', 'vector ALU') on AMD, generic names when unknown."""
    return _MATRIX.get(vendor, MATRIX_ANY), _VECTOR.get(vendor, VECTOR_ANY)


def engine_phrase(engine: str) -> str:
    """'a tensor-core', 'an unknown-engine', ... for a sentence about one kernel."""
    words = {UNKNOWN: "unknown-engine"}.get(engine, engine.replace(" ", "-"))
    return ("an " if words[0].lower() in "aeiou" else "a ") + words
