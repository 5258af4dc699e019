"""The hand-written steady-state ConsumerGroupHeartbeat reader and answer (protocol/fast.py) against the
declared codec: on every frame the reader accepts it reads exactly what the codec reads, it accepts the
steady shape of both versions, and the answer it builds is the codec's encoding of the same response."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.protocol.codec import decode_request_counted, encode_request, encode_response
from groupcoord.protocol.fast import consumer_group_heartbeat_ok, parse_consumer_group_heartbeat
from groupcoord.protocol.messages import consumer_group_heartbeat as cgh

names = st.text(min_size=0, max_size=200)
short = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=60)
int32 = st.integers(-(2**31), 2**31 - 1)
partitions = st.none() | st.lists(
    st.builds(
        cgh.HeartbeatTopicPartitions,
        topic_id=st.uuids(),
        partitions=st.lists(st.integers(0, 2**31 - 1), max_size=3).map(tuple),
    ),
    max_size=2,
).map(tuple)


def frame_of(version: int, req: cgh.ConsumerGroupHeartbeatRequest, client_id: str | None = "c") -> bytes:
    return encode_request(68, version, 7, req, client_id)[4:]  # without the size prefix


@settings(max_examples=400, deadline=None)
@given(
    version=st.integers(0, 1),
    group=names,
    member=names,
    epoch=int32,
    instance=st.none() | names,
    rack=st.none() | names,
    timeout=int32,
    subscribed=st.none() | st.lists(short, max_size=2).map(tuple),
    regex=st.none() | short,
    assignor=st.none() | short,
    owned=partitions,
    client=st.none() | st.text(max_size=20),
)
def test_every_frame_the_fast_reader_accepts_it_reads_as_the_codec_does(
    version: int,
    group: str,
    member: str,
    epoch: int,
    instance: str | None,
    rack: str | None,
    timeout: int,
    subscribed: tuple[str, ...] | None,
    regex: str | None,
    assignor: str | None,
    owned: tuple[cgh.HeartbeatTopicPartitions, ...] | None,
    client: str | None,
) -> None:
    req = cgh.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, instance_id=instance, rack_id=rack,
        rebalance_timeout_ms=timeout, subscribed_topic_names=subscribed,
        subscribed_topic_regex=regex if version >= 1 else None, server_assignor=assignor, topic_partitions=owned,
    )  # fmt: skip
    frame = frame_of(version, req, client)
    fast = parse_consumer_group_heartbeat(frame, version)
    header, body, ignored = decode_request_counted(frame)
    if fast is not None:
        assert ignored == 0
        assert (body.subscribed_topic_names, body.subscribed_topic_regex) == (None, None)
        assert (body.server_assignor, body.topic_partitions) == (None, None)
        assert fast == (
            header.client_id or "", body.group_id, body.member_id, body.member_epoch, body.instance_id,
            body.rack_id, body.rebalance_timeout_ms,
        )  # fmt: skip
    steady = subscribed is None and assignor is None and owned is None and (regex is None or version == 0)
    if not steady:
        assert fast is None


@given(
    version=st.integers(0, 1),
    group=short,
    member=short,
    epoch=int32,
    instance=st.none() | short,
    rack=st.none() | short,
    client=st.none() | short,
)
def test_the_steady_shape_of_both_versions_takes_the_fast_path(
    version: int,
    group: str,
    member: str,
    epoch: int,
    instance: str | None,
    rack: str | None,
    client: str | None,
) -> None:
    req = cgh.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, instance_id=instance, rack_id=rack
    )
    assert parse_consumer_group_heartbeat(frame_of(version, req, client), version) == (
        client or "", group, member, epoch, instance, rack, -1,
    )  # fmt: skip


def test_trailing_bytes_truncation_and_tagged_fields_go_to_the_general_path() -> None:
    req = cgh.ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=3)
    frame = frame_of(1, req)
    assert parse_consumer_group_heartbeat(frame, 1) == ("c", "g", "m", 3, None, None, -1)
    assert parse_consumer_group_heartbeat(frame + b"\x00", 1) is None
    for cut in range(1, len(frame) - 8):
        assert parse_consumer_group_heartbeat(frame[:-cut], 1) is None
    assert parse_consumer_group_heartbeat(frame[:-1] + b"\x01\x00\x01\x00", 1) is None  # a tagged field
    long = cgh.ConsumerGroupHeartbeatRequest(group_id="g" * 127, member_id="m", member_epoch=3)
    assert parse_consumer_group_heartbeat(frame_of(1, long), 1) is None  # two-byte length: general path


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(0, 1),
    correlation=int32,
    member=st.text(max_size=300),
    epoch=int32,
    interval=int32,
)
def test_the_hand_built_answer_is_the_codecs_encoding(
    version: int, correlation: int, member: str, epoch: int, interval: int
) -> None:
    body = cgh.ConsumerGroupHeartbeatResponse(
        member_id=member, member_epoch=epoch, heartbeat_interval_ms=interval
    )
    expected = encode_response(correlation, 68, version, body)
    corr = correlation.to_bytes(4, "big", signed=True)
    assert consumer_group_heartbeat_ok(corr, member, epoch, interval) == expected


def test_uuid_member_ids_fit_one_length_byte() -> None:
    """Clients generate 22-character (Java: base64 UUID) or 36-character member ids: the fast shape."""
    member = str(uuid.uuid4())
    req = cgh.ConsumerGroupHeartbeatRequest(group_id="g", member_id=member, member_epoch=1, instance_id="i")
    assert parse_consumer_group_heartbeat(frame_of(1, req), 1) == ("c", "g", member, 1, "i", None, -1)
