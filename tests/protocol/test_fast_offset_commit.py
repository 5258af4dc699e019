"""The hand-written OffsetCommit body reader (protocol/fast.py, issue 28) against the declared codec: for every
generated request of versions 0-9 (with trailing bytes and truncations too) `decode_request_counted` gives
the same header, body and ignored-byte count with the reader as without it, and the reader takes the
requests of every version it covers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.protocol import fast
from groupcoord.protocol.codec import decode_request_counted, encode_request
from groupcoord.protocol.errors import DecodeError
from groupcoord.protocol.messages import offset_commit as oc

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
text = st.text(max_size=150)
partition = st.builds(
    oc.OffsetCommitRequestPartition,
    partition_index=int32,
    committed_offset=int64,
    committed_leader_epoch=int32,
    commit_timestamp=st.just(-1),
    committed_metadata=st.none() | text,
)
topic = st.builds(
    oc.OffsetCommitRequestTopic, name=text, partitions=st.lists(partition, max_size=4).map(tuple)
)


def without_reader(frame: bytes) -> object:
    saved = dict(fast.BODY_READERS)
    fast.BODY_READERS.clear()
    try:
        return decode_request_counted(frame)
    except DecodeError as exc:
        return type(exc)
    finally:
        fast.BODY_READERS.update(saved)


def with_reader(frame: bytes) -> object:
    try:
        return decode_request_counted(frame)
    except DecodeError as exc:
        return type(exc)


@settings(max_examples=400, deadline=None)
@given(
    version=st.integers(2, 9),
    group=text,
    generation=int32,
    member=text,
    instance=st.none() | text,
    retention=int64,
    topics=st.lists(topic, max_size=3).map(tuple),
    tail=st.sampled_from([b"", b"\x00", b"\x00\x01\x02"]),
    cut=st.integers(0, 3),
)
def test_the_reader_decodes_every_frame_as_the_codec_does(
    version: int,
    group: str,
    generation: int,
    member: str,
    instance: str | None,
    retention: int,
    topics: tuple[oc.OffsetCommitRequestTopic, ...],
    tail: bytes,
    cut: int,
) -> None:
    req = oc.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=instance if version >= 7 else None, retention_time_ms=retention if version <= 4 else -1,
        topics=tuple(
            oc.OffsetCommitRequestTopic(name=t.name, partitions=tuple(
                oc.OffsetCommitRequestPartition(
                    p.partition_index, p.committed_offset, p.committed_leader_epoch if version >= 6 else -1, -1,
                    p.committed_metadata,
                ) for p in t.partitions
            )) for t in topics
        ),
    )  # fmt: skip
    frame = encode_request(8, version, 5, req, "client")[4:] + tail
    if cut:
        frame = frame[:-cut]
    expected = without_reader(frame)
    assert with_reader(frame) == expected
    if not cut and not tail:
        assert expected[1] == req  # type: ignore[index]
        body_start = 10 + len(b"client") + (1 if version >= 8 else 0)
        read = fast.parse_offset_commit(frame, body_start, version)
        assert read is not None and read == (req, len(frame))


@pytest.mark.parametrize("version", range(10))
def test_versions_outside_the_readers_range_and_tagged_fields_take_the_codec(version: int) -> None:
    req = oc.OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=1, member_id="m",
        topics=(oc.OffsetCommitRequestTopic(name="t", partitions=(oc.OffsetCommitRequestPartition(0, 1, -1, -1, ""),)),),
    )  # fmt: skip
    frame = encode_request(8, version, 5, req, "c")[4:]
    start = 10 + 1 + (1 if version >= 8 else 0)
    read = fast.parse_offset_commit(frame, start, version)
    assert (read is None) == (version < 2)
    if version >= 8:  # a tagged field in the body's tag section: the codec reads it
        tagged = frame[:-1] + b"\x01\x00\x01\x00"
        assert fast.parse_offset_commit(tagged, start, version) is None
        assert with_reader(tagged) == without_reader(tagged)
