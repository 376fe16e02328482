"""The store's schema: `schema.sql` beside this file, every table and every column with its unit.
A leaf, so that the store and the job checks (which read rank files against these tables) both
take it from one place."""
from __future__ import annotations

from pathlib import Path

SCHEMA_SQL = Path(__file__).with_name("schema.sql")
