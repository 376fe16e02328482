"""Shared test fixtures: paths to real traces and a fresh store per test."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SHARED_TRACES = ROOT.parent / "shared" / "traces"


def pytest_collection_modifyitems(config, items):
    """GPU tests need CUDA; on a machine without it they are deselected, not silently passed."""
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a requirement
        has_cuda = False
    if has_cuda:
        return
    keep = [item for item in items if "gpu" not in item.keywords]
    dropped = [item for item in items if "gpu" in item.keywords]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


@pytest.fixture
def shared_traces() -> list[Path]:
    paths = sorted(p for p in SHARED_TRACES.iterdir() if p.name.endswith((".json", ".json.gz")))
    assert paths, f"no real traces found in {SHARED_TRACES}"
    return paths


FIXTURE_TRACES = ("tiny_naive.json", "tiny_inplace.json", "tiny_old_format.json")


@pytest.fixture
def fixture_store(tmp_path: Path):
    """A real store file holding the hand-written fixture traces (naive and in-place runs
    captured on an 'H200', plus a 2020-era upload). Returns (store, {file name: trace id})."""
    from profiler.store import Store

    store = Store(tmp_path / "fixture.duckdb")
    ids = {name: store.ingest(FIXTURES / name, source="captured" if "tiny_" in name and "old" not in name
                              else "uploaded").trace_id for name in FIXTURE_TRACES}
    return store, ids


@pytest.fixture
def tiny(db_path):
    """The hand-written store of tests/tiny_store.py (rows inserted directly, no ingest)."""
    from profiler.store import Store
    from tests.tiny_store import insert_tiny

    store = Store(db_path)
    with store.connect() as con:
        insert_tiny(con)
    return store


@pytest.fixture
def labels(tiny) -> dict[str, str]:
    """{run id: label} of the tiny store's runs."""
    from profiler import charts, queries
    from tests.tiny_store import RUNS

    return charts.label_map(queries.run_labels(tiny, RUNS))
