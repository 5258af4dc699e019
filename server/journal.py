"""The group event journal (docs/journal.md): JSON lines, size-rotated, written off the event loop.

`append` only adds to an in-memory batch; a flush runs at most every `interval` seconds in a worker thread,
so a reply never waits on the disk. Lines of one batch are written with one `write` call.
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

from groupcoord.server.coordinator.machine import EVENT_KEYS

log = structlog.get_logger("groupcoord.journal")

FIELDS = (EVENT_KEYS[0], "seq", *EVENT_KEYS[1:])  # ts, seq, group, event, ...


class Journal:
    def __init__(
        self, directory: Path | None, max_bytes: int = 64 * 1024 * 1024, interval: float = 0.2
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
        self.listeners: list[Callable[[dict], None]] = []  # test controls observe events (server/control)

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
        line = json.dumps({k: event.get(k) for k in FIELDS}, separators=(",", ":"))
        self._pending.append(line)
        if self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(self.interval, self._schedule_flush)

    def _schedule_flush(self) -> None:
        self._flush_handle = None
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        loop = asyncio.get_running_loop()
        self._flushing = loop.run_in_executor(self._executor, self._write, batch)

    def _write(self, batch: list[str]) -> None:
        data = ("\n".join(batch) + "\n").encode()
        with self._lock:
            if self._file is None or self._file_size + len(data) > self.max_bytes:
                self._rotate()
            self._file.write(data)
            self._file.flush()
            self._file_size += len(data)
            self.lines_written += len(batch)

    def _rotate(self) -> None:
        if self._file is not None:
            self._file.close()
        assert self.directory is not None
        while True:
            path = self.directory / f"journal-{self._start_ms}-{self._file_index:05d}.jsonl"
            self._file_index += 1
            if not path.exists():
                break
        self._file = open(path, "ab")  # noqa: SIM115 - kept open across batches
        self._file_size = 0

    async def close(self) -> None:
        """Flush everything (used on shutdown)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._flushing is not None:
            await self._flushing
        if self._pending:
            batch, self._pending = self._pending, []
            await asyncio.get_running_loop().run_in_executor(self._executor, self._write, batch)
        with self._lock:
            if self._file is not None:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
                self._file = None
        self._executor.shutdown(wait=True)
