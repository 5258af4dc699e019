"""Roll closed JSONL journal files into columnar Parquet segments (docs/journal.md "Segments").

Parsing ~600 bytes of JSON per event is what bounds `groupcoord report`; a Parquet segment is read column by
column without any parsing. The coordinator keeps writing JSON lines (cheap, appendable, readable by `jq`
while it grows) and converts each file once it is closed for good: `roll_file` is the one entry point, used
by the server (in a separate process, so the conversion never holds the event loop's GIL), by
`groupcoord journal roll` and by the bench generator.

Order of a roll, so that a crash at any point loses no event: write `<name>.parquet.tmp`, fsync it, rename it
to `<name>.parquet`, fsync the directory, then delete `<name>.jsonl`. A crash leaves either the JSONL alone
(rolled again at the next start), both twins (the JSONL is deleted at the next start) or a stray `.tmp`
(deleted at the next start). pyarrow is imported only inside the functions that need it: the server process
never loads it.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import multiprocessing
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from groupcoord.server.journal.writer import FIELDS, JOURNAL_VERSION

if TYPE_CHECKING:
    import pyarrow as pa

log = structlog.get_logger("groupcoord.journal")

#: Parquet file key-value metadata naming the journal version of the segment
VERSION_KEY = "groupcoord.journal.version"
ROW_GROUP_ROWS = 128 * 1024
PARQUET_MODES = ("auto", "on", "off")
_NAME = re.compile(r"^journal-(\d+)-(\d+)\.(jsonl|parquet)$")


def pyarrow_available() -> bool:
    """Whether pyarrow can be imported, without importing it (the server never loads it itself)."""
    try:
        return importlib.util.find_spec("pyarrow") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as none
        return False


def parquet_enabled(mode: str) -> bool:
    """`--journal-parquet`: on, off, or auto (on when pyarrow is installed; says so once when it is not).
    `on` without pyarrow is refused earlier, by the config check."""
    if mode == "off":
        return False
    if mode == "auto" and not pyarrow_available():
        log.info("journal stays JSON lines: pyarrow is not installed (pip install 'groupcoord[columnar]')")
        return False
    return True


def arrow_schema() -> pa.Schema:
    """The Parquet segment schema: the pipeline's JOURNAL_SCHEMA (plus `v`), field for field."""
    import pyarrow as pa

    types: dict[str, pa.DataType] = {
        "assignment": pa.map_(pa.string(), pa.list_(pa.string())),
        "offsets": pa.map_(
            pa.string(), pa.struct([pa.field("committed", pa.int64()), pa.field("log_end", pa.int64())])
        ),
        "skip_assignment": pa.bool_(),
    }
    for name in (
        "v",
        "ts",
        "seq",
        "generation",
        "members",
        "member_epoch",
        "duration_ms",
        "acquired",
        "acknowledged",
        "released",
        "archived",
    ):
        types[name] = pa.int64()
    fields = [pa.field(name, types.get(name, pa.string())) for name in FIELDS]
    return pa.schema(fields, metadata={VERSION_KEY: str(JOURNAL_VERSION)})


@dataclass(frozen=True)
class RollResult:
    """What one roll did; `skipped` counts undecodable lines (a torn last line after a crash)."""

    source: str
    target: str
    events: int
    skipped: int
    seconds: float


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def roll_file(path: str | Path) -> RollResult:
    """Convert one closed JSONL journal file into its Parquet twin, then delete the JSONL.

    Lines that do not decode to a JSON object are skipped and counted. Rows keep the line's `v` (1 when the
    line has none). Raises on any failure, leaving the JSONL in place and no Parquet file behind.
    """
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    src = Path(path)
    dst = src.with_suffix(".parquet")
    tmp = dst.with_name(dst.name + ".tmp")
    schema = arrow_schema()
    data = src.read_bytes()
    try:
        table, skipped = _fast_table(data, schema)
    except Exception:  # torn or odd lines: parse line by line, skipping what does not decode
        table, skipped = _slow_table(data, schema)
    try:
        with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
            writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        _fsync(tmp)
        os.replace(tmp, dst)
        _fsync(dst.parent, directory=True)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    src.unlink()
    return RollResult(str(src), str(dst), table.num_rows, skipped, time.perf_counter() - t0)


_MAPS = ("assignment", "offsets")


def _fast_table(data: bytes, schema: pa.Schema) -> tuple[pa.Table, int]:
    """pyarrow's JSON reader for the flat columns (~5x faster than `json.loads` per line), `json.loads` only
    for the lines whose `assignment` or `offsets` is not null (a map: the JSON reader cannot build those).

    A trailing piece without a newline (a torn last line) is cut off and counted; anything else the reader
    rejects raises, and the caller falls back to `_slow_table`.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    end = data.rfind(b"\n") + 1
    skipped = int(bool(data[end:].strip()))
    body = data[:end]
    flat = pa.schema([f for f in schema if f.name not in _MAPS])
    read = pj.ReadOptions(use_threads=False, block_size=max(1 << 20, min(len(body) + 1, 1 << 28)))
    parse = pj.ParseOptions(
        explicit_schema=flat, unexpected_field_behavior="ignore", newlines_in_values=False
    )
    table = pj.read_json(pa.BufferReader(body), read_options=read, parse_options=parse) if body else None
    lines = body.split(b"\n")
    lines.pop()  # after the last newline
    if table is None or table.num_rows != len(lines):
        raise ValueError("line count differs from the JSON reader's rows")
    assignments: list[Any] = []
    offsets: list[Any] = []
    a_key, a_null, o_key, o_null = b'"assignment"', b'"assignment":null', b'"offsets"', b'"offsets":null'
    for line in lines:
        # '"k":null' cannot occur inside a string (quotes are escaped there), nor as a nested key's value
        if (a_null in line or a_key not in line) and (o_null in line or o_key not in line):
            assignments.append(None)
            offsets.append(None)
        else:
            row = json.loads(line)
            assignments.append(row.get("assignment"))
            offsets.append(row.get("offsets"))
    columns = {"assignment": assignments, "offsets": offsets}
    arrays = []
    for field in schema:
        if field.name in _MAPS:
            arrays.append(pa.array(columns[field.name], type=field.type))
        elif field.name == "v":
            arrays.append(pc.fill_null(table.column("v"), 1))
        else:
            arrays.append(table.column(field.name))
    return pa.Table.from_arrays(arrays, schema=schema), skipped


def _slow_table(data: bytes, schema: pa.Schema) -> tuple[pa.Table, int]:
    """Line by line with `json.loads`: every line that decodes to an object is kept, the others counted."""
    import pyarrow as pa

    rows: list[dict[str, Any]] = []
    skipped = 0
    for line in data.split(b"\n"):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
        else:
            skipped += line.strip() != b""
    arrays = []
    for field in schema:
        values = [r.get(field.name) for r in rows]
        if field.name == "v":
            values = [1 if v is None else v for v in values]
        arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema), skipped


def segment_start_ms(path: Path) -> int | None:
    m = _NAME.match(path.name)
    return int(m.group(1)) if m else None


def segment_order(path: Path) -> tuple[int, int, str]:
    """Files in the order they were written: (process start ms, file index), then name."""
    m = _NAME.match(path.name)
    return (int(m.group(1)), int(m.group(2)), path.name) if m else (-1, -1, path.name)


def recover(directory: Path, current_start_ms: int | None = None) -> list[Path]:
    """Clean up after a crash and return the closed JSONL files still to roll, oldest first.

    Deletes each JSONL whose Parquet twin exists (a crash between rename and delete) and stray `.tmp` files;
    a JSONL of `current_start_ms` (this process's own files) is never touched.
    """
    if not directory.is_dir():
        return []
    for tmp in directory.glob("*.parquet.tmp"):
        tmp.unlink(missing_ok=True)
    todo = []
    for path in directory.glob("*.jsonl"):
        if current_start_ms is not None and segment_start_ms(path) == current_start_ms:
            continue
        if path.with_suffix(".parquet").exists():
            log.info("deleting a journal file already rolled into Parquet", file=str(path))
            path.unlink(missing_ok=True)
        else:
            todo.append(path)
    return sorted(todo, key=segment_order)


def read_segment(path: Path) -> Iterator[dict[str, Any]]:
    """The events of one segment (Parquet or JSONL) as JSON-line dicts, in file order; torn lines skipped."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        maps = ("assignment", "offsets")
        for batch in pq.ParquetFile(path).iter_batches(batch_size=ROW_GROUP_ROWS):
            for row in batch.to_pylist():
                for k in maps:
                    if row.get(k) is not None:
                        row[k] = dict(row[k])
                yield row
        return
    with open(path, "rb") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                yield row


class JournalRoller:
    """The server's roll: closed files go to one worker process, created on first use ("spawn": nothing of
    the server's state is inherited). A failed roll is logged once with its context and leaves the JSONL for
    the next start; shutdown cancels queued rolls (the next start does them) and lets a running one finish."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.rolled = 0
        self.failed = 0

    def start(self, current_start_ms: int) -> None:
        """At start-up: clean up twins and roll what earlier processes left closed."""
        for path in recover(self.directory, current_start_ms):
            self.submit(path)

    def submit(self, path: Path) -> None:
        """Queue one closed file (thread-safe: the journal's writer thread calls this)."""
        with self._lock:
            if self._closed:
                return
            if self._pool is None:
                self._pool = _new_pool()
            try:
                fut = self._pool.submit(roll_file, str(path))
            except concurrent.futures.BrokenExecutor:  # the worker died (OOM kill, say): start a new one
                self._pool.shutdown(wait=False)
                self._pool = _new_pool()
                fut = self._pool.submit(roll_file, str(path))
        fut.add_done_callback(lambda f: self._done(f, path))

    def _done(self, fut: concurrent.futures.Future, path: Path) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            self.failed += 1
            log.error(
                "journal roll to Parquet failed; the JSONL file stays and is rolled at the next start",
                file=str(path),
                error=repr(exc),
            )
            return
        r: RollResult = fut.result()
        self.rolled += 1
        log.info(
            "journal file rolled to Parquet",
            file=r.target,
            events=r.events,
            seconds=round(r.seconds, 3),
        )
        if r.skipped:
            log.warning("undecodable journal lines skipped by the roll", file=r.source, lines=r.skipped)

    def close(self) -> None:
        """Cancel queued rolls and wait for the running one (blocking: call it off the event loop)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _new_pool() -> concurrent.futures.ProcessPoolExecutor:
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init,
        initargs=(os.getpid(),),
    )


def _worker_init(server_pid: int) -> None:
    """Ctrl-C reaches the whole process group: the worker leaves stopping to the server, which lets a running
    roll finish (an interrupted one would only be redone at the next start). A server killed outright (SIGKILL,
    the OOM killer) cannot stop its worker, and the worker's queue never reports the loss (it holds both ends
    of its pipes): a watchdog thread ends the worker once its parent is gone. A roll cut short that way leaves
    at most a `.tmp` file, which the next start deletes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:  # the server's pid comes from the server: it may die before this process starts
        while os.getppid() == server_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="journal-roll-watchdog", daemon=True).start()


def roll_closed(directory: Path) -> list[RollResult]:
    """`groupcoord journal roll`: in this process, every JSONL file of a stopped server, oldest first."""
    return [roll_file(p) for p in recover(directory)]
