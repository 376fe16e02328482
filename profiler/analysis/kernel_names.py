"""Facts read from a kernel's name: library, GPU architecture tag, matrix instruction, tile shape.

Kernel names carry more than the engine `profiler.analysis.tensor_cores` reads from them: which library
generated the kernel (`cudnn_generated_…`, cuBLAS `nvjet_…` / `…_cublas`, CUTLASS, PyTorch's own
`pytorch_flash::` and `fmha_cutlassF_…`, Triton, ROCm Tensile `Cijk_…`), the architecture it was
written for (`sm90`, `sm80`, `Sm80`, `gfx942`), the matrix instruction (`wgmma` on Hopper,
`mma` on Ampere, `ffma` on CUDA cores, `mfma` on AMD) and the tile (`tilesize128x128x64`,
`_64x128x64_`, `Flash_fwd_kernel_traits<64, 128, 128, 4`). `parse(name)` is the one parser every
page, finding and CLI output reads these from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


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
    (r"flash_attn_?cute|FlashAttention(Forward|Backward)Sm\d+", "FlashAttention-4 (CuTe DSL)"),
    (r"pytorch_flash::|flash_fwd|flash_bwd", "FlashAttention-2 (PyTorch)"),
    (r"fmha_cutlass|PyTorchMemEffAttention", "memory-efficient attention (PyTorch, CUTLASS)"),
    (r"^triton_|triton", "Triton"),
    (r"^nvjet_|_cublas|cublas|^(maxwell|volta|turing|ampere)_|gemmSN_|gemmk1_|gemv", "cuBLAS"),
    (r"cutlass", "CUTLASS"),
    (r"^Cijk_", "rocBLAS / hipBLASLt (Tensile)"),
    (r"nccl", "NCCL"),
    (r"at::native::|\(anonymous namespace\)::softmax", "PyTorch native"),
)
_ARCH = re.compile(r"(?<![a-z0-9])sm_?(\d{2,3}a?)(?![0-9])|arch::Sm(\d{2,3})|cutlass_(\d{2,3})_"
                   r"|(gfx\d{3,4}[a-z]?)", re.I)
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
    for pattern, library in _LIBRARIES:
        if re.search(pattern, name, re.I):
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
    return _IMPLIED_ARCH.get(library, (None, None))


def _instruction(name: str, library: str, arch: str | None) -> str | None:
    lowered = name.lower()
    if re.search(r"wgmma|gmma|warpgroup", lowered) or lowered.startswith("nvjet_"):
        return "wgmma"
    if library.startswith("FlashAttention-4") and arch:  # one kernel class per architecture's MMA
        return {"sm90": "wgmma", "sm100": "tcgen05"}.get(arch, "mma")
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
def parse(name: str) -> KernelName:
    """Everything the name tells: library, arch tag, matrix instruction, tile."""
    library = _library(name)
    arch, arch_from = _arch(name, library)
    return KernelName(library, arch, arch_from, _instruction(name, library, arch), _tile(name))
