"""A private, temporary DuckDB file that one ingest streams its rows into before they are copied
into the store: nesting, iterations and launch links are computed here, away from the store lock."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from profiler import trace
from profiler.nesting import nest

STAGING_MEMORY_LIMIT = "384MB"  # beyond this DuckDB spills to the staging file

_U64 = {"correlation", "external_id", "bytes"}
_F64 = {"blocks_per_sm", "warps_per_sm", "est_occupancy_pct", "bandwidth_gbps"}
_STR = {"name", "kind", "api_kind", "pid", "tid", "cat"}
_I32 = {"device", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread", "cbid"}


def _arrow_type(column: str) -> pa.DataType:
    if column in _U64:
        return pa.uint64()
    if column in _F64:
        return pa.float64()
    if column in _STR:
        return pa.string()
    if column in _I32:
        return pa.int32()
    return pa.int64()


SCHEMAS = {
    table: pa.schema([(c, _arrow_type(c)) for c in columns]) for table, columns in trace.COLUMNS.items()
}


@dataclass(frozen=True)
class Span:
    start_ns: int | None
    end_ns: int | None
    kernels: int


class Staging:
    def __init__(self, path: Path):
        self.path = path
        self.catalog = path.stem  # DuckDB names a database file's catalog after its stem
        self.con = duckdb.connect(str(path), config={"memory_limit": STAGING_MEMORY_LIMIT})
        self.con.execute((Path(__file__).with_name("sql") / "ingest" / "stage_tables.sql").read_text())

    def add(self, batch: trace.Batch) -> None:
        for table, rows in batch.rows.items():
            if rows:
                self._append(table, rows)

    def _append(self, table: str, rows: list[tuple]) -> None:
        schema = SCHEMAS[table]
        columns = [pa.array(values, type=f.type) for values, f in zip(zip(*rows), schema)]
        data = pa.Table.from_arrays(columns, schema=schema)  # noqa: F841 - scanned by name below
        self.con.execute(f"INSERT INTO {table} SELECT * FROM data")

    def finish(self, sql: Callable[[str], str]) -> Span:
        """Nest ops, find iterations and link launches; returns the trace's time span."""
        self._nest_ops()
        self._iterations(sql)
        self.con.execute(sql("stage_launch_iteration"))
        start, end, kernels = self.con.execute(sql("trace_span")).fetchone()
        self.con.execute("CHECKPOINT")
        return Span(start, end, kernels)

    def _nest_ops(self) -> None:
        ops = self.con.sql(
            "SELECT op_id, pid, tid, ts_ns, dur_ns FROM ops ORDER BY pid, tid, ts_ns, dur_ns DESC, op_id"
        ).to_arrow_table()
        op_ids = ops["op_id"].to_pylist()
        lanes = list(zip(ops["pid"].to_pylist(), ops["tid"].to_pylist()))
        parents, depths, selfs = nest(lanes, ops["ts_ns"].to_pylist(), ops["dur_ns"].to_pylist())
        nested = pa.table({
            "op_id": pa.array(op_ids, pa.int64()),
            "parent_id": pa.array([None if p is None else op_ids[p] for p in parents], pa.int64()),
            "depth": pa.array(depths, pa.int32()),
            "self_ns": pa.array(selfs, pa.int64()),
        })
        del ops, lanes, parents, depths, selfs
        self.con.execute("INSERT INTO op_nest SELECT * FROM nested")

    def _iterations(self, sql: Callable[[str], str]) -> None:
        for name in ("iterations_profiler_step", "iterations_repeated_annotation", "iterations_whole_trace"):
            self.con.execute(f"CREATE OR REPLACE TABLE iterations AS {sql(name)}")
            if self.con.execute("SELECT count(*) FROM iterations").fetchone()[0]:
                return

    def close(self) -> None:
        self.con.close()
