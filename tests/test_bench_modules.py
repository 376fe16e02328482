"""Bench scripts run as modules from the repository root (`python -m bench.ingest`): none edits
`sys.path`, and none tells its reader to run it as a file. Read from the source (nothing runs)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "bench").glob("*.py"))


def _path_edits(path: Path) -> list[int]:
    """Lines that change sys.path (`sys.path.insert(...)`, `.append(...)`, assignments)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        target = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            target = next((t for t in targets if isinstance(t, ast.Attribute)), None)
        if isinstance(target, ast.Attribute) and target.attr == "path" and getattr(target.value, "id", "") == "sys":
            found.append(node.lineno)
    return sorted(found)


def test_no_bench_script_edits_sys_path():
    bad = {p.name: lines for p in SCRIPTS if (lines := _path_edits(p))}
    assert not bad, f"run it as a module (python -m bench.NAME) instead: {bad}"


def test_usage_lines_run_scripts_as_modules():
    spelled = re.compile(r"python3? bench/\w+\.py")
    bad = [f"{p.name}: {m.group(0)}" for p in [*SCRIPTS, *(ROOT / "bench").glob("*.sh")]
           for m in spelled.finditer(p.read_text(encoding="utf-8"))]
    assert not bad, bad


def test_the_check_sees_a_path_edit(tmp_path):
    script = tmp_path / "x.py"
    script.write_text("import sys\nsys.path.insert(0, '.')\nsys.path = []\nprint(sys.path)\n")
    assert _path_edits(script) == [2, 3]
