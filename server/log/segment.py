"""One segment of a partition log: a `.log` file of whole batches plus a sparse `.index`.

A segment is named by its base offset (20 digits, as Kafka names them) and holds batches with offsets from
that base up to the next segment's base. The index maps a relative offset to a byte position every
`index_interval_bytes` of log data, so a read finds its starting batch with a binary search and a short walk.
Index entries are 8 bytes: relative offset uint32, position uint32 (big-endian).

Two backends store the bytes: `DiskFile` (a file descriptor, written with `writev`, read with `pread`) and
`MemoryFile` (a bytearray, for `--storage memory`). Everything here is synchronous and meant for the event
loop: appends and reads hit the page cache (microseconds); only `fsync` is slow, and callers run it in a
thread.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from groupcoord.server.log.batch import HEADER_SIZE, BatchHeader, parse_header

_INDEX_ENTRY = struct.Struct(">II")
INDEX_ENTRY_SIZE = _INDEX_ENTRY.size


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class MemoryFile:
    """A segment's bytes in RAM: nothing survives the process."""

    def __init__(self) -> None:
        self.buf = bytearray()

    @property
    def size(self) -> int:
        return len(self.buf)

    def append(self, parts: Sequence[bytes | memoryview]) -> None:
        for p in parts:
            self.buf += p

    def pread(self, n: int, pos: int) -> bytes:
        return bytes(memoryview(self.buf)[pos : pos + n])  # one copy, not two

    @contextmanager
    def mapped(self) -> Iterator[memoryview | bytes]:
        yield memoryview(self.buf)

    def truncate(self, size: int) -> None:
        del self.buf[size:]

    def fsync(self) -> None:
        pass

    def close(self) -> None:
        pass


class DiskFile:
    """An append-only file; `size` is tracked in memory because only this object writes it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size

    def append(self, parts: Sequence[bytes | memoryview]) -> None:
        total = sum(len(p) for p in parts)
        written = os.writev(self.fd, parts)
        if written != total:  # a short write (disk full): undo it so the file ends on a batch boundary
            os.ftruncate(self.fd, self.size)
            raise OSError(f"short write to {self.path}: {written} of {total} bytes")
        self.size += total

    def pread(self, n: int, pos: int) -> bytes:
        return os.pread(self.fd, n, pos)

    @contextmanager
    def mapped(self) -> Iterator[memoryview | bytes]:
        """A read-only map of the whole file for recovery scans (empty bytes when empty: mmap refuses 0)."""
        if self.size == 0:
            yield b""
            return
        mm = mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ)
        mv = memoryview(mm)
        try:
            yield mv
        finally:
            mv.release()
            mm.close()

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fd, size)
        self.size = size

    def fsync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Segment:
    """A log file and its in-memory sparse index (mirrored to `.index` on disk)."""

    def __init__(
        self,
        base_offset: int,
        data: DiskFile | MemoryFile,
        index_path: Path | None,
        index_interval_bytes: int,
    ) -> None:
        self.base_offset = base_offset
        self.data = data
        self.index_path = index_path
        self.index_interval_bytes = index_interval_bytes
        self.index_offsets = array("q")  # absolute offsets of indexed batches
        self.index_positions = array("q")
        self._bytes_since_index = 0
        self._index_fd = -1
        self.next_offset = base_offset  # exact for the active segment; set from the next base for others
        self.max_timestamp = -1  # -1 until known (appended to, or scanned)
        # Kafka's segment lastModified (tombstone horizon) and roll clock (segment.ms); the file's mtime on disk
        mtime = int(os.stat(data.path).st_mtime * 1000) if isinstance(data, DiskFile) else wall_ms()
        self.created_ms = mtime if data.size else wall_ms()
        self.last_modified_ms = mtime

    # -- index -----------------------------------------------------------------------------------------
    def load_index(self) -> bool:
        """Load `.index` if it looks sane (monotonic, within the file); False means rebuild by scanning."""
        if self.index_path is None or not self.index_path.exists():
            return False
        raw = self.index_path.read_bytes()
        if len(raw) % INDEX_ENTRY_SIZE:
            return False
        offsets, positions = array("q"), array("q")
        last_rel, last_pos = -1, -1
        for rel, pos in _INDEX_ENTRY.iter_unpack(raw):
            if rel <= last_rel or pos <= last_pos or pos >= self.data.size:
                return False
            offsets.append(self.base_offset + rel)
            positions.append(pos)
            last_rel, last_pos = rel, pos
        if positions:  # the last entry must point at a batch with that base offset
            head = self.data.pread(HEADER_SIZE, positions[-1])
            if len(head) < HEADER_SIZE or parse_header(head).base_offset != offsets[-1]:
                return False
        self.index_offsets, self.index_positions = offsets, positions
        self._bytes_since_index = 0
        return True

    def rebuild_index(self, headers: Sequence[BatchHeader]) -> None:
        """Recompute the index from scanned headers and rewrite `.index` (used by recovery)."""
        self.index_offsets, self.index_positions = array("q"), array("q")
        self._bytes_since_index = self.index_interval_bytes  # index the first batch
        for h in headers:
            self._maybe_index(h.base_offset, h.position, h.size)
        self.rebuild_index_file()

    def rebuild_index_file(self) -> None:
        """Atomically rewrite `.index` from the in-memory index."""
        if self.index_path is not None:
            self._close_index()
            tmp = self.index_path.with_suffix(".index.tmp")
            tmp.write_bytes(
                b"".join(
                    self._entry(o, p) for o, p in zip(self.index_offsets, self.index_positions, strict=True)
                )
            )
            os.replace(tmp, self.index_path)

    def _entry(self, offset: int, position: int) -> bytes:
        return _INDEX_ENTRY.pack(offset - self.base_offset, position)

    def _maybe_index(self, offset: int, position: int, size: int) -> bytes | None:
        entry = None
        if self._bytes_since_index >= self.index_interval_bytes or not self.index_offsets:
            self.index_offsets.append(offset)
            self.index_positions.append(position)
            self._bytes_since_index = 0
            entry = self._entry(offset, position)
        self._bytes_since_index += size
        return entry

    def _close_index(self) -> None:
        if self._index_fd >= 0:
            os.close(self._index_fd)
            self._index_fd = -1

    def lookup(self, offset: int) -> int:
        """Byte position of the last indexed batch with base offset <= `offset` (0 if none)."""
        i = bisect_right(self.index_offsets, offset) - 1
        return self.index_positions[i] if i >= 0 else 0

    # -- data ------------------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.data.size

    def append(
        self, parts: Sequence[bytes | memoryview], entries: Sequence[tuple[int, int, int, int]]
    ) -> None:
        """Append already-prefixed batch bytes; `entries` is (base_offset, size, next_offset, max_ts) each."""
        position = self.data.size
        self.data.append(parts)
        index_bytes = []
        for base, size, next_offset, max_ts in entries:
            e = self._maybe_index(base, position, size)
            if e is not None:
                index_bytes.append(e)
            position += size
            self.last_modified_ms = wall_ms()
            self.next_offset = next_offset
            if max_ts > self.max_timestamp:
                self.max_timestamp = max_ts
        if index_bytes and self.index_path is not None:
            if self._index_fd < 0:
                self._index_fd = os.open(self.index_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(self._index_fd, b"".join(index_bytes))

    def read_header(self, position: int) -> BatchHeader | None:
        head = self.data.pread(HEADER_SIZE, position)
        if len(head) < HEADER_SIZE:
            return None
        return parse_header(head, 0, position)

    def truncate(self, size: int) -> None:
        self.data.truncate(size)

    def fsync(self) -> None:
        self.data.fsync()

    def close(self) -> None:
        self._close_index()
        self.data.close()
