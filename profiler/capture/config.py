"""What a capture is asked for (`CaptureConfig`), what each run came to (`RunOutcome`), and the
checks a config passes before anything runs (`validate`). Value types and their rules: the
in-process recorder (`inprocess.py`), the worker processes (`worker.py`) and the entry point
(`recorder.capture`) all read them.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import torch

from profiler.errors import CaptureError
from profiler.capture.setting import DTYPES, MODES, Setting
from profiler.capture.variants import VARIANTS, default_device

Progress = Callable[[str, float, str], None]
METADATA_KEY = "attention_run"
TOLERANCE = {"bf16": 2e-2, "fp16": 5e-3, "fp32": 1e-3}  # relative error against the fp32 reference
SWEEP_REPEATS = 3  # warm runs per point of a sweep, unless asked otherwise


MAX_WARMUP_CALLS = 1000  # warm-up calls by time stop here (very short calls)


@dataclass(frozen=True)
class CaptureConfig:
    variants: tuple[str, ...] = tuple(VARIANTS)
    batch: int = 8
    heads: int = 16
    seq_lens: tuple[int, ...] = (1024,)
    head_dim: int = 64
    dtype: str = "bf16"
    causal: bool = True
    device: str = field(default_factory=default_device)
    cold: bool = True
    flush_l2: bool = True  # a cold run's inputs evicted from L2 before its first call (record.flush_l2)
    warmup_calls: int = 3  # outside the profiler, before a warm run
    warmup_s: float = 0.1  # and for at least this long, one call at a time (at most MAX_WARMUP_CALLS)
    wait: int = 1
    warmup: int = 1
    active: int = 3
    timing_calls: int = 20  # back-to-back calls (and graph replays) timed outside the profiler
    repeats: int | None = None  # warm runs per point; None: 3 in a sweep, else 1
    isolate: bool = True  # each variant (and each cold shape) in a fresh process with fresh caches
    compile_cache: Path | None = None  # keep compile caches here (warm after the first capture)
    out_dir: Path = Path("data/traces")
    sweep: str | bool = False  # an id shared by the runs of a sweep, or False
    seed: int = 0
    mode: str = "prefill"  # a name of setting.MODES
    kv_heads: int | None = None  # GQA/MQA: fewer K/V heads than query heads; None: as many as heads
    kv_len: int | None = None  # keys per sequence (decode: the KV cache); None: the query length
    window: int | None = None  # a sliding window of this many keys (masks.py); None: none
    varlen: tuple[int, ...] | None = None  # packed sequences of these lengths (batch 1, one row)
    cuda_graph: bool = False  # warm runs captured into a CUDA graph and replayed (capture/graphed.py)

    def setting(self) -> Setting:
        return Setting(device=self.device, dtype=self.dtype, head_dim=self.head_dim, causal=self.causal,
                       mode=self.mode, gqa=self.kv_heads not in (None, self.heads), window=self.window,
                       varlen=self.varlen)

    @property
    def n_kv_heads(self) -> int:
        return self.kv_heads or self.heads

    def kv_len_of(self, seq_len: int) -> int:
        """Keys per sequence at query length ``seq_len``."""
        return self.kv_len or seq_len


@dataclass
class RunOutcome:
    variant: str
    seq_len: int
    cold: bool
    name: str
    path: Path | None = None  # the trace file, when the run was profiled
    meta: dict | None = None  # the "attention_run" object written into the trace
    skipped: str | None = None  # why the run did not happen
    repeat: int = 0  # which warm run of its point (0 for a cold run)


def runs_per_variant(config: CaptureConfig) -> int:
    """How many runs (traces) each variant makes: a cold one per length, and the warm repeats."""
    return len(config.seq_lens) * (int(config.cold) + (config.repeats or _default_repeats(config)))


def _default_repeats(config: CaptureConfig) -> int:
    return SWEEP_REPEATS if len(config.seq_lens) > 1 else 1


def validate(config: CaptureConfig) -> CaptureConfig:
    """Raise CaptureError naming the first bad field; return the config with a sweep id and
    repeats set."""
    for name in config.variants:
        if name not in VARIANTS:
            raise CaptureError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    if not config.variants:
        raise CaptureError("no variants were asked for")
    if config.dtype not in DTYPES:
        raise CaptureError(f"dtype must be one of {', '.join(DTYPES)}, not {config.dtype!r}")
    if config.device not in ("cuda", "cpu"):
        raise CaptureError(f"device must be 'cuda' or 'cpu', not {config.device!r}")
    if config.device == "cuda" and not torch.cuda.is_available():
        raise CaptureError("device 'cuda' was asked for but torch sees no CUDA GPU; use --device cpu")
    config = _check_shape(config)
    sizes = dict(batch=config.batch, heads=config.heads, head_dim=config.head_dim, active=config.active,
                 timing_calls=config.timing_calls,
                 repeats=1 if config.repeats is None else config.repeats)
    sizes.update({f"seq_len {s}": s for s in config.seq_lens} or {"seq_lens": 0})
    for what, value in sizes.items():
        if value < 1:
            raise CaptureError(f"{what} must be at least 1, not {value}")
    if min(config.wait, config.warmup, config.warmup_calls, config.warmup_s) < 0:
        raise CaptureError("wait, warmup, warmup_calls and warmup_s must not be negative")
    _check_memory(config)
    if config.cuda_graph and (config.device != "cuda" or config.mode == "train"):
        raise CaptureError("--cuda-graph needs --device cuda and a forward mode (prefill or decode): "
                           "a train step's backward is not captured here")
    if config.cuda_graph and config.cold:
        config = replace(config, cold=False)  # a graph replays warm calls; the first call is eager
    _check_out_dir(config.out_dir)
    if config.sweep is False and len(config.seq_lens) > 1:
        config = replace(config, sweep=time.strftime("sweep-%Y%m%dT%H%M%SZ", time.gmtime()))
    if config.repeats is None:
        config = replace(config, repeats=_default_repeats(config))
    return config


SWEEP_AXES = ("kv_heads", "kv_len", "window", "head_dim")  # sweeps beside seq_lens, one config per point


def sweep_points(base: CaptureConfig, axis: str, values: tuple[int, ...]) -> list[CaptureConfig]:
    """One config per value of ``axis`` (a name of SWEEP_AXES), sharing one sweep id, each point
    repeated like a sweep over lengths (``SWEEP_REPEATS`` unless ``base.repeats`` says)."""
    if axis not in SWEEP_AXES:
        raise CaptureError(f"a sweep axis is one of seq_lens, {', '.join(SWEEP_AXES)}; not {axis!r}")
    sweep = base.sweep or time.strftime("sweep-%Y%m%dT%H%M%SZ", time.gmtime())
    repeats = base.repeats if base.repeats is not None else (SWEEP_REPEATS if len(values) > 1 else None)
    return [replace(base, sweep=sweep if len(values) > 1 else base.sweep, repeats=repeats, **{axis: v})
            for v in values]


def _check_shape(config: CaptureConfig) -> CaptureConfig:
    """The mode and shape fields agree; packed lengths set the one query length (their sum)."""
    if config.mode not in MODES:
        raise CaptureError(f"mode must be one of {', '.join(MODES)}, not {config.mode!r}")
    for what, value in (("batch", config.batch), ("heads", config.heads), ("head_dim", config.head_dim)):
        if value < 1:  # before any arithmetic on them (heads % kv_heads)
            raise CaptureError(f"{what} must be at least 1, not {value}")
    for what, value in (("kv_heads", config.kv_heads), ("kv_len", config.kv_len), ("window", config.window)):
        if value is not None and value < 1:
            raise CaptureError(f"{what} must be at least 1, not {value}")
    if config.heads % config.n_kv_heads:
        raise CaptureError(f"heads ({config.heads}) must be a multiple of kv_heads ({config.n_kv_heads}): "
                           "each KV head serves a whole group of query heads")
    if config.mode == "decode" and config.kv_len is None:
        raise CaptureError("decode needs the KV cache length (--kv-len), e.g. --kv-len 8192")
    if config.kv_len is not None and config.causal and max(config.seq_lens) > config.kv_len:
        raise CaptureError(f"a query length ({max(config.seq_lens)}) longer than the keys (kv_len "
                           f"{config.kv_len}) has queries with no key to see under the causal mask")
    if config.varlen is not None:
        if not config.varlen or min(config.varlen) < 1:
            raise CaptureError(f"varlen must be positive lengths, not {config.varlen}")
        if config.mode == "decode" or config.kv_len is not None:
            raise CaptureError("packed lengths (varlen) are for prefill and train: each sequence attends to itself")
        if config.batch != 1:
            raise CaptureError(f"packed lengths (varlen) lay the sequences end to end in one batch row: batch "
                               f"must be 1, not {config.batch}")
        config = replace(config, seq_lens=(sum(config.varlen),))
    return config


def _free_bytes(device: str) -> int:
    if device == "cuda":
        return torch.cuda.mem_get_info()[0]
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


def memory_bytes(config: CaptureConfig) -> int:
    """About what one call of the config's longest shape allocates at once: Q and O
    (batch×heads×q_len×head_dim), K and V, the KV cache (batch×kv_heads×kv_len×head_dim), in the
    dtype and again in fp32 for the reference, and about three fp32 score matrices
    (batch×heads×q_len×kv_len) for the reference; a train step holds the gradients of Q, K, V
    and O and its reference keeps twice the scores for its backward."""
    seq = max(config.seq_lens)
    kv = config.kv_len_of(seq)
    q_o = 2 * config.batch * config.heads * seq * config.head_dim
    k_v = 2 * config.batch * config.n_kv_heads * kv * config.head_dim
    tensors = (q_o + k_v) * (2 if config.mode == "train" else 1)  # and their gradients
    scores = config.batch * config.heads * seq * kv
    return tensors * _BYTES.get(config.dtype, 4) + (q_o + k_v) * 4 + (6 if config.mode == "train" else 3) * 4 * scores


def _check_memory(config: CaptureConfig) -> None:
    need, free = memory_bytes(config), _free_bytes(config.device)
    if need > free:
        seq = max(config.seq_lens)
        scores = (6 if config.mode == "train" else 3) * 4 * config.batch * config.heads * seq * config.kv_len_of(seq)
        what = f"seq_len {seq} is too long here" if 2 * scores > need else "this shape is too large here"
        raise CaptureError(f"{what}: its tensors (Q, K, V, O, the scores, "
                           f"{'the gradients, ' * (config.mode == 'train')}the fp32 reference) need about "
                           f"{need / 2**30:,.1f} GiB, the {config.device} has {free / 2**30:,.1f} GiB free")


def _check_out_dir(out_dir: Path) -> None:
    """The trace folder exists or can be made, and can be written, before anything runs."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CaptureError(f"--out-dir {str(out_dir)[:200]} is a file, not a folder") from None
    except OSError as e:
        raise CaptureError(f"--out-dir {str(out_dir)[:200]} cannot be made: {e.strerror or e}") from None
    if not out_dir.is_dir():
        raise CaptureError(f"--out-dir {str(out_dir)[:200]} is a file, not a folder")
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise CaptureError(f"--out-dir {str(out_dir)[:200]} cannot be written")


def run_name(config: CaptureConfig, variant: str, seq_len: int, cold: bool, repeat: int = 0) -> str:
    """``<variant>[_<mode>]_b<batch>_h<heads>[_kv<kv heads>]_s<q len>[_L<kv len>][_w<window>]
    [_v<len>x<len>...]_d<head dim>_<dtype>_<causal|full>_<cold|warm>[_r<repeat>]``: the bracketed
    parts only where they differ from a plain prefill of multi-head attention (whose names are as
    they always were)."""
    mask = "causal" if config.causal else "full"
    again = f"_r{repeat + 1}" if not cold and (config.repeats or 1) > 1 else ""
    mode = "" if config.mode == "prefill" else f"_{config.mode}"
    kv_heads = f"_kv{config.n_kv_heads}" if config.n_kv_heads != config.heads else ""
    kv_len = f"_L{config.kv_len}" if config.kv_len not in (None, seq_len) else ""
    window = f"_w{config.window}" if config.window is not None else ""
    packed = _packed(config.varlen)
    return (f"{variant}{mode}_b{config.batch}_h{config.heads}{kv_heads}_s{seq_len}{kv_len}{window}{packed}"
            f"_d{config.head_dim}_{config.dtype}_{mask}_{'cold' if cold else 'warm'}{again}")


def _packed(varlen: tuple[int, ...] | None) -> str:
    """The run name's packed lengths: all of them, or, beyond 8 (a file name has at most 255
    bytes), their count, sum and a digest of the list."""
    if varlen is None:
        return ""
    if len(varlen) <= 8:
        return f"_v{'x'.join(map(str, varlen))}"
    import hashlib

    digest = hashlib.sha256(",".join(map(str, varlen)).encode()).hexdigest()[:8]
    return f"_v{len(varlen)}seqs{sum(varlen)}-{digest}"
