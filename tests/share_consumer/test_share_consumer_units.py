"""groupcoord.share without a server: v2 record batches decoded as a share consumer reads them out of a
ShareFetch response, and pending acknowledgements encoded into AcknowledgementBatches as Kafka does."""

from __future__ import annotations

import gzip
import struct

import pytest

from groupcoord.share.acks import AcknowledgeType, encode_batches
from groupcoord.share.consumer import new_member_id
from groupcoord.share.records import RecordDecodeError, decode_batches


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes(b: bytes | None) -> bytes:
    return _varint(-1) if b is None else _varint(len(b)) + b


def batch(
    base: int,
    records: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]],
    *,
    codec: int = 0,
    control: bool = False,
    magic: int = 2,
) -> bytes:
    """A v2 batch built from the format's definition (the CRC is not checked by the reader)."""
    body = bytearray()
    for delta, key, value, headers in records:
        rec = bytes([0]) + _varint(delta * 10) + _varint(delta) + _bytes(key) + _bytes(value)
        rec += _varint(len(headers)) + b"".join(_bytes(k.encode()) + _bytes(v) for k, v in headers)
        body += _varint(len(rec)) + rec
    data = gzip.compress(bytes(body)) if codec == 1 else bytes(body)
    attributes = codec | (0x20 if control else 0)
    last = records[-1][0] if records else 0
    head = struct.pack(
        ">ibIhiqqqhii", 0, magic, 0, attributes, last, 1000, 1000 + last, -1, -1, -1, len(records)
    )
    return struct.pack(">qi", base, len(head) + len(data)) + head + data


def test_plain_and_gzip_batches_with_keys_values_headers() -> None:
    data = batch(5, [(0, b"k0", b"v0", [("h", b"x")]), (1, None, b"v1", []), (2, b"k2", None, [])])
    data += batch(8, [(0, None, b"z", [])], codec=1)
    recs = decode_batches(data)
    assert [(r.offset, r.key, r.value, r.is_control) for r in recs] == [
        (5, b"k0", b"v0", False),
        (6, None, b"v1", False),
        (7, b"k2", None, False),
        (8, None, b"z", False),
    ]
    assert recs[0].headers == (("h", b"x"),)
    assert [r.timestamp for r in recs] == [1000, 1010, 1020, 1000]


def test_control_batches_are_flagged_and_a_partial_trailing_batch_is_ignored() -> None:
    whole = batch(0, [(0, b"\x00\x00\x00\x00", b"", [])], control=True) + batch(1, [(0, None, b"a", [])])
    partial = batch(2, [(0, None, b"b", [])])[:-3]
    recs = decode_batches(whole + partial)
    assert [(r.offset, r.is_control) for r in recs] == [(0, True), (1, False)]
    assert decode_batches(b"") == [] and decode_batches(None) == []


def test_old_magic_and_unknown_codec_are_refused_with_a_reason() -> None:
    with pytest.raises(RecordDecodeError, match="magic 1"):
        decode_batches(batch(0, [(0, None, b"a", [])], magic=1))
    with pytest.raises(RecordDecodeError, match="codec 7"):
        decode_batches(batch(0, [(0, None, b"a", [])], codec=7))


def test_acknowledgements_encode_as_runs_with_collapsed_types() -> None:
    acks = {3: 1, 4: 1, 5: 1, 7: 2, 8: 3, 10: 0}
    out = [(b.first_offset, b.last_offset, b.acknowledge_types) for b in encode_batches(acks)]
    assert out == [(3, 5, (1,)), (7, 8, (2, 3)), (10, 10, (0,))]
    assert encode_batches({}) == ()
    assert AcknowledgeType.REJECT == 3


def test_member_ids_are_kafka_uuid_strings() -> None:
    ids = {new_member_id() for _ in range(100)}
    assert len(ids) == 100 and all(len(i) == 22 and "=" not in i for i in ids)
