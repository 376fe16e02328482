"""Why an attention variant cannot run in a setting: each check gives a sentence, or None.

A variant (variants.py) lists its checks; the first that gives a reason is the one shown.
"""
from __future__ import annotations

import importlib.util
import shutil

import torch

from profiler.capture.setting import Check, Setting

KERNELS_EXTRA = "requirements-kernels.txt"  # the optional kernel packages, pinned


def cuda_present(s: Setting) -> str | None:
    if s.device == "cuda" and not torch.cuda.is_available():
        return "CUDA was asked for but torch sees no CUDA GPU"
    return None


def needs_cuda(what: str) -> Check:
    return lambda s: None if s.device == "cuda" else f"{what} needs CUDA"


def needs_half(what: str, cuda_only: bool = False) -> Check:
    def check(s: Setting) -> str | None:
        if s.dtype in ("bf16", "fp16") or (cuda_only and s.device != "cuda"):
            return None
        where = " on CUDA" if cuda_only else ""
        return f"{what} needs bf16 or fp16{where}, not {s.dtype}"
    return check


def needs_sm80(what: str) -> Check:
    def check(s: Setting) -> str | None:
        if s.device != "cuda" or not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability()
        return None if major >= 8 else f"{what} needs an sm80+ GPU, this one is sm{major}{minor}"
    return check


def head_dim_at_most(limit: int, what: str) -> Check:
    def check(s: Setting) -> str | None:
        if s.device != "cuda" or (s.head_dim <= limit and s.head_dim % 8 == 0):
            return None
        return f"{what} on CUDA needs a head dim that is a multiple of 8 and at most {limit}, not {s.head_dim}"
    return check


def compiler_present(s: Setting) -> str | None:
    if s.device == "cuda":
        return None if importlib.util.find_spec("triton") else "torch.compile on CUDA needs triton"
    from torch._inductor import config

    cxx = config.cpp.cxx[0] if isinstance(config.cpp.cxx, tuple) else config.cpp.cxx
    return None if shutil.which(cxx or "g++") else f"torch.compile on CPU needs a C++ compiler ({cxx})"


def kernels_installed(s: Setting) -> str | None:
    if importlib.util.find_spec("kernels") is None:
        return (f"the `kernels` package is not installed (it fetches the kernel from the Hugging Face hub; "
                f"pip install -r {KERNELS_EXTRA})")
    return None


def _module_present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or fails to import
        return False


def package_installed(module: str, package: str, note: str = "") -> Check:
    def check(s: Setting) -> str | None:
        if _module_present(module):
            return None
        return f"the `{package}` package is not installed{note} (pip install -r {KERNELS_EXTRA})"
    return check


def needs_sm(what: str, majors: tuple[int, ...]) -> Check:
    def check(s: Setting) -> str | None:
        if s.device != "cuda" or not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability()
        names = " or ".join(f"sm{m}0" for m in majors)
        return None if major in majors else f"{what} needs an {names} GPU, this one is sm{major}{minor}"
    return check


def head_dim_in(allowed: tuple[int, ...], what: str) -> Check:
    def check(s: Setting) -> str | None:
        if s.head_dim in allowed:
            return None
        return f"{what} supports head dims {', '.join(map(str, allowed))}, not {s.head_dim}"
    return check


# what a variant cannot do, per part of a setting: {feature: why not}; features are "train",
# "decode", "gqa", "window" and "varlen" (see `features`)
FEATURES = ("train", "decode", "gqa", "window", "varlen")


def features(s: Setting) -> tuple[str, ...]:
    """What the setting asks of a variant beyond a plain forward over a full or causal square."""
    asked = {"train": s.mode == "train", "decode": s.mode == "decode", "gqa": s.gqa,
             "window": s.window is not None, "varlen": s.varlen is not None}
    return tuple(f for f in FEATURES if asked[f])


def cannot(what: str, **why: str) -> Check:
    """A check that names the first asked-for feature ``what`` cannot do (``why[feature]``)."""
    unknown = set(why) - set(FEATURES)
    assert not unknown, unknown

    def check(s: Setting) -> str | None:
        for feature in features(s):
            if feature in why:
                return f"{what} {why[feature]}"
        return None
    return check


def backward_on_cuda_only(what: str) -> Check:
    def check(s: Setting) -> str | None:
        return f"{what} has no backward on the CPU (a train step needs CUDA)" if s.mode == "train" and s.device != "cuda" else None
    return check


def only_in_mode(mode: str, what: str, why: str) -> Check:
    """For a variant made for one mode: ``what why`` in every other mode."""
    return lambda s: None if s.mode == mode else f"{what} {why}"


def window_needs_causal(what: str) -> Check:
    """Kernels with a left window only (flashinfer's ``window_left``) cannot give the two-sided
    window of a non-causal mask (masks.py)."""
    def check(s: Setting) -> str | None:
        if s.window is not None and not s.causal:
            return f"{what} has a left window only (window_left): a sliding window needs the causal mask"
        return None
    return check
