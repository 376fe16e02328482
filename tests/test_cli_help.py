"""`python -m profiler --help` ends with examples (issue 40); each one parses as written."""
from __future__ import annotations

import contextlib
import io
import re
import shlex

import pytest

from profiler.cli.main import EXAMPLES, build_parser, main


def _commands() -> list[str]:
    """The example command lines: what follows `python -m profiler`, up to the two spaces before
    its description."""
    found = re.findall(r"^  python -m profiler (.+?)(?:\s{2,}.*)?$", EXAMPLES, re.MULTILINE)
    return [c.strip() for c in found]


def test_help_shows_the_examples():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    assert "examples:" in out.getvalue() and "capture --mode decode" in out.getvalue()
    assert len(_commands()) >= 10


@pytest.mark.parametrize("command", _commands())
def test_each_example_parses(command):
    args = build_parser().parse_args(shlex.split(command))
    assert args.command == command.split()[0]
