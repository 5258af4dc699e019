"""Record batches (magic v2) as a share consumer reads them out of a ShareFetch response.

A ShareFetch partition carries whole log batches (``Records``) plus the offset ranges this member acquired
(``AcquiredRecords``). Only records inside an acquired range are delivered, each with its range's delivery
count; an acquired offset with no data record (a control record, a compacted-away offset) is a gap the
consumer acknowledges as GAP, as Kafka's ShareCompletedFetch does. This module only decodes: which offsets
are delivered is the consumer's business.

Compression: none and gzip with the standard library; snappy, lz4 and zstd when ``cramjam`` / ``lz4`` /
``zstandard`` is importable, otherwise a :class:`RecordDecodeError` that names the missing module.
"""

from __future__ import annotations

import gzip
import io
import struct
from dataclasses import dataclass

from groupcoord.protocol.primitives import WireError, r_varint, r_varlong

_HEADER = struct.Struct(">qiibIhiqqqhii")  # baseOffset .. recordsCount: 61 bytes
_CONTROL, _TRANSACTIONAL, _CODEC = 0x20, 0x10, 0x07


class RecordDecodeError(ValueError):
    """A batch this client cannot read (old magic, unknown or unavailable compression, corrupt)."""


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record of a v2 batch, before share-consumer details (topic, delivery count) are attached."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    is_control: bool


def _decompress(codec: int, data: bytes) -> bytes:
    if codec == 0:
        return data
    if codec == 1:
        return gzip.decompress(data)
    try:
        if codec == 2:
            import cramjam  # type: ignore[import-not-found]

            return bytes(cramjam.snappy.decompress_raw(_unframe_xerial(data)))
        if codec == 3:
            import lz4.frame  # type: ignore[import-not-found]

            return bytes(lz4.frame.decompress(data))
        if codec == 4:
            import zstandard  # type: ignore[import-not-found]

            return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(data))
    except ImportError as exc:
        raise RecordDecodeError(f"compression codec {codec} needs {exc.name!r}: pip install it") from exc
    raise RecordDecodeError(f"unknown compression codec {codec}")


def _unframe_xerial(data: bytes) -> bytes:
    """Kafka's Java producer wraps snappy in xerial framing; librdkafka may send it raw."""
    if not data.startswith(b"\x82SNAPPY\x00"):
        return data
    import cramjam

    out, pos = bytearray(), 16
    while pos + 4 <= len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        out += bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    return bytes(out)


def _read_bytes(stream: io.BytesIO) -> bytes | None:
    n = r_varint(stream)
    if n < 0:
        return None
    data = stream.read(n)
    if len(data) != n:
        raise RecordDecodeError("record truncated")
    return data


def decode_batches(data: bytes | None) -> list[LogRecord]:
    """Every record of every complete batch in ``data`` (a trailing partial batch is ignored, as brokers may
    cut a response inside one)."""
    out: list[LogRecord] = []
    if not data:
        return out
    pos = 0
    while pos + 12 <= len(data):
        base_offset, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            break  # partial batch at the end of the response
        if length < _HEADER.size - 12:
            raise RecordDecodeError(f"batch at offset {base_offset} is too short ({length} bytes)")
        (
            _base,
            _len,
            _leader_epoch,
            magic,
            _crc,
            attributes,
            _last_delta,
            base_ts,
            _max_ts,
            _pid,
            _pepoch,
            _seq,
            count,
        ) = _HEADER.unpack_from(data, pos)
        if magic != 2:
            raise RecordDecodeError(f"batch at offset {base_offset} has magic {magic}; only v2 is read")
        body = _decompress(attributes & _CODEC, data[pos + _HEADER.size : end])
        is_control = bool(attributes & _CONTROL)
        stream = io.BytesIO(body)
        try:
            for _ in range(count):
                r_varint(stream)  # record length
                stream.read(1)  # attributes (unused)
                ts_delta = r_varlong(stream)
                offset_delta = r_varint(stream)
                key = _read_bytes(stream)
                value = _read_bytes(stream)
                headers = []
                for _ in range(r_varint(stream)):
                    hkey = _read_bytes(stream) or b""
                    headers.append((hkey.decode("utf-8", "replace"), _read_bytes(stream)))
                out.append(
                    LogRecord(
                        base_offset + offset_delta, base_ts + ts_delta, key, value, tuple(headers), is_control
                    )
                )
        except WireError as exc:
            raise RecordDecodeError(f"batch at offset {base_offset} is corrupt: {exc}") from exc
        pos = end
    return out
