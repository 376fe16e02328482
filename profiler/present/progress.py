"""A progress bar on stderr that appears only for work that takes longer than `delay_s`."""
from __future__ import annotations

import sys
import time
from typing import TextIO

from profiler.present.markup import printable


class ProgressBar:
    def __init__(self, label: str, *, delay_s: float = 1.0, width: int = 30, stream: TextIO | None = None):
        self.label, self.delay_s, self.width = label, delay_s, width
        self.stream = stream or sys.stderr
        self._started = time.monotonic()
        self._shown = False

    def update(self, fraction: float) -> None:
        if time.monotonic() - self._started < self.delay_s:
            return
        filled = int(self.width * max(0.0, min(1.0, fraction)))
        bar = "#" * filled + "-" * (self.width - filled)
        self._control(f"\r{printable(self.label)[:40]:40s} [{bar}] {fraction * 100:5.1f}%")
        self.stream.flush()
        self._shown = True

    def _control(self, text: str) -> None:
        """Its own carriage returns pass a filter of control characters (cli/terminal.py)."""
        getattr(self.stream, "control", self.stream.write)(text)

    def close(self) -> None:
        if self._shown:
            self._control("\r" + " " * (self.width + 52) + "\r")
            self.stream.flush()
