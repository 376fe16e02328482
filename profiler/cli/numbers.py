"""The command line's number arguments, range-checked before any arithmetic: whole numbers of
ASCII digits (Python's `int` also takes '²'-free Unicode digits such as '٣' and '1_000'), within
the bounds each option states; a value outside is argparse's one-line usage error (exit 2)."""
from __future__ import annotations

import argparse
import re
from collections.abc import Callable

_WHOLE = re.compile(r"[+-]?[0-9]{1,19}")
MAX_LIST = 1000  # values in one comma-separated list


def _one(text: str, low: int, high: int) -> int:
    text = text.strip()
    if not _WHOLE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}")
    value = int(text)
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"expected a whole number from {low:,} to {high:,}, got {text[:40]}")
    return value


def whole(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: one whole number from `low` to `high`."""
    def parse(text: str) -> int:
        return _one(text, low, high)
    parse.__name__ = "whole number"
    return parse


def wholes(low: int, high: int) -> Callable[[str], tuple[int, ...]]:
    """An argparse type: whole numbers from `low` to `high` separated by commas (at most MAX_LIST)."""
    def parse(text: str) -> tuple[int, ...]:
        parts = [part for part in text.split(",", MAX_LIST + 1) if part.strip()]
        if not parts:
            raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas, got {text[:40]!r}")
        if len(parts) > MAX_LIST:
            raise argparse.ArgumentTypeError(f"expected at most {MAX_LIST:,} numbers in one list")
        return tuple(_one(part, low, high) for part in parts)
    parse.__name__ = "whole numbers"
    return parse
