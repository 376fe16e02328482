"""The command line run in this process: `main(argv)` with its output captured.

`python -m profiler ARGS` in a subprocess costs a new interpreter (0.6-1 s: pandas, DuckDB and
the queries imported again) per call. Where the subprocess is not the point, tests call `cli()`,
which runs the same `profiler.cli.main.main` here and answers like `subprocess.run(...,
capture_output=True, text=True)`: `.returncode`, `.stdout`, `.stderr`. Each command keeps a few
real subprocess tests (the entry point, locks between processes, kill -9, peak memory, what a
terminal receives).
"""
from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass

from profiler.cli.main import main


@dataclass(frozen=True)
class Done:
    """What a finished command left: like `subprocess.CompletedProcess` with text output."""
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def environment(env: dict[str, str | None] | None):
    """`os.environ` with `env`'s names set (None: removed) while the block runs, then as it was."""
    saved = {k: os.environ.get(k) for k in env or {}}
    try:
        for k, v in (env or {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def cli(*args: str, env: dict[str, str | None] | None = None) -> Done:
    """`python -m profiler ARGS` run in this process with `env` added to the environment; a usage
    error (argparse's SystemExit) is its exit status, as from the real command."""
    out, err = io.StringIO(), io.StringIO()
    with environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                print(e.code, file=err)
    return Done(tuple(args), code, out.getvalue(), err.getvalue())
