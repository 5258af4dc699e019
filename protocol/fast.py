"""Hand-written decoders for the hottest requests beside the declared codec (which stays the schema's source
and the decoder of everything else): Heartbeat, the steady-state ConsumerGroupHeartbeat (and its answer),
and OffsetCommit bodies (issue 28).

A Heartbeat is ~60 bytes of four fields; going through the general codec (a stream, the compiled construct
parser, two dataclasses) costs several times the work of reading them with `struct`. These functions read
the common shape only: lengths that fit one varint byte, no tagged fields, nothing after the last field,
valid UTF-8. Anything else returns None and the request takes the general path, so the two can never
disagree on a frame both accept (tests/protocol/test_fast.py, test_fast_consumer_group.py and
test_fast_offset_commit.py check them against the codec on generated requests of every version).

`frame` is a request frame without its size prefix, as the dispatcher gets it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from groupcoord.protocol.columns import Columns
from groupcoord.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
)
from groupcoord.protocol.messages.offset_fetch import OffsetFetchResponse, OffsetFetchResponsePartitions

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

#: (group_id, generation_id, member_id, group_instance_id)
HeartbeatFields = tuple[str, int, str, str | None]


def _body_start(frame: bytes, flexible: bool) -> int:
    """Where the body starts after a request header v1 (v2 when flexible: plus an empty tag section)."""
    n: int = _I16.unpack_from(frame, 8)[0]
    if n < -1:
        return -1
    pos = 10 + max(n, 0)
    if flexible:
        if len(frame) <= pos or frame[pos] != 0:
            return -1
        pos += 1
    return pos


def parse_heartbeat(frame: bytes, version: int) -> HeartbeatFields | None:
    """The fields of a Heartbeat request of `version` (0-4), or None for the general decoder to handle."""
    try:
        if version < 4:
            pos = _body_start(frame, False)
            if pos < 0:
                return None
            n = _I16.unpack_from(frame, pos)[0]
            if n < 0:
                return None
            pos += 2
            group_id = frame[pos : pos + n].decode()
            pos += n
            generation = _I32.unpack_from(frame, pos)[0]
            pos += 4
            n = _I16.unpack_from(frame, pos)[0]
            if n < 0:
                return None
            pos += 2
            member_id = frame[pos : pos + n].decode()
            pos += n
            instance_id = None
            if version == 3:
                n = _I16.unpack_from(frame, pos)[0]
                pos += 2
                if n >= 0:
                    instance_id = frame[pos : pos + n].decode()
                    pos += n
                elif n != -1:
                    return None
        else:
            pos = _body_start(frame, True)
            if pos < 0:
                return None
            n = frame[pos] - 1  # compact string: uvarint(length + 1), one byte up to 126
            if n < 0 or n > 126:
                return None
            pos += 1
            group_id = frame[pos : pos + n].decode()
            pos += n
            generation = _I32.unpack_from(frame, pos)[0]
            pos += 4
            n = frame[pos] - 1
            if n < 0 or n > 126:
                return None
            pos += 1
            member_id = frame[pos : pos + n].decode()
            pos += n
            n = frame[pos] - 1
            pos += 1
            instance_id = None
            if n >= 0:
                if n > 126:
                    return None
                instance_id = frame[pos : pos + n].decode()
                pos += n
            if frame[pos] != 0:  # tagged fields: the general path reads them
                return None
            pos += 1
        if pos != len(
            frame
        ):  # short (a string ran past the end) or trailing bytes: the general path counts them
            return None
        return group_id, generation, member_id, instance_id
    except (struct.error, IndexError, UnicodeDecodeError):
        return None


#: (client_id, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms): a steady-state
#: ConsumerGroupHeartbeat (subscription, regex, assignor and owned partitions null); client_id "" when null
ConsumerGroupHeartbeatFields = tuple[str, str, str, int, str | None, str | None, int]


def _compact(frame: bytes, pos: int) -> tuple[str | None, int]:
    """A compact nullable string of one length byte at `pos`: (value, next position); raises ValueError for a
    longer one (the general path reads it)."""
    n = frame[pos] - 1
    if n < 0:
        return None, pos + 1
    if n > 126:
        raise ValueError("multi-byte length")
    pos += 1
    end = pos + n
    if end > len(frame):
        raise IndexError("string past the end")
    return frame[pos:end].decode(), end


def parse_consumer_group_heartbeat(frame: bytes, version: int) -> ConsumerGroupHeartbeatFields | None:
    """The fields of a steady-state ConsumerGroupHeartbeat request of `version` (0-1), or None for the general
    decoder: any of SubscribedTopicNames, SubscribedTopicRegex, ServerAssignor, TopicPartitions non-null,
    tagged fields, a string of 127 bytes or more, trailing bytes."""
    try:
        n = _I16.unpack_from(frame, 8)[0]  # request header v2: client id is a classic nullable string
        if n < -1:
            return None
        pos = 10 + max(n, 0)
        if pos > len(frame):
            return None
        client_id = frame[10:pos].decode() if n > 0 else ""
        if frame[pos] != 0:  # header tagged fields
            return None
        group_id, pos = _compact(frame, pos + 1)
        member_id, pos = _compact(frame, pos)
        if group_id is None or member_id is None:
            return None
        epoch = _I32.unpack_from(frame, pos)[0]
        instance_id, pos = _compact(frame, pos + 4)
        rack_id, pos = _compact(frame, pos)
        rebalance_timeout_ms = _I32.unpack_from(frame, pos)[0]
        pos += 4
        # SubscribedTopicNames, (v1+) SubscribedTopicRegex, ServerAssignor, TopicPartitions null; no tags
        tail = b"\x00\x00\x00\x00\x00" if version >= 1 else b"\x00\x00\x00\x00"
        if frame[pos:] != tail:
            return None
        return client_id, group_id, member_id, epoch, instance_id, rack_id, rebalance_timeout_ms
    except (struct.error, IndexError, ValueError):  # UnicodeDecodeError is a ValueError
        return None


_HEAD = bytes(12)  # correlation id placeholder (4), header tags, throttle (4), error code (2), null message
_EPOCH_INTERVAL = struct.Struct(">ii")


def consumer_group_heartbeat_ok(
    correlation: bytes, member_id: str, member_epoch: int, interval_ms: int
) -> bytes:
    """The whole ConsumerGroupHeartbeat response frame (v0 and v1 are the same) of a heartbeat answered NONE
    without an assignment, `correlation` being the request's four correlation-id bytes."""
    mid = member_id.encode()
    n = len(mid) + 1
    if n < 0x80:
        length = bytes((n,))
    else:
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        length = bytes(out)
    size = 22 + len(length) + len(mid)
    return b"".join(
        (
            _I32.pack(size),
            correlation,
            _HEAD[4:],
            length,
            mid,
            _EPOCH_INTERVAL.pack(member_epoch, interval_ms),
            b"\xff\x00",  # null assignment, no tagged fields
        )
    )


# -- OffsetCommit v2-v9 (issue 28): the body read with `struct` into the codec's own dataclasses

_I64 = struct.Struct(">q")
_PART_V6 = struct.Struct(">iqi")  # partition index, committed offset, committed leader epoch
_PART_V2 = struct.Struct(">iq")  # partition index, committed offset


def _uvarint(frame: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint at `pos`: (value, next position)."""
    b = frame[pos]
    if b < 0x80:
        return b, pos + 1
    value, shift = 0, 0
    while True:
        b = frame[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ValueError("varint too long")


def _string(frame: bytes, pos: int, flexible: bool) -> tuple[str | None, int]:
    """A (compact when `flexible`) nullable string: (value, next position); past the end raises."""
    if flexible:
        n, pos = _uvarint(frame, pos)
        n -= 1
    else:
        n = _I16.unpack_from(frame, pos)[0]
        pos += 2
    if n < 0:
        if n != -1:
            raise ValueError("negative length")
        return None, pos
    end = pos + n
    if end > len(frame):
        raise IndexError("string past the end")
    return frame[pos:end].decode(), end


def _count(frame: bytes, pos: int, flexible: bool) -> tuple[int, int]:
    """An array's element count (a null array raises: OffsetCommit's arrays are not nullable)."""
    if flexible:
        n, pos = _uvarint(frame, pos)
        n -= 1
    else:
        n = _I32.unpack_from(frame, pos)[0]
        pos += 4
    if n < 0 or n > len(frame):
        raise ValueError("bad array length")
    return n, pos


def parse_offset_commit(frame: bytes, pos: int, version: int) -> tuple[object, int] | None:
    """The body of an OffsetCommit request of `version` (2-9) that starts at `pos`, as the codec's
    `OffsetCommitRequest`, and where it ends; None for the general decoder (tagged fields, a null string
    where the schema has none, anything malformed). Bytes after the body are the caller's to count, as
    the codec does."""
    if not 2 <= version <= 9:
        return None
    flexible = version >= 8
    try:
        group_id, pos = _string(frame, pos, flexible)
        generation = _I32.unpack_from(frame, pos)[0]
        member_id, pos = _string(frame, pos + 4, flexible)
        if group_id is None or member_id is None:
            return None
        instance_id = None
        if version >= 7:
            instance_id, pos = _string(frame, pos, flexible)
        retention = -1
        if version <= 4:
            retention = _I64.unpack_from(frame, pos)[0]
            pos += 8
        n_topics, pos = _count(frame, pos, flexible)
        topics = []
        for _ in range(n_topics):
            name, pos = _string(frame, pos, flexible)
            if name is None:
                return None
            n_parts, pos = _count(frame, pos, flexible)
            read = _fixed_partitions(frame, pos, n_parts, version) or _partitions(
                frame, pos, n_parts, version
            )
            if read is None:
                return None
            parts, pos = read
            if flexible:
                if frame[pos] != 0:
                    return None
                pos += 1
            topics.append(OffsetCommitRequestTopic(name=name, partitions=parts))  # type: ignore[arg-type]
        if flexible:
            if frame[pos] != 0:
                return None
            pos += 1
        if pos > len(frame):
            return None
        return OffsetCommitRequest(
            group_id, generation, member_id, instance_id, retention, tuple(topics)
        ), pos
    except (struct.error, IndexError, ValueError):  # UnicodeDecodeError is a ValueError
        return None


def _partition_columns(
    indexes: tuple[int, ...],
    offsets: tuple[int, ...],
    epochs: tuple[int, ...],
    metadata: tuple[str | None, ...],
) -> Columns[OffsetCommitRequestPartition]:
    """The partitions of one topic as columns (protocol/columns.py): rows are the codec's own dataclass."""
    return Columns(OffsetCommitRequestPartition, indexes, offsets, epochs, (-1,) * len(indexes), metadata)


_FIXED: dict[tuple[int, int], struct.Struct] = {}


def _fixed_partitions(
    frame: bytes, pos: int, n: int, version: int
) -> tuple[Columns[OffsetCommitRequestPartition], int] | None:
    """The common shape read in one `struct.unpack`: every partition's metadata the empty string (and, when
    flexible, no tagged fields), so each entry has the same size. The entry at i * size only exists if every
    entry before it had that shape, so checking the metadata bytes of each stride decides it exactly; None
    when they are not all so (the loop in `_partitions` reads them)."""
    if not n:
        return None
    flexible, epoch = version >= 8, version >= 6
    size = (16 if epoch else 12) + 2  # metadata: compact "" and no tags, or an int16 length 0
    block = frame[pos : pos + size * n]
    if len(block) != size * n:
        return None
    first, second = (b"\x01", b"\x00") if flexible else (b"\x00", b"\x00")
    if block[size - 2 :: size] != first * n or block[size - 1 :: size] != second * n:
        return None
    st = _FIXED.get((n, version))
    if st is None:
        st = struct.Struct(">" + ("iqi2x" if epoch else "iq2x") * n)
        if len(_FIXED) < 4096:
            _FIXED[(n, version)] = st
    flat = st.unpack(block)
    if epoch:
        return _partition_columns(flat[0::3], flat[1::3], flat[2::3], ("",) * n), pos + size * n
    return _partition_columns(flat[0::2], flat[1::2], (-1,) * n, ("",) * n), pos + size * n


def _partitions(
    frame: bytes, pos: int, n: int, version: int
) -> tuple[Columns[OffsetCommitRequestPartition], int] | None:
    """Any partitions of one topic, entry by entry, into columns; None for tagged fields."""
    flexible = version >= 8
    indexes, offsets, epochs, metadata = [], [], [], []
    for _ in range(n):
        if version >= 6:
            index, offset, epoch = _PART_V6.unpack_from(frame, pos)
            pos += 16
        else:
            index, offset = _PART_V2.unpack_from(frame, pos)
            epoch = -1
            pos += 12
        meta, pos = _string(frame, pos, flexible)
        if flexible:
            if frame[pos] != 0:
                return None
            pos += 1
        indexes.append(index)
        offsets.append(offset)
        epochs.append(epoch)
        metadata.append(meta)
    return _partition_columns(tuple(indexes), tuple(offsets), tuple(epochs), tuple(metadata)), pos


#: api key -> the hand-written body reader `decode_request_counted` tries first (body start, version) -> (body,
#: end) or None; the codec decodes whatever it refuses
BODY_READERS: dict[int, Callable[[bytes, int, int], tuple[object, int] | None]] = {8: parse_offset_commit}


# -- OffsetCommit v3-v9 responses (issue 39): written from the partitions' columns without a row object

_PAIR_FMT: dict[tuple[int, bool], struct.Struct] = {}


def _uvarint_bytes(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_offset_commit_response(correlation_id: int, version: int, body: object) -> bytes | None:
    """The whole response frame of an OffsetCommit v3-v9 whose every topic's partitions are `Columns` of
    (partition index, error code), as the handler builds them; None for the codec to encode (any other
    version or shape). tests/protocol/test_fast_offset_commit_columns.py checks it byte for byte against the
    codec."""
    if not 3 <= version <= 9 or type(body) is not OffsetCommitResponse:
        return None
    flexible = version >= 8
    out = [_I32.pack(correlation_id), b"\x00" if flexible else b"", _I32.pack(body.throttle_time_ms)]
    topics = body.topics
    out.append(_uvarint_bytes(len(topics) + 1) if flexible else _I32.pack(len(topics)))
    for t in topics:
        parts: object = t.partitions
        if type(parts) is not Columns or parts.make is not OffsetCommitResponsePartition:
            return None
        name = t.name.encode()
        indexes, errors = parts.cols
        n = len(indexes)
        if flexible:
            out += (_uvarint_bytes(len(name) + 1), name, _uvarint_bytes(n + 1))
        else:
            if len(name) > 0x7FFF:
                return None
            out += (_I16.pack(len(name)), name, _I32.pack(n))
        st = _PAIR_FMT.get((n, flexible))
        if st is None:
            st = struct.Struct(">" + ("ihx" if flexible else "ih") * n)
            if len(_PAIR_FMT) < 4096:
                _PAIR_FMT[(n, flexible)] = st
        flat = [0] * (2 * n)
        flat[0::2] = indexes
        flat[1::2] = errors
        out.append(st.pack(*flat))
        if flexible:
            out.append(b"\x00")
    if flexible:
        out.append(b"\x00")
    data = b"".join(out)
    return _I32.pack(len(data)) + data


# -- OffsetFetch v8-v9 responses (issue 39): partitions in columns, every metadata empty (the common answer)

_FETCH_FMT: dict[int, struct.Struct] = {}


def _compact_string(value: str) -> bytes:
    raw = value.encode()
    return _uvarint_bytes(len(raw) + 1) + raw


def encode_offset_fetch_response(correlation_id: int, version: int, body: object) -> bytes | None:
    """The whole response frame of an OffsetFetch v8-v9 whose every topic's partitions are `Columns` of
    (index, offset, leader epoch, metadata, error) with empty metadata; None for the codec to encode."""
    if not 8 <= version <= 9 or type(body) is not OffsetFetchResponse:
        return None
    out = [
        _I32.pack(correlation_id),
        b"\x00",
        _I32.pack(body.throttle_time_ms),
        _uvarint_bytes(len(body.groups) + 1),
    ]
    for g in body.groups:
        out += (_compact_string(g.group_id), _uvarint_bytes(len(g.topics) + 1))
        for t in g.topics:
            parts: object = t.partitions
            if type(parts) is not Columns or parts.make is not OffsetFetchResponsePartitions:
                return None
            indexes, offsets, epochs, metadata, errors = parts.cols
            n = len(indexes)
            if metadata.count("") != n:
                return None
            st = _FETCH_FMT.get(n)
            if st is None:
                st = struct.Struct(">" + "iqiBhx" * n)  # ..., compact "" (0x01), error, no tags
                if len(_FETCH_FMT) < 4096:
                    _FETCH_FMT[n] = st
            flat = [1] * (5 * n)
            flat[0::5], flat[1::5], flat[2::5], flat[4::5] = indexes, offsets, epochs, errors
            out += (_compact_string(t.name), _uvarint_bytes(n + 1), st.pack(*flat), b"\x00")
        out += (_I16.pack(g.error_code), b"\x00")
    out.append(b"\x00")
    data = b"".join(out)
    return _I32.pack(len(data)) + data


#: api key -> a hand-written writer of whole response frames `encode_response` tries first (correlation id,
#: version, body) -> frame or None; the codec encodes whatever it refuses
BODY_WRITERS: dict[int, Callable[[int, int, object], bytes | None]] = {
    8: encode_offset_commit_response,
    9: encode_offset_fetch_response,
}
