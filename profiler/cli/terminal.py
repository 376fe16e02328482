"""The command line's output streams, with trace text kept inert.

File, kernel, op, variant and job names come from whoever wrote the trace; printed raw, an ESC in
one would drive the user's terminal (colours, cursor moves, a rewritten title, a hidden line) and
a BEL ring it. While a command runs, `printable_output()` puts a filter in front of stdout and
stderr that writes every control character but the line break as an escape (`markup.printable`:
`\\u001b`, `\\r`), so no command can forget it. The program's own carriage returns (progress
lines that redraw themselves) go through `control()`. A line break inside trace text would still
start a line that looks like the program's own: text output passes the values it prints through
`inert()` first, which escapes line breaks too.
"""
from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from profiler.present.markup import printable


class Printable(io.TextIOBase):
    """A text stream that writes to `stream` with control characters (but "\\n") escaped."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(printable(text, keep="\n"))
        return len(text)

    def control(self, text: str) -> None:
        """Write the program's own control characters (a progress line's "\\r") as they are."""
        self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", "utf-8")


def control(stream: TextIO, text: str) -> None:
    """Write `text` (the program's own, e.g. "\\r" + a progress line) past the filter, if any."""
    getattr(stream, "control", stream.write)(text)


@contextmanager
def printable_output() -> Iterator[None]:
    """stdout and stderr filtered by `Printable` while the block runs."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Printable(out), Printable(err)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err


def inert(value):
    """`value` with every string in it (in dicts, lists, tuples and DataFrame cells) passed through
    `printable`, line breaks included: what a text (not JSON) output formats into its lines."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: inert(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(inert(v) for v in value)
    if hasattr(value, "map") and hasattr(value, "columns"):  # a DataFrame (pandas is not imported here)
        out = value.map(lambda v: printable(v) if isinstance(v, str) else v)
        out.columns = [printable(c) if isinstance(c, str) else c for c in value.columns]
        return out
    return value
