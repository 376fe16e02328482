"""Facts read from a kernel's name: library, GPU architecture tag, matrix instruction, tile shape.

Kernel names carry more than the engine `profiler.analysis.model.tensor_cores` reads from them: which library
generated the kernel (`cudnn_generated_…`, cuBLAS `nvjet_…` / `…_cublas`, CUTLASS, PyTorch's own
`pytorch_flash::` and `fmha_cutlassF_…`, Triton, ROCm Tensile `Cijk_…`), the architecture it was
written for (`sm90`, `sm80`, `Sm80`, `gfx942`), the matrix instruction (`wgmma` on Hopper,
`mma` on Ampere, `ffma` on CUDA cores, `mfma` on AMD) and the tile (`tilesize128x128x64`,
`_64x128x64_`, `Flash_fwd_kernel_traits<64, 128, 128, 4`). `parse(name, device_arch)` is the one
parser every page, finding and CLI output reads these from; the instruction follows the
architecture (the name's tag, else the run's device): `wgmma` only on Hopper (sm90), `tcgen05` on
datacenter Blackwell (sm100/sm103), and no instruction at all when neither tells.

`demangled(name)` splits a C++ kernel name into its own (unqualified) function name, its
namespaces and its template arguments, unwrapping launch wrappers (`cutlass::Kernel<Op>`,
`cutlass::device_kernel<Op>`) to the operator they launch: the engine classifier reads the
kernel's own name before its template arguments.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from profiler.vocab import attention


@dataclass(frozen=True)
class KernelName:
    library: str               # 'cuDNN' | 'cuBLAS' | 'CUTLASS' | 'FlashAttention-2 (PyTorch)' | ...
    arch: str | None           # 'sm90', 'sm80', 'gfx942', ... or None
    arch_from: str | None      # 'name' (a tag in the name) or the library rule that implies it
    instruction: str | None    # 'wgmma' | 'tcgen05' | 'mma' | 'ffma' | 'mfma' | None
    tile: str | None           # e.g. '128x128x64', '64x512'

    @property
    def summary(self) -> str:
        """One line, e.g. 'cuDNN, sm90, wgmma, tile 64x128x64'."""
        parts = [self.library, self.arch, self.instruction, f"tile {self.tile}" if self.tile else None]
        return ", ".join(p for p in parts if p)


_LIBRARIES = (  # (pattern, library), first match wins
    (r"^cudnn|cudnn_", "cuDNN"),
    *attention.LIBRARIES,  # FlashAttention-4 and -2, flashinfer, trtllm-gen fmha, memory-efficient
    (r"^bmm_(mx)?(e\d+m\d+|bfloat16|fp\d+)_.*_t\d+x\d+x\d+", "TensorRT-LLM (trtllm-gen)"),
    (r"^triton_|triton", "Triton"),
    (r"^nvjet_|_cublas|cublas|^(maxwell|volta|turing|ampere)_|gemmSN_|gemmk1_|gemv", "cuBLAS"),
    (r"cutlass", "CUTLASS"),
    (r"^Cijk_", "rocBLAS / hipBLASLt (Tensile)"),
    (r"nccl", "NCCL"),
    (r"at::native::|\(anonymous namespace\)::softmax", "PyTorch native"),
)
_ARCH = re.compile(r"(?<![a-z0-9])sm_?(\d{2,3}a?)(?![0-9])|arch::Sm(\d{2,3})|cutlass_(\d{2,3})_"
                   r"|(gfx\d{3,4}[a-z]?)", re.I)
_CAMEL_ARCH = re.compile(r"(?<=[a-z])Sm(\d{2,3})[af]?(?![0-9])")    # fmhaSm100aKernel, ...ForwardSm90
# Libraries whose kernels carry no tag but are written for one architecture's instructions.
_IMPLIED_ARCH = {"FlashAttention-2 (PyTorch)": ("sm80", "FlashAttention-2 kernels use the sm80 mma.sync path")}
_TILES = (
    re.compile(r"tilesize(\d+x\d+x\d+)"),                                   # cuBLAS xmma
    re.compile(r"Flash_fwd_kernel_traits<\d+, (\d+), (\d+),"),             # flash: head dim, M, N
    re.compile(r"^nvjet_(?:sm\d+_)?[a-z]{3}_(\d+x\d+)_"),                    # cuBLAS nvjet
    re.compile(r"_(\d+x\d+x\d+)_"),                                          # cuDNN, CUTLASS
    re.compile(r"(?:sgemm|gemm|cutlassF_[a-z0-9]+_aligned|cutlassF_[a-z0-9]+)_(\d+x\d+)_"),
    re.compile(r"_MT(\d+x\d+x\d+)_"),                                        # Tensile macro tile
)


def _library(name: str) -> str:
    """By the kernel's qualified name first; then the whole name, where `cutlass` in template
    arguments (a data type: cutlass::bfloat16_t) names no library."""
    own = demangled(name).qualified
    for text, skip in ((own, ()), (name, ("CUTLASS",))):
        for pattern, library in _LIBRARIES:
            if library not in skip and re.search(pattern, text, re.I):
                return library
    return "other"


# cuBLAS's older kernels name the architecture instead of tagging it
_ARCH_NAMES = {"maxwell": "sm50", "volta": "sm70", "turing": "sm75", "ampere": "sm80"}


def _arch(name: str, library: str) -> tuple[str | None, str | None]:
    family = re.match(r"(maxwell|volta|turing|ampere)_", name)
    if family:
        return _ARCH_NAMES[family.group(1)], "name"
    match = _ARCH.search(name)
    if match:
        tag = match.group(1) or match.group(2) or match.group(3)
        return (f"sm{tag}".lower(), "name") if tag else (match.group(4).lower(), "name")
    match = _CAMEL_ARCH.search(name)
    if match:
        return f"sm{match.group(1)}", "name"
    return _IMPLIED_ARCH.get(library, (None, None))


def arch_mma(arch: str | None) -> str | None:
    """The matrix instruction an architecture's newest tensor-core kernels use: `wgmma` on Hopper
    (sm90) only, `tcgen05` on datacenter Blackwell (sm100, sm103), `mma` (mma.sync) on Ampere,
    Ada and consumer Blackwell (sm80-sm89, sm120); None for an unknown or pre-Ampere one."""
    match = re.match(r"sm_?(\d+)", arch or "")
    if not match:
        return None
    cc = int(match.group(1))
    return ("wgmma" if cc // 10 == 9 else "tcgen05" if cc // 10 in (10, 11) else
            "mma" if 80 <= cc < 90 or cc // 10 == 12 else None)


def device_arch(major, minor) -> str | None:
    """'sm90', 'sm100', ... from a device's compute capability (None when unknown)."""
    try:
        return f"sm{int(major)}{int(minor)}"
    except (TypeError, ValueError):
        return None


def _instruction(name: str, library: str, arch: str | None) -> str | None:
    lowered = name.lower()
    if re.search(r"tcgen05|utcmma|utcqmma", lowered):
        return "tcgen05"
    if re.search(r"wgmma|gmma|warpgroup", lowered):
        return "wgmma"
    if lowered.startswith("nvjet_") or library.startswith(("FlashAttention-4", "TensorRT-LLM")):
        return arch_mma(arch)  # one kernel family per architecture's tensor-core instruction
    if re.search(r"ffma|simt|sgemm", lowered):
        return "ffma"
    if re.search(r"mfma|_mi\d+x\d+x\d+", lowered):
        return "mfma"
    if re.search(r"tensorop|hmma|16816|1688|mma", lowered) or library in _IMPLIED_ARCH \
            or library.startswith("memory-efficient"):
        return "mma"
    return None


def _tile(name: str) -> str | None:
    for pattern in _TILES:
        match = pattern.search(name)
        if match:
            return "x".join(match.groups())
    return None


@lru_cache(maxsize=4096)
def parse(name: str, device: str | None = None) -> KernelName:
    """Everything the name tells: library, arch tag, matrix instruction, tile. ``device``: the
    run's architecture ('sm100'), which decides the instruction of a kernel family built for
    each architecture (nvjet, FlashAttention-4, trtllm-gen) when the name carries no tag."""
    library = _library(name)
    arch, arch_from = _arch(name, library)
    return KernelName(library, arch, arch_from, _instruction(name, library, arch or device), _tile(name))


WRAPPERS = ("Kernel", "Kernel2", "device_kernel")   # launch wrappers whose first argument is the op


@dataclass(frozen=True)
class Demangled:
    function: str     # the kernel's own, unqualified name: 'ReduceSplitK', 'flash_fwd_kernel'
    qualified: str    # with its namespaces: 'cutlass_cudnn_train::reduction::kernel::ReduceSplitK'
    arguments: str    # the template and call arguments ('' when none)


def _split(text: str) -> tuple[str, str]:
    """(the text before the first '<' or '(' at depth 0, the first bracketed group's inside)."""
    for i, ch in enumerate(text):
        if ch in "<(":
            close, depth = {"<": ">", "(": ")"}[ch], 0
            for j in range(i, len(text)):
                depth += text[j] == ch
                depth -= text[j] == close
                if depth == 0:
                    return text[:i], text[i + 1:j]
            return text[:i], text[i + 1:]
    return text, ""


@lru_cache(maxsize=16384)
def demangled(name: str) -> Demangled:
    """The parts of a (demangled) kernel name; a launch wrapper (`WRAPPERS`) is replaced by the
    operator in its first template argument."""
    text = re.sub(r"^(?:void|static|__global__)\s+", "", name.strip()).replace("(anonymous namespace)", "{anon}")
    arguments = ""
    for _ in range(4):   # nested wrappers, rarely more than one
        qualified, inside = _split(text)
        arguments = arguments or text[len(qualified):]
        if qualified.rsplit("::", 1)[-1] not in WRAPPERS or not inside:
            break
        text = inside.split(",")[0].strip()
    qualified = qualified.strip().replace("{anon}", "(anonymous namespace)")
    return Demangled(qualified.rsplit("::", 1)[-1], qualified, arguments)
