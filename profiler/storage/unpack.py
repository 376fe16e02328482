"""Limits on what a zip archive of trace files may unpack to, checked from each member's header
before anything is written (issue 22: a 5 GiB member was extracted to /tmp before the trace
reader refused it). Python's zipfile stops a member at the size its header declares, so a member
that passes here cannot write more."""
from __future__ import annotations

import zipfile

MAX_MEMBER_BYTES = 4 << 30  # a trace's decompressed size cap (profiler/parse/source.py)
MAX_RATIO = 200  # real traces deflate 10-30x; zeros or one repeated event, up to ~1,000x
RATIO_FROM_BYTES = 1 << 20  # smaller members may inflate as they like


def refusal(info: zipfile.ZipInfo) -> str | None:
    """Why a member must not be extracted (one clause naming it), or None when it may be."""
    size, packed = info.file_size, max(info.compress_size, 1)
    if size > MAX_MEMBER_BYTES:
        return f"{_name(info)} would unpack to {size / 2**30:.1f} GiB (the limit is {MAX_MEMBER_BYTES >> 30} GiB)"
    if size > RATIO_FROM_BYTES and size > MAX_RATIO * packed:
        return (f"{_name(info)} would unpack to {size / 2**20:,.0f} MiB from {packed / 2**20:,.2f} MiB "
                f"({size // packed:,}x; more than {MAX_RATIO}x is refused)")
    return None


def _name(info: zipfile.ZipInfo) -> str:
    """The member's base name, as extracted (cut: names are data)."""
    return info.filename.rsplit("/", 1)[-1][:120]
