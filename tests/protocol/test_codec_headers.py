"""Request header v0-v2, response header v0-v1, and whole frames (`groupcoord.protocol.codec`).

- Request header v1 for non-flexible API versions, v2 (plus tagged fields) for flexible ones; ClientId stays a
  classic int16-length nullable string in v2.
- Response header v0 for non-flexible versions, v1 (plus tagged fields) for flexible ones, except ApiVersions
  responses, which always use v0.
Frames are cross-checked byte for byte against kafka-python 3.0 (`with_header` + `encode(header=True,
framed=True)`), and the headers alone against aiokafka's RequestHeader_v1/_v2 too.
"""

from __future__ import annotations

from typing import Any

import pytest
from codec_helpers import ALL_MESSAGES, case_id, fuzz, is_flexible, message_strategy, versions_of
from codec_kafka_json import compare_struct, load_kafka_json
from codec_oracles import kafka_python_classes, kafka_python_versions, to_kafka_python
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.protocol.api import SUPPORTED, ApiKey
from groupcoord.protocol.codec import (
    decode_request,
    decode_request_counted,
    decode_response,
    encode_request,
    encode_response,
    peek,
    request_header_version,
    response_header_version,
)
from groupcoord.protocol.errors import DecodeError
from groupcoord.protocol.headers import RequestHeader, ResponseHeader
from groupcoord.protocol.messages import REQUESTS, RESPONSES
from groupcoord.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from groupcoord.protocol.messages.metadata import MetadataRequest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REQUEST_CLASSES = [c for c in ALL_MESSAGES if c.KIND == "request"]
RESPONSE_CLASSES = [c for c in ALL_MESSAGES if c.KIND == "response"]
CLIENT_IDS = st.none() | st.text(max_size=10)


# --- declarations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "name"),
    [
        pytest.param(RequestHeader, "RequestHeader"),
        pytest.param(ResponseHeader, "ResponseHeader"),
    ],
)
def test_header_declarations_match_kafka_json(cls: type, name: str) -> None:
    definition = load_kafka_json(name)
    lo, hi = cls.VALID_VERSIONS.lo, cls.VALID_VERSIONS.hi
    flexible = {v for v in range(lo, hi + 1) if v in cls.FLEXIBLE_VERSIONS}
    problems = compare_struct(cls, definition["fields"], set(range(lo, hi + 1)), name, flexible, strict=False)
    assert not problems, "\n".join(problems)


# --- the headers alone ----------------------------------------------------------------------------------


def test_request_header_layouts() -> None:
    h = RequestHeader(request_api_key=3, request_api_version=9, correlation_id=7, client_id="ab")
    assert RequestHeader(request_api_key=3, request_api_version=9, correlation_id=7).encode(0) == (
        b"\x00\x03\x00\x09\x00\x00\x00\x07"
    )
    assert h.encode(1) == b"\x00\x03\x00\x09\x00\x00\x00\x07\x00\x02ab"
    # v2: ClientId keeps its int16 length (not a compact string), then an empty tagged-field section
    assert h.encode(2) == b"\x00\x03\x00\x09\x00\x00\x00\x07\x00\x02ab\x00"
    null = RequestHeader(request_api_key=3, request_api_version=9, correlation_id=7, client_id=None)
    assert null.encode(1) == b"\x00\x03\x00\x09\x00\x00\x00\x07\xff\xff"
    assert null.encode(2) == b"\x00\x03\x00\x09\x00\x00\x00\x07\xff\xff\x00"


def test_response_header_layouts() -> None:
    assert ResponseHeader(correlation_id=7).encode(0) == b"\x00\x00\x00\x07"
    assert ResponseHeader(correlation_id=7).encode(1) == b"\x00\x00\x00\x07\x00"


@fuzz(40)
@given(
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**31), 2**31 - 1),
    CLIENT_IDS,
    st.sampled_from([1, 2]),
)
def test_request_header_against_oracles(
    key: int, version: int, corr: int, client: str | None, hv: int
) -> None:
    from aiokafka.protocol.api import RequestHeader_v1, RequestHeader_v2
    from kafka.protocol.api_header import RequestHeader as KafkaPythonHeader

    ours = RequestHeader(
        request_api_key=key, request_api_version=version, correlation_id=corr, client_id=client
    )
    data = ours.encode(hv)
    assert RequestHeader.decode(data, hv) == ours
    kp = KafkaPythonHeader(
        request_api_key=key, request_api_version=version, correlation_id=corr, client_id=client
    )
    assert bytes(kp.encode(flexible=hv == 2)) == data

    class _Req:  # what aiokafka's header constructor reads from a request struct
        API_KEY = key
        API_VERSION = version

    aio = RequestHeader_v1(_Req(), corr, client) if hv == 1 else RequestHeader_v2(_Req(), corr, client)
    assert aio.encode() == data


@fuzz(20)
@given(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 1]))
def test_response_header_against_kafka_python(corr: int, hv: int) -> None:
    from kafka.protocol.api_header import ResponseHeader as KafkaPythonHeader

    data = ResponseHeader(correlation_id=corr).encode(hv)
    assert bytes(KafkaPythonHeader(correlation_id=corr).encode(flexible=hv == 1)) == data
    assert ResponseHeader.decode(data, hv).correlation_id == corr


HEADER_CASES = [(RequestHeader, v) for v in range(3)] + [(ResponseHeader, v) for v in range(2)]


@pytest.mark.parametrize("case", HEADER_CASES, ids=case_id)
def test_header_round_trip_and_truncation(case: tuple[type, int]) -> None:
    cls, version = case

    @fuzz(20)
    @given(message_strategy(cls, version, unknown=True))
    def check(obj: Any) -> None:
        data = obj.encode(version)
        assert cls.decode(data, version) == obj
        for cut in range(len(data)):
            with pytest.raises(DecodeError):
                cls.decode(data[:cut], version)

    check()


# --- header version selection ---------------------------------------------------------------------------


@pytest.mark.parametrize("api_key", sorted(REQUESTS), ids=lambda k: REQUESTS[k].__name__)
def test_header_versions_follow_flexible_versions(api_key: int) -> None:
    cls = REQUESTS[api_key]
    for version in versions_of(cls):
        flexible = is_flexible(cls, version)
        assert request_header_version(api_key, version) == (2 if flexible else 1)
        expected = 0 if api_key == ApiKey.API_VERSIONS else (1 if flexible else 0)
        assert response_header_version(api_key, version) == expected


def test_api_versions_response_always_uses_header_v0() -> None:
    body = ApiVersionsResponse(api_keys=(ApiVersion(api_key=18, min_version=0, max_version=4),))
    for version in versions_of(ApiVersionsResponse):
        frame = encode_response(42, ApiKey.API_VERSIONS, version, body)
        assert frame[4:8] == b"\x00\x00\x00\x2a"
        assert frame[8:] == body.encode(version)  # no tagged-field byte between header and body


def test_supported_ranges_are_declared() -> None:
    """Every range advertised in ApiVersions can be encoded and decoded by the codec."""
    for key, (lo, hi) in SUPPORTED.items():
        for cls in (REQUESTS[key], RESPONSES[key]):
            assert cls.VALID_VERSIONS.lo <= lo and hi <= cls.VALID_VERSIONS.hi, cls.__name__


# --- whole frames ---------------------------------------------------------------------------------------


def _kafka_python_frame(obj: Any, version: int, correlation_id: int, client_id: str | None) -> bytes:
    our_cls = type(obj)
    theirs = kafka_python_classes()[our_cls.__name__]
    item = to_kafka_python(obj, our_cls, theirs._struct, version, is_flexible(our_cls, version))
    if our_cls.KIND == "request":
        item.with_header(correlation_id=correlation_id, client_id=client_id)
    else:
        item.with_header(correlation_id=correlation_id)
    # no version= here: kafka-python's API_VERSION setter writes request_api_version into the header, which a
    # ResponseHeader lacks (AttributeError); the object already carries its version
    return bytes(item.encode(header=True, framed=True))


KP_REQUESTS = [(c, v) for c in REQUEST_CLASSES for v in kafka_python_versions(c)]
KP_RESPONSES = [(c, v) for c in RESPONSE_CLASSES for v in kafka_python_versions(c)]


@pytest.mark.parametrize("case", KP_REQUESTS, ids=case_id)
def test_request_frames_against_kafka_python(case: tuple[type, int]) -> None:
    cls, version = case

    @fuzz(5)
    @given(message_strategy(cls, version), st.integers(-(2**31), 2**31 - 1), CLIENT_IDS)
    def check(obj: Any, corr: int, client: str | None) -> None:
        frame = encode_request(cls.API_KEY, version, corr, obj, client_id=client)
        assert frame == _kafka_python_frame(obj, version, corr, client)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        assert peek(frame[4:]) == (cls.API_KEY, version, corr)
        header, body = decode_request(frame[4:])
        assert body == obj
        assert (header.request_api_key, header.request_api_version, header.correlation_id) == (
            cls.API_KEY,
            version,
            corr,
        )
        assert header.client_id == client

    check()


@pytest.mark.parametrize("case", KP_RESPONSES, ids=case_id)
def test_response_frames_against_kafka_python(case: tuple[type, int]) -> None:
    cls, version = case

    @fuzz(5)
    @given(message_strategy(cls, version), st.integers(-(2**31), 2**31 - 1))
    def check(obj: Any, corr: int) -> None:
        frame = encode_response(corr, cls.API_KEY, version, obj)
        assert frame == _kafka_python_frame(obj, version, corr, None)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        assert decode_response(frame[4:], cls.API_KEY, version) == (corr, obj)

    check()


# --- bad frames -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", range(8))
def test_peek_needs_the_fixed_prefix(size: int) -> None:
    with pytest.raises(DecodeError):
        peek(b"\x00" * size)


def test_unknown_api_key_is_a_decode_error() -> None:
    frame = b"\x7f\x00\x00\x00\x00\x00\x00\x01\xff\xff"
    with pytest.raises(DecodeError):
        decode_request(frame)


def test_unsupported_version_is_a_decode_error_but_peekable() -> None:
    """A newer ApiVersions request: the body is undecodable, but key, version and id can still be read."""
    header = RequestHeader(request_api_key=ApiKey.API_VERSIONS, request_api_version=9, correlation_id=77)
    frame = header.encode(2) + ApiVersionsRequest().encode(4)
    assert peek(frame) == (ApiKey.API_VERSIONS, 9, 77)
    with pytest.raises(DecodeError):
        decode_request(frame)


@pytest.mark.parametrize("case", [(c, v) for c in REQUEST_CLASSES for v in versions_of(c)], ids=case_id)
def test_truncated_request_frames_are_decode_errors(case: tuple[type, int]) -> None:
    cls, version = case

    @fuzz(2)
    @given(message_strategy(cls, version), CLIENT_IDS)
    def check(obj: Any, client: str | None) -> None:
        frame = encode_request(cls.API_KEY, version, 1, obj, client_id=client)[4:]
        for cut in range(len(frame)):
            with pytest.raises(DecodeError):
                decode_request(frame[:cut])

    check()


@pytest.mark.parametrize("case", [(c, v) for c in REQUEST_CLASSES for v in versions_of(c)], ids=case_id)
def test_bytes_after_a_requests_last_field_are_ignored_and_counted(case: tuple[type, int]) -> None:
    """Kafka's request parser reads the fields of the version and ignores what follows (librdkafka 2.12+
    pads its all-topics Metadata v12): the body decodes as without the extra bytes, which are counted."""
    cls, version = case

    @fuzz(3)
    @given(message_strategy(cls, version), CLIENT_IDS, st.binary(min_size=1, max_size=8))
    def check(obj: Any, client: str | None, extra: bytes) -> None:
        frame = encode_request(cls.API_KEY, version, 5, obj, client_id=client)[4:]
        header, body, ignored = decode_request_counted(frame + extra)
        assert (body, ignored) == (obj, len(extra))
        assert header.client_id == client
        assert decode_request(frame + extra)[1] == obj
        assert decode_request_counted(frame)[2] == 0

    check()


@pytest.mark.parametrize("case", [(c, v) for c in RESPONSE_CLASSES for v in versions_of(c)], ids=case_id)
def test_truncated_response_frames_are_decode_errors(case: tuple[type, int]) -> None:
    cls, version = case

    @fuzz(2)
    @given(message_strategy(cls, version))
    def check(obj: Any) -> None:
        frame = encode_response(1, cls.API_KEY, version, obj)[4:]
        for cut in range(len(frame)):
            with pytest.raises(DecodeError):
                decode_response(frame[:cut], cls.API_KEY, version)

    check()


def test_request_header_invalid_client_id_is_a_decode_error() -> None:
    frame = b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x02\xff\xfe" + MetadataRequest().encode(1)
    with pytest.raises(DecodeError) as info:
        decode_request(frame)
    assert "RequestHeader" in str(info.value)
