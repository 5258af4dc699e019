"""The group event journal (docs/journal.md): JSON lines, size-rotated, written off the event loop.

`append` only adds to an in-memory batch; a flush runs at most every `interval` seconds in a worker thread,
so a reply never waits on the disk. Lines of one batch are written with one `write` call.

The journal is a record of what happened, never a condition of answering: a failed write (a full disk, say)
drops that batch (the file is cut back to its last whole batch), is logged once with its context (file,
lines, error) until writes succeed again, and the next batch starts a fresh file. Lines waiting for the worker are capped at `max_pending`; beyond it
the oldest are dropped and counted, so a stalled disk cannot grow memory without bound.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from groupcoord.server.coordinator.context import EVENT_KEYS

log = structlog.get_logger("groupcoord.journal")

#: The journal format version (docs/journal.md "Versions"), written as the first field `v` of every line and
#: as the `v` column and file metadata of Parquet segments. Lines without `v` are version 1.
JOURNAL_VERSION = 2

FIELDS = ("v", EVENT_KEYS[0], "seq", *EVENT_KEYS[1:])  # v, ts, seq, group, event, ...
EVENT_FIELDS = FIELDS[1:]  # what an event carries; `v` is the writer's


class Journal:
    def __init__(
        self,
        directory: Path | None,
        max_bytes: int = 64 * 1024 * 1024,
        interval: float = 0.2,
        max_pending: int = 1_000_000,
    ) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.interval = interval
        self._pending: list[str] = []
        self._seq = 0
        self._file_index = 0
        self._file: Any = None
        self._file_size = 0
        self._lock = threading.Lock()
        # one worker thread: batches reach the file in the order they were appended
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")
        self._flush_handle: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Future | None = None
        self._start_ms = 0
        self.lines_written = 0
        self.max_pending = max_pending
        self.lines_dropped = 0  # lost to failed writes or to the pending cap
        self.failing: str | None = None  # the error of the current run of failed writes, if any
        self._dropped_in_failure = 0
        self.listeners: list[Callable[[dict], None]] = []  # test controls observe events (server/control)
        #: called (in the writer thread) with each file closed for good: rotated away or cut after a failed
        #: write; never appended to again. The Parquet roll (server/journal_roll.py) hooks in here.
        self.on_closed: Callable[[Path], None] | None = None

    def open(self, start_ms: int) -> None:
        self._start_ms = start_ms
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)

    def append(self, event: dict) -> None:
        for listener in self.listeners:
            listener(event)
        if self.directory is None:
            return
        self._seq += 1
        event["seq"] = self._seq
        line = json.dumps(
            {"v": JOURNAL_VERSION, **{k: event.get(k) for k in EVENT_FIELDS}}, separators=(",", ":")
        )
        self._pending.append(line)
        if len(self._pending) > self.max_pending:
            drop = len(self._pending) - self.max_pending
            del self._pending[:drop]
            self.lines_dropped += drop
            self._dropped_in_failure += drop
        if self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(self.interval, self._schedule_flush)

    def _schedule_flush(self) -> None:
        self._flush_handle = None
        if not self._pending:
            return
        if self._flushing is not None and not self._flushing.done():
            # the previous batch is still on its way to the disk: try again later, keeping order
            self._flush_handle = asyncio.get_running_loop().call_later(self.interval, self._schedule_flush)
            return
        batch, self._pending = self._pending, []
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._executor, self._write, batch)
        fut.add_done_callback(lambda f: self._written(f, len(batch)))
        self._flushing = fut

    def _written(self, fut: asyncio.Future, lines: int) -> None:
        """Log the first failure of a run of failed writes with its context, and the recovery; never raise."""
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is None:
            if self.failing is not None:
                log.warning(
                    "journal writes succeed again",
                    lines_dropped=self._dropped_in_failure,
                    previous_error=self.failing,
                )
                self.failing = None
                self._dropped_in_failure = 0
            return
        self.lines_dropped += lines
        self._dropped_in_failure += lines
        if self.failing is None:
            self.failing = repr(exc)
            log.error(
                "journal write failed; dropping events until writes succeed again",
                directory=str(self.directory),
                file=self._file_name,
                lines=lines,
                error=repr(exc),
            )

    @property
    def _file_name(self) -> str | None:
        return getattr(self._file, "name", None)

    def _write(self, batch: list[str]) -> None:
        data = ("\n".join(batch) + "\n").encode()
        with self._lock:
            try:
                if self._file is None or self._file_size + len(data) > self.max_bytes:
                    self._rotate()
                view = memoryview(data)
                while view:  # unbuffered: a short write (the disk filling up) is seen, not hidden
                    view = view[self._file.write(view) :]
            except BaseException:
                self._discard_file()
                raise
            self._file_size += len(data)
            self.lines_written += len(batch)

    def _discard_file(self) -> None:
        """After a failed write: cut the file back to its last whole batch (a batch is on disk entirely or
        not at all) and close it; the next batch starts a fresh file."""
        f, self._file = self._file, None
        if f is None:
            return
        try:
            os.ftruncate(f.fileno(), self._file_size)
        except OSError as exc:
            log.error("cannot cut a failed journal batch off", file=f.name, error=repr(exc))
        try:
            f.close()
        except OSError:
            pass  # nothing is buffered (the file is unbuffered)
        self._closed(Path(f.name))

    def _closed(self, path: Path) -> None:
        if self.on_closed is not None:
            try:
                self.on_closed(path)
            except Exception as exc:  # the roll is an optimisation: never fail a journal write for it
                log.error("cannot hand a closed journal file to the roll", file=str(path), error=repr(exc))

    def _rotate(self) -> None:
        if self._file is not None:
            self._file.close()
            self._closed(Path(self._file.name))
        assert self.directory is not None
        while True:
            path = self.directory / f"journal-{self._start_ms}-{self._file_index:05d}.jsonl"
            self._file_index += 1
            if not path.exists():
                break
        self._file = open(path, "ab", buffering=0)  # noqa: SIM115 - kept open across batches
        self._file_size = 0

    async def close(self) -> None:
        """Flush everything (used on shutdown)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)  # failures were logged by _written
        if self._pending:
            batch, self._pending = self._pending, []
            fut = asyncio.get_running_loop().run_in_executor(self._executor, self._write, batch)
            fut.add_done_callback(lambda f: self._written(f, len(batch)))
            await asyncio.gather(fut, return_exceptions=True)
        with self._lock:
            if self._file is not None:
                try:
                    os.fsync(self._file.fileno())
                except OSError as exc:
                    log.error("journal flush at shutdown failed", file=self._file_name, error=repr(exc))
                self._file.close()
                self._file = None
        self._executor.shutdown(wait=True)
