"""The samples shipped already ingested (data/samples.duckdb.gz): the same rows seeding makes, a
new store made from it in one step, and the samples ingested as before whenever it does not match.

`python -m profiler.cli.samples` builds it again; the first test below fails, naming the
table, when the samples or what ingest stores have changed since.
"""
from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import duckdb
import pandas as pd

from profiler.capture import samples
from profiler.storage import completeness, metrics, migrations
from profiler.storage.migrations import SCHEMA_VERSION
from profiler.storage.store import Store

# when a row was written, not what it says
VOLATILE = {"traces": ["added_at"], "counter_reports": ["attached_at"], "gpu_ceilings": ["measured_at"],
            "job_summaries": ["written_at"]}


def _unpacked(tmp_path: Path) -> Path:
    path = tmp_path / "new" / "store.duckdb"
    assert samples.unpack_shipped(path)
    return path


def _tables(con) -> list[str]:
    return [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                                      "AND table_type = 'BASE TABLE' ORDER BY 1").fetchall()]


def _rows(con, table: str) -> pd.DataFrame:
    drop = VOLATILE.get(table, [])
    cols = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                      "ORDER BY ordinal_position", [table]).fetchall() if c not in drop]
    listed = ", ".join(f'"{c}"' for c in cols)
    return con.execute(f'SELECT {listed} FROM "{table}" ORDER BY ALL').df()


def test_the_shipped_store_holds_what_seeding_the_samples_stores(seeded_samples, tmp_path):
    seeded, added, _ = seeded_samples
    shipped = duckdb.connect(str(_unpacked(tmp_path)), read_only=True)
    fresh = duckdb.connect(str(seeded.path), read_only=True)
    try:
        assert _tables(shipped) == _tables(fresh)
        assert shipped.execute("SELECT count(*) FROM traces").fetchone()[0] == added == len(samples.sample_files())
        for table in _tables(fresh):
            if table == "store_meta":
                continue
            ours, theirs = _rows(shipped, table), _rows(fresh, table)
            assert len(ours) == len(theirs), f"{table}: {len(ours)} rows shipped, {len(theirs)} seeded " \
                                             "(python -m profiler.cli.samples builds it again)"
            pd.testing.assert_frame_equal(ours, theirs, check_exact=False, rtol=1e-9, obj=table)
    finally:
        shipped.close()
        fresh.close()


def test_a_store_opened_from_it_needs_no_upgrade(tmp_path):
    """Its schema and the definitions of what is kept per run are the program's: the first page
    does not rewrite them."""
    con = duckdb.connect(str(_unpacked(tmp_path)), read_only=True)
    meta = dict(con.execute("SELECT key, value FROM store_meta").fetchall())
    con.close()
    assert meta == {"schema_version": str(SCHEMA_VERSION), migrations.SCHEMA_KEY: migrations.schema_digest(),
                    metrics.VERSION_KEY: metrics.definition_digest(),
                    completeness.VERSION_KEY: completeness.definition_digest()}


def test_its_index_names_these_samples_and_this_duckdb():
    assert samples.shipped_matches()
    assert samples.SHIPPED.stat().st_size < 4 * 2**20  # a small part of the checkout


def test_unpacking_makes_a_new_store_and_never_touches_an_existing_file(tmp_path):
    path = _unpacked(tmp_path)
    assert len(Store(path).query("SELECT run_id FROM traces")) == len(samples.sample_files())
    other = tmp_path / "taken.duckdb"
    other.write_bytes(b"somebody else's file")
    assert not samples.unpack_shipped(other)
    assert other.read_bytes() == b"somebody else's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "taken.duckdb"]  # no part left behind
    assert sorted(p.name for p in path.parent.iterdir()) == ["store.duckdb"]


def _copy_samples(tmp_path: Path) -> Path:
    folder = tmp_path / "samples"
    shutil.copytree(samples.SAMPLES_DIR, folder)
    return folder


def test_samples_changed_since_it_was_built_are_ingested_instead(tmp_path):
    folder = _copy_samples(tmp_path)
    assert samples.shipped_matches(folder)
    first = samples.sample_files(folder)[0]
    first.write_bytes(gzip.compress(gzip.decompress(first.read_bytes()) + b" "))  # one byte more
    assert not samples.shipped_matches(folder)
    assert not samples.unpack_shipped(tmp_path / "store.duckdb", folder)
    assert not (tmp_path / "store.duckdb").exists()


def test_another_duckdb_or_a_damaged_copy_is_not_used(tmp_path):
    index = tmp_path / "index.json"
    index.write_text(samples.SHIPPED_INDEX.read_text().replace(samples.duckdb_version(), "0.0.1"))
    assert not samples.unpack_shipped(tmp_path / "a.duckdb", index=index)
    damaged = tmp_path / "damaged.duckdb.gz"
    damaged.write_bytes(samples.SHIPPED.read_bytes()[:100_000])
    assert not samples.unpack_shipped(tmp_path / "b.duckdb", shipped=damaged)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.duckdb.gz", "index.json"]


def test_the_samples_digest_reads_names_and_bytes(tmp_path):
    folder = _copy_samples(tmp_path)
    before = samples.samples_digest(folder)
    ncu = next(folder.rglob("*.ncu.csv"))
    ncu.rename(ncu.with_name("renamed.ncu.csv"))
    assert samples.samples_digest(folder) != before
    assert before == samples.samples_digest() != hashlib.sha256(b"").hexdigest()
