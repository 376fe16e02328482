"""Seeding a store whose file does not exist yet (issue 40, the first page): nothing is opened
before the first page; the seeding thread creates the store and lands a small first batch."""
from __future__ import annotations

import shutil

from profiler.capture import samples
from profiler.storage.store import Store


def test_batches_start_small_then_take_the_batch_size():
    files = [f"s{i}" for i in range(45)]
    got = samples.batches(files, size=16, first=4)
    assert [len(b) for b in got] == [4, 16, 16, 9]
    assert [f for b in got for f in b] == files     # every file once, in order
    assert samples.batches([], size=16, first=4) == []


def test_a_new_store_file_is_made_by_the_seeding_thread(tmp_path):
    folder = tmp_path / "samples"
    folder.mkdir()
    for path in samples.sample_files()[:6]:
        shutil.copy(path, folder / path.name)
    db = tmp_path / "new.duckdb"
    seeding = samples.seed_in_background(Store(db), folder, new_file=True)
    assert seeding.total == 6 and not db.exists()   # nothing opened before the first page
    seeding.page_drawn()
    seeding.wait(300)
    assert seeding.error is None and seeding.done == 6
    names = set(Store(db, read_only=True).query("SELECT name FROM traces")["name"])
    assert names == {samples.sample_name(p) for p in folder.iterdir()}
