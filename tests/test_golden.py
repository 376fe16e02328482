"""Behaviour kept: every golden output (tests/golden.py) is produced again byte for byte."""
from __future__ import annotations

import difflib

import pytest

from tests import golden
from tests.conftest import SHARED_TRACES

pytestmark = pytest.mark.third_party


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    return golden.outputs(tmp_path_factory.mktemp("golden") / "store.duckdb", golden.traces(SHARED_TRACES))


def test_the_same_outputs_exist(produced):
    assert sorted(produced) == golden.names()


@pytest.mark.parametrize("name", golden.names())
def test_each_output_is_byte_identical(produced, name):
    expected = golden.read(name)
    got = produced.get(name, "")
    if got != expected:
        diff = "".join(list(difflib.unified_diff(expected.splitlines(True), got.splitlines(True), "golden", "now"))[:60])
        pytest.fail(f"{name} changed (python -m tests.golden writes it again when that is meant):\n{diff}")
