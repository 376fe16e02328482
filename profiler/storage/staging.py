"""One ingest's rows, held as compact Arrow columns until they are copied into the store.

Parsing fills these (a few dozen bytes a row, far less than the JSON they came from); ops are
nested here; then the store scans them in place (DuckDB reads Arrow without copying) inside the
one transaction that writes the trace, so the store file is held only for that copy.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profiler.parse import trace
from profiler.parse.nesting import innermost, nest

if TYPE_CHECKING:  # a chunk's worker stages rows without DuckDB
    import duckdb


class _PandasOutOfReach:
    """An import hook that makes pandas look absent (see `_first_array_without_pandas`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is not needed to stage rows", name=name)


def _first_array_without_pandas() -> None:
    """pyarrow imports pandas (0.17-0.19 s here) the first time it builds an array from a Python
    list, only to ask whether the list is a pandas object, and staging never hands it one. Where
    pandas is not loaded yet (the ingest command, its workers), that first array is built with
    pandas out of reach, and pyarrow does not ask again in this process. pandas still loads when
    something imports it (a query's DataFrame); only a pandas object given to `pa.array` after that
    would go unrecognised, and nothing in an ingest does that."""
    if "pandas" in sys.modules:
        return
    hook = _PandasOutOfReach()
    sys.meta_path.insert(0, hook)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(hook)


_first_array_without_pandas()

_U64 = {"correlation", "external_id", "bytes", "addr", "in_msg_nelems", "out_msg_nelems"}
_F64 = {"blocks_per_sm", "warps_per_sm", "est_occupancy_pct", "bandwidth_gbps"}
# text that repeats (names; ops' shapes and types, the same at every step): each distinct value kept
# once per chunk; other text plain
_REPEATED = {"name", "cat", "kind", "api_kind", "input_dims", "input_types", "concrete_inputs", "collective",
             "msg_dtype"}
_STR = {"pid", "tid"}
_I32 = {"device", "device_type", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
        "registers_per_thread", "cbid", "group_size"}
# ops that only allocate or copy for their caller: a [memory] event inside one is credited to the
# op around it (aten::bmm, not aten::empty_strided). SQL LIKE patterns ('_' matches any character).
NOT_MAKERS_LIKE = ("aten::empty%", "aten::new_empty%")
NOT_MAKERS = ("aten::resize_", "aten::clone", "aten::contiguous")
_INT_RANGE = {pa.uint64(): (0, 2**64), pa.int32(): (-(2**31), 2**31), pa.int64(): (-(2**63), 2**63)}


def _arrow_type(column: str) -> pa.DataType:
    if column in _REPEATED:
        return pa.dictionary(pa.int32(), pa.string())
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


def _array(values: list, kind: pa.DataType) -> tuple[pa.Array, int]:
    """An Arrow column of the given type, and how many values could not be stored in it. Values as
    written in odd traces (numbers as strings, hex such as "0x0") are coerced one by one; those
    that cannot be (out of the column's range, not numbers) become missing and are counted."""
    if pa.types.is_dictionary(kind):
        array, bad = _array(values, kind.value_type)
        return array.dictionary_encode(), bad
    try:
        return pa.array(values, type=kind), 0
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    if kind == pa.string():  # thread ids are mostly integers: let Arrow format them
        try:
            return pa.array(values, type=pa.int64()).cast(pa.string()), 0
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    coerced = [_coerce(v, kind) for v in values]
    bad = sum(1 for v, c in zip(values, coerced) if v is not None and c is None)
    return pa.array(coerced, type=kind), bad


def _cut_text(array: pa.Array) -> tuple[pa.Array, int]:
    """A text column with every value longer than trace.MAX_NAME_CHARS cut there and marked (as
    the reader cuts event names: lane names, pid / tid strings and text args too), and how many
    values were cut."""
    if pa.types.is_dictionary(array.type):
        words, cut = _cut_text(array.dictionary)
        if not cut:
            return array, 0
        long = pc.greater(pc.utf8_length(array.dictionary), trace.MAX_NAME_CHARS).take(array.indices)
        return pa.DictionaryArray.from_arrays(array.indices, words), pc.sum(long).as_py() or 0
    if not pa.types.is_string(array.type) or not len(array):
        return array, 0
    lengths = pc.utf8_length(array)
    if (pc.max(lengths).as_py() or 0) <= trace.MAX_NAME_CHARS:
        return array, 0
    long = pc.fill_null(pc.greater(lengths, trace.MAX_NAME_CHARS), False)
    short = pc.binary_join_element_wise(pc.utf8_slice_codeunits(array, 0, trace.MAX_NAME_CHARS), trace.TRUNCATED, "")
    return pc.if_else(long, short, array), pc.sum(long).as_py()


def _coerce(value: Any, kind: pa.DataType) -> Any:
    if value is None:
        return None
    if kind == pa.string():
        return str(value)
    try:
        number = int(value, 0) if isinstance(value, str) and kind in _INT_RANGE else float(value)
    except (TypeError, ValueError):
        return None
    if kind == pa.float64():
        return number if abs(number) < float("inf") else None
    low, high = _INT_RANGE[kind]
    integral = number == number and abs(number) != float("inf") and number == int(number)
    return int(number) if integral and low <= number < high else None


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    return column.to_numpy()


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    """Integer codes for a string column (equal strings, equal codes; NULL is -1)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    return pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64)


def _lanes(pids: np.ndarray, tids: np.ndarray) -> np.ndarray:
    """One integer per (pid, tid) pair of `_codes` (a missing pid or tid, -1, is a value too)."""
    return pids * (int(tids.max(initial=0)) + 2) + tids


@dataclass(frozen=True)
class Span:
    start_ns: int | None
    end_ns: int | None
    kernels: int


class Staging:
    def __init__(self) -> None:
        self._batches: dict[str, list[pa.RecordBatch]] = {table: [] for table in SCHEMAS}
        self.tables: dict[str, pa.Table] = {}
        self.missing: dict[str, int] = {}  # "table.column" -> values that became missing
        self.cut: dict[str, int] = {}  # "table.column" -> text values cut at trace.MAX_NAME_CHARS
        self.shared_correlation = 0  # launch calls whose correlation id an earlier call had: unlinked

    def add(self, batch: trace.Batch) -> None:
        for table, columns in batch.items():
            schema = SCHEMAS[table]
            arrays = []
            for f in schema:
                array, bad = _array(columns[f.name], f.type)
                array, cut = _cut_text(array)
                key = f"{table}.{f.name}"
                if bad:
                    self.missing[key] = self.missing.get(key, 0) + bad
                if cut:
                    self.cut[key] = self.cut.get(key, 0) + cut
                arrays.append(array)
            self._batches[table].append(pa.RecordBatch.from_arrays(arrays, schema=schema))

    def add_table(self, table: str, rows: pa.Table) -> None:
        """Rows already staged elsewhere (a chunk of the same file, parsed by another worker)."""
        self._batches[table].extend(rows.cast(SCHEMAS[table]).to_batches())

    def staged(self) -> dict[str, pa.Table]:
        """The rows added so far, per table (before `finish`: ops not yet nested)."""
        return {t: pa.Table.from_batches(b, schema=SCHEMAS[t]) for t, b in self._batches.items()}

    def notes(self) -> list[str]:
        """One line per column with values that could not be stored, e.g. '2 values of
        kernels.grid_x out of range or not numbers: stored as missing'."""
        notes = [f"{n:,} value{'s' * (n != 1)} of {key} out of range or not numbers: stored as missing"
                 for key, n in self.missing.items()]
        notes += [f"{n:,} value{'s' * (n != 1)} of {key} longer than {trace.MAX_NAME_CHARS >> 10} KiB cut short"
                  for key, n in self.cut.items()]
        if n := self.shared_correlation:
            notes.append(f"{n:,} launch call{'s' * (n != 1)} repeating an earlier call's correlation id: "
                         "stored without it (one launch per id)")
        return notes

    def finish(self) -> Span:
        """Assemble the tables, nest the ops, and return the trace's time span."""
        for table, batches in self._batches.items():
            self.tables[table] = pa.Table.from_batches(batches, schema=SCHEMAS[table])
        self._batches.clear()
        self.tables["ops"] = self._nest_ops(self.tables["ops"])
        self.tables["launches"] = self._one_launch_per_correlation(self.tables["launches"])
        memory = self.tables["memory"]  # event_idx: the order in the file (ties in time stay ordered)
        memory = memory.append_column("event_idx", pa.array(np.arange(memory.num_rows)))
        self.tables["memory"] = memory.append_column("op_id", self._makers(self.tables["ops"], memory))
        names = self.tables["lane_names"]  # a later name for the same lane replaces an earlier one
        self.tables["lane_names"] = names.append_column("event_idx", pa.array(np.arange(names.num_rows)))
        # the nesting's temporaries leave Arrow's allocator now, not after the store's copy: for a
        # 500 MB trace of a million ops that is ~130 MB less at the peak (bench/RESULTS.md)
        pa.default_memory_pool().release_unused()
        return self._span()

    @staticmethod
    def _nest_ops(ops: pa.Table) -> pa.Table:
        """The ops with their parent_id, depth and self_ns columns (op_id is the row number)."""
        order = ops.select(["op_id", "pid", "tid", "ts_ns", "dur_ns"]).sort_by(
            [("pid", "ascending"), ("tid", "ascending"), ("ts_ns", "ascending"),
             ("dur_ns", "descending"), ("op_id", "ascending")])
        pid, tid = (_codes(order[c]) for c in ("pid", "tid"))
        lanes = _lanes(pid, tid)
        parents, depths, selfs = nest(lanes, _numpy(order["ts_ns"]), _numpy(order["dur_ns"]))
        op_ids = _numpy(order["op_id"])
        del order, pid, tid, lanes
        nested = {"parent_id": np.where(parents < 0, -1, op_ids[np.maximum(parents, 0)]),
                  "depth": depths, "self_ns": selfs}
        for name, values in nested.items():
            column = np.empty_like(values)
            column[op_ids] = values  # back to row order
            array = pa.array(column, mask=column < 0) if name == "parent_id" else pa.array(column)
            ops = ops.append_column(name, array)
        return ops

    def _one_launch_per_correlation(self, launches: pa.Table) -> pa.Table:
        """Launches with their correlation id kept on the first call (by start, then file order)
        of each id and cleared on the others (counted): a kernel links to one launch, so that
        joins on correlation never multiply (3,000 calls and 3,000 kernels of one id were 9 M rows)."""
        ids = launches["correlation"].combine_chunks()
        if ids.null_count == len(ids) or pc.count_distinct(ids).as_py() == len(ids) - ids.null_count:
            return launches
        codes = _codes(launches["correlation"])
        order = np.lexsort((np.arange(len(ids)), _numpy(launches["ts_ns"]), codes))
        codes = codes[order]
        repeat = np.zeros(len(ids), dtype=bool)
        repeat[order[1:]] = (codes[1:] == codes[:-1]) & (codes[1:] >= 0)
        self.shared_correlation += int(repeat.sum())
        index = launches.schema.get_field_index("correlation")
        return launches.set_column(index, "correlation", pc.if_else(pa.array(repeat), pa.nulls(len(ids), pa.uint64()), ids))

    @staticmethod
    def _makers(ops: pa.Table, memory: pa.Table) -> pa.Array:
        """Each [memory] event's maker: the op_id of the innermost (deepest) cpu_op on the same
        (pid, tid) whose span [ts_ns, ts_ns + dur_ns] holds the event, both ends included, leaving
        out the ops of NOT_MAKERS_LIKE / NOT_MAKERS; of several at that depth (an op ending at the
        event and its sibling starting at it), the one that starts first. Missing where no such op
        holds the event, or the event or op has no pid or tid (as an SQL join on them)."""
        def not_maker(names: pa.Array) -> pa.Array:  # as SQL: a missing name is missing here
            like = [pc.match_like(names, p) for p in NOT_MAKERS_LIKE]
            return pc.or_(pc.or_(*like), pc.is_in(names, pa.array(NOT_MAKERS), skip_nulls=True))
        excluded = pa.chunked_array([not_maker(c.dictionary).take(c.indices) for c in ops["name"].chunks], pa.bool_())
        eligible = pc.fill_null(pc.and_(pc.equal(ops["cat"], "cpu_op"), pc.invert(excluded)), False)
        pids, tids = (_codes(pa.chunked_array(ops[c].chunks + memory[c].chunks, pa.string())) for c in ("pid", "tid"))
        lanes = np.where((pids < 0) | (tids < 0), -1, _lanes(pids, tids))
        op_lanes, event_lanes = lanes[:ops.num_rows], lanes[ops.num_rows:]
        keep = eligible.to_numpy(zero_copy_only=False) & (op_lanes >= 0)
        at = np.flatnonzero(event_lanes >= 0)
        starts = _numpy(ops["ts_ns"])[keep]
        found = innermost(op_lanes[keep], starts, starts + _numpy(ops["dur_ns"])[keep], _numpy(ops["depth"])[keep],
                          event_lanes[at], _numpy(memory["ts_ns"])[at])
        op_ids = np.full(memory.num_rows, -1, dtype=np.int64)
        op_ids[at] = np.where(found < 0, -1, _numpy(ops["op_id"])[keep][np.maximum(found, 0)])
        return pa.array(op_ids, mask=op_ids < 0)

    def _span(self) -> Span:
        starts, ends = [], []
        for name in ("ops", "launches", "kernels", "memops"):
            t = self.tables[name]
            if t.num_rows:
                starts.append(pc.min(t["ts_ns"]).as_py())
                ends.append(pc.max(pc.add(t["ts_ns"], t["dur_ns"])).as_py())
        return Span(min(starts, default=None), max(ends, default=None), self.tables["kernels"].num_rows)



def _tagged(table: pa.Table, run_id: str) -> pa.Table:
    """`table` with a first column `run_id` holding `run_id` on every row (dictionary-encoded:
    4 bytes a row, the id once); its other columns are not copied."""
    ids = pa.DictionaryArray.from_arrays(pa.array(np.zeros(table.num_rows, dtype=np.int32)), pa.array([run_id]))
    return table.add_column(0, "run_id", ids)


class StagedBatch:
    """The staged rows of one or more finished traces (`Staging.finish`), table by table, each
    row tagged with its run's id: what the store's ingest SQL (sql/ingest/*.sql) reads as
    stage_<table>, so that one statement per table stores every run of the batch. Concatenating
    does not copy the rows (each run's Arrow columns are chunks of the batch's). With `take`, the
    rows leave the runs' Stagings, so that each table's memory goes once it is copied (`release`);
    otherwise the Stagings keep them (to store the runs one by one should the batch fail)."""

    def __init__(self, runs: list[tuple[str, Staging]], *, take: bool = False):
        self.run_ids = [run_id for run_id, _ in runs]
        names = list(runs[0][1].tables) if runs else []
        self.tables: dict[str, pa.Table] = {
            name: pa.concat_tables([_tagged(staging.tables[name], run_id) for run_id, staging in runs])
            for name in names}
        if take:
            for _, staging in runs:
                staging.tables.clear()

    def register(self, con: duckdb.DuckDBPyConnection) -> None:
        """Make the staged tables visible to `con` as stage_<table> (this connection only)."""
        for name, table in self.tables.items():
            con.register(f"stage_{name}", table)

    def release(self, con: duckdb.DuckDBPyConnection, name: str) -> None:
        """Drop a staged table once it has been copied (its rows stay held by the runs' Stagings
        until they go too)."""
        con.unregister(f"stage_{name}")
        del self.tables[name]
