"""Limits on what a zip archive of trace files may unpack to, checked from its members' headers
before anything is written (issue 22: a 5 GiB member was extracted to /tmp before the trace
reader refused it; issue 39: 3,000 members of 1 MiB, or 100,000 tiny ones, were all extracted
before anything refused them). Python's zipfile stops a member at the size its header declares,
so a member that passes here cannot write more, and the archive's total is the sum of its
members' declared sizes."""
from __future__ import annotations

import os
import shutil
import zipfile

MAX_MEMBER_BYTES = 4 << 30  # a trace's decompressed size cap (profiler/parse/source.py)
MAX_RATIO = 200  # real traces deflate 10-30x; zeros or one repeated event, up to ~1,000x
RATIO_FROM_BYTES = 1 << 20  # smaller members may inflate as they like
MAX_MEMBERS = 2048  # entries of any kind: a job of more ranks is given as a directory
MAX_TOTAL_BYTES = 32 << 30  # every member unpacked; also never more than the free space where it goes


def archive_refusal(infos: list[zipfile.ZipInfo], into: str | os.PathLike) -> str | None:
    """Why an archive must not be unpacked into `into` as a whole (its member count, its total
    size, the free space there), or None: checked before any member is written."""
    if len(infos) > MAX_MEMBERS:
        return f"has {len(infos):,} members (at most {MAX_MEMBERS:,}; give a job of more ranks as a directory)"
    total = sum(i.file_size for i in infos if not i.is_dir())
    if total > MAX_TOTAL_BYTES:
        return f"would unpack to {total / 2**30:,.1f} GiB in all (the limit is {MAX_TOTAL_BYTES >> 30} GiB)"
    try:
        free = shutil.disk_usage(into).free
    except OSError:
        return None
    if total > free:
        return f"would unpack to {total / 2**30:,.2f} GiB; the disk it unpacks to has {free / 2**30:,.2f} GiB free"
    return None


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
