"""`python -m profiler app [streamlit options]`: the dashboard's server, `streamlit run app.py`
with the same options, started so that its first page is quick (part of the app glue,
`profiler.present.ui`).

Two things `streamlit run` cannot do before a first visitor arrives:
  - load what the pages import (pandas, Altair, the analysis modules: ~1.4 s on 2 cores). Here a
    thread imports them once the server is up, while the browser loads the front end, until a page
    begins: the first page, or a shared link opened on a fresh server, finds most of them loaded
    (not on a new store, the shipped samples unpacked or seeded: there the runs page's title and
    what the store holds come first);
  - say that `pages/` is not an old-style pages folder. The app lists its pages itself
    (`st.navigation` in app.py); `streamlit run` runs the first link to a page after a start as
    that file alone, and app.py's `view_state` runs it again through app.py (`view`).
Nothing here changes what a page shows: `streamlit run app.py` serves the same app, slower to
its first page.
"""
from __future__ import annotations

import ast
import gc
import importlib
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
APP = ROOT / "app.py"
CAPTURE = "profiler.capture"
# Streamlit's emoji table, which the favicon (an emoji: nothing fetched) is looked up in by every
# first script run: 0.04 s alone, ~0.2 s of a fresh server's first page when that run loads it
# ("A fresh server's first script run", bench/RESULTS.md)
EMOJI_TABLE = "streamlit.emojis"


def page_modules() -> list[str]:
    """The project's modules that the page scripts import, read from their source (not run):
    ``from profiler.x import a, b`` names ``profiler.x.a`` and ``profiler.x.b`` where those are
    modules (files of the package), else ``profiler.x``. Every module of the app glue (`ui`) too;
    not the capture layer (`CAPTURE`): torch loads when someone captures, not before."""
    from profiler.present import sitemap, ui

    names = [f"profiler.present.ui.{module}" for module in ui.MODULES]
    for page in sitemap.SITE:  # the one list of pages
        for node in ast.walk(ast.parse((ROOT / page.file).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("profiler"):
                folder = ROOT.joinpath(*node.module.split("."))
                names.append(node.module)
                names += [f"{node.module}.{a.name}" for a in node.names
                          if (folder / f"{a.name}.py").is_file() or (folder / a.name / "__init__.py").is_file()]
            elif isinstance(node, ast.Import):
                names += [a.name for a in node.names if a.name.startswith("profiler")]
    return [name for name in dict.fromkeys(names) if not name.startswith(CAPTURE)]


def server_up() -> bool:
    """Whether Streamlit's runtime has started (the server answers from about then)."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.runtime import RuntimeState

    return Runtime.exists() and Runtime.instance().state != RuntimeState.INITIAL


def warm(modules: list[str], stop: threading.Event) -> None:
    """Import each module until ``stop`` is set (a page has begun: it loads the rest itself with
    the interpreter to itself; both at once took a cold Compare from 2.5 to 3.5 s). A module that
    fails to load is left to the page that imports it, which says what is wrong."""
    for name in modules:
        if stop.is_set():
            return
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a warm-up never stops the server
            continue


def warm_up(wait_s: float = 60.0) -> None:
    """The warm-up thread: once the server is up (polled; at most ``wait_s``), a store not made
    yet made from the shipped samples (`session.unpack_samples`); over a store that existed, the
    pages' modules until a page begins (`warm`). Not over a new store: its first visit is the runs
    page, which draws its title and what the store holds before it loads its table's modules; the
    imports, while the browser loaded the front end, put that 0.4 s later and the table no sooner
    (bench/RESULTS.md, "First page on a fresh store"). Over either, first, the favicon's emoji
    table (`EMOJI_TABLE`). Nothing before the server is up: on 2 cores the imports only delayed its
    start by as much (0.8 -> 1.45 s). Then what the imports made (over a new store: the server's own
    start-up) is frozen out of the garbage collector (`gc.freeze`), as the preload does after the
    first pages: a full collection walked it all, ~60 ms, once or twice in a first page's script run
    (~12 ms after; a page that had just begun has made little yet: at worst its cyclic garbage of
    that moment is never collected)."""
    deadline = time.monotonic() + wait_s
    while not server_up() and time.monotonic() < deadline:
        time.sleep(0.02)
    warm([EMOJI_TABLE], threading.Event())
    from profiler.present.ui import session

    # a new store (the shipped samples or their seeding): the runs page's title comes first, no imports
    if not session.unpack_samples(session.db_path()) and Path(session.db_path()).exists():
        warm(page_modules(), session.PAGE_BEGUN)
    gc.freeze()  # what the start-up and the imports made, out of the collector's way


def main(argv: list[str]) -> int:
    """Start the warm-up thread, then the server (returns when it stops)."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web import cli

    PagesManager.uses_pages_directory = False
    threading.Thread(target=warm_up, name="warm-pages", daemon=True).start()
    try:
        cli.main(args=["run", str(APP), *argv], prog_name="streamlit")
    except SystemExit as done:  # click ends the command by raising it
        return done.code if isinstance(done.code, int) else 0
    return 0
