"""torch loads only when a capture is set up (issue 40): every page opened in a fresh process
(AppTest, app.py, the page store's runs selected) leaves it out of sys.modules; the profile page's
"Set up a capture" button loads it, under a progress message, and then offers the variants.

The pages run in a child process of their own: this test process has imported torch already
(other tests import the capture layer).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.pages.conftest import PAGE_FILE, ROOT

CHILD = """
import json, sys
from streamlit.testing.v1 import AppTest
runs, files = sys.argv[1], json.loads(sys.argv[2])
seen = {}
for page, file in files.items():
    at = AppTest.from_file("app.py", default_timeout=120)
    at.query_params["runs"] = runs
    if page != "runs":
        at.switch_page(file)
    at.run()
    seen[page] = {"torch": "torch" in sys.modules, "errors": [str(e.value) for e in at.exception],
                  "buttons": [b.label for b in at.button]}
profile = AppTest.from_file("app.py", default_timeout=300)
profile.switch_page(files["profile"])
profile.run()
next(b for b in profile.button if b.label == "Set up a capture").click()
profile.run()
seen["after the button"] = {
    "torch": "torch" in sys.modules, "errors": [str(e.value) for e in profile.exception],
    "status": [s.label for s in profile.status],
    "variants": [m.label for m in profile.multiselect], "buttons": [b.label for b in profile.button]}
print(json.dumps(seen))
"""


@pytest.mark.slow  # a child process that opens every page, then imports torch
def test_no_page_imports_torch_until_a_capture_is_set_up(page_store, run_ids):
    runs = ",".join(list(run_ids.values())[:2])
    env = {**os.environ, "PROFILER_SEED": "0"}  # PROFILER_DB: the page store's copy (page_store)
    out = subprocess.run([sys.executable, "-c", CHILD, runs, json.dumps(PAGE_FILE)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    opened = {page: s for page, s in seen.items() if page != "after the button"}
    assert set(opened) == set(PAGE_FILE)  # every page of the sitemap
    assert not [page for page, s in opened.items() if s["errors"]], opened
    assert not [page for page, s in opened.items() if s["torch"]], opened
    assert "Set up a capture" in opened["profile"]["buttons"]
    after = seen["after the button"]
    assert after["torch"] and not after["errors"], after
    assert after["status"] == ["PyTorch loaded."], after  # the progress message, finished
    assert "variants" in after["variants"] and "Run capture" in after["buttons"], after
