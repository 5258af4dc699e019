"""The hand-written Heartbeat decoder (protocol/fast.py) against the declared codec: on every frame it accepts
it reads exactly what the codec reads, and it accepts the common shape of every version."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.protocol.codec import decode_request_counted, encode_request
from groupcoord.protocol.fast import parse_heartbeat
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest

names = st.text(min_size=0, max_size=200)
short = st.text(
    st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=60
)  # the common shape: ASCII ids


def frame_of(version: int, req: HeartbeatRequest, client_id: str | None = "c") -> bytes:
    return encode_request(12, version, 7, req, client_id)[4:]  # without the size prefix


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(0, 4),
    group=names,
    generation=st.integers(-(2**31), 2**31 - 1),
    member=names,
    instance=st.none() | names,
    client=st.none() | st.text(max_size=20),
)
def test_every_frame_the_fast_decoder_accepts_it_reads_as_the_codec_does(
    version: int, group: str, generation: int, member: str, instance: str | None, client: str | None
) -> None:
    req = HeartbeatRequest(group, generation, member, instance if version >= 3 else None)
    frame = frame_of(version, req, client)
    fast = parse_heartbeat(frame, version)
    _, body, ignored = decode_request_counted(frame)
    if fast is not None:
        assert ignored == 0
        assert fast == (body.group_id, body.generation_id, body.member_id, body.group_instance_id)


@given(version=st.integers(0, 4), group=short, member=short, instance=st.none() | short)
def test_the_common_shape_of_every_version_takes_the_fast_path(
    version: int, group: str, member: str, instance: str | None
) -> None:
    inst = instance if version >= 3 else None
    assert parse_heartbeat(frame_of(version, HeartbeatRequest(group, 3, member, inst)), version) == (
        group,
        3,
        member,
        inst,
    )


def test_trailing_bytes_truncation_and_tagged_fields_go_to_the_general_path() -> None:
    frame = frame_of(4, HeartbeatRequest("g", 1, "m", None))
    assert parse_heartbeat(frame, 4) == ("g", 1, "m", None)
    assert parse_heartbeat(frame + b"\x00", 4) is None  # a trailing byte: counted by the general path
    assert parse_heartbeat(frame[:-1], 4) is None
    tagged = frame[:-1] + b"\x01\x00\x01\x00"  # one unknown tagged field
    assert parse_heartbeat(tagged, 4) is None
    old = frame_of(2, HeartbeatRequest("g", 1, "m", None))
    assert parse_heartbeat(old[:-1], 2) is None and parse_heartbeat(old + b"x", 2) is None
    assert parse_heartbeat(frame_of(0, HeartbeatRequest("g", 1, "\u00e9", None)), 0) == (
        "g",
        1,
        "\u00e9",
        None,
    )
