"""Bad bytes end in `groupcoord.protocol.errors.DecodeError` and nothing else, naming the API, version and byte offset.

IndexError, struct.error, UnicodeDecodeError, construct's own exceptions etc. must never escape `decode`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from codec_helpers import ALL_MESSAGES, all_cases, case_id, fuzz, message_strategy, versions_of
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.protocol.errors import DecodeError
from groupcoord.protocol.messages.api_versions import ApiVersionsResponse
from groupcoord.protocol.messages.create_partitions import CreatePartitionsRequest
from groupcoord.protocol.messages.fetch import FetchResponse
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.protocol.messages.produce import ProduceRequest

CASES = all_cases()
FUZZ = fuzz(3)


def decode_or_error(cls: type, data: bytes, version: int) -> Any:
    """Decode, or return the DecodeError; any other exception fails the test."""
    try:
        return cls.decode(data, version)
    except DecodeError as exc:
        check_message(exc, cls, version, len(data))
        return exc


def check_message(exc: DecodeError, cls: type, version: int, size: int) -> None:
    assert exc.what == cls.__name__
    assert exc.version == version
    assert 0 <= exc.offset <= size
    text = str(exc)
    assert cls.__name__ in text
    assert f"v{version}" in text
    assert f"byte {exc.offset}" in text


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_truncation_is_a_decode_error(case: tuple[type, int]) -> None:
    cls, version = case

    @FUZZ
    @given(message_strategy(cls, version, unknown=True))
    def check(obj: Any) -> None:
        data = obj.encode(version)
        for cut in range(len(data)):
            result = decode_or_error(cls, data[:cut], version)
            assert isinstance(result, DecodeError), f"prefix of {cut}/{len(data)} bytes decoded: {result}"

    check()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_trailing_garbage_is_a_decode_error(case: tuple[type, int]) -> None:
    """`cls.decode` of a whole message is strict (responses, nested messages, tests). Request frames on the
    wire are not: `decode_request` ignores bytes after the last field, as Kafka does (test_codec_headers)."""
    cls, version = case

    @fuzz(4)
    @given(message_strategy(cls, version), st.binary(min_size=1, max_size=8))
    def check(obj: Any, garbage: bytes) -> None:
        data = obj.encode(version)
        with pytest.raises(DecodeError) as info:
            cls.decode(data + garbage, version)
        check_message(info.value, cls, version, len(data) + len(garbage))
        assert info.value.offset == len(data)
        assert "trailing" in info.value.reason

    check()


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
def test_random_bytes_decode_or_fail_cleanly(cls: type) -> None:
    versions = list(versions_of(cls))

    @fuzz(40)
    @given(st.sampled_from(versions), st.binary(max_size=48))
    def check(version: int, data: bytes) -> None:
        result = decode_or_error(cls, data, version)
        if not isinstance(result, DecodeError):  # whatever decodes must round trip from its own encoding
            assert cls.decode(result.encode(version), version) == result

    check()


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
def test_mutated_messages_decode_or_fail_cleanly(cls: type) -> None:
    """Valid encodings with a few bytes overwritten: DecodeError or an object, never another exception."""
    versions = list(versions_of(cls))

    @fuzz(20)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(versions))
        raw = bytearray(data.draw(message_strategy(cls, version, unknown=True)).encode(version))
        if not raw:
            return
        for _ in range(data.draw(st.integers(1, 3))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(
                st.sampled_from([0x00, 0x7F, 0x80, 0xFF])
            )
        decode_or_error(cls, bytes(raw), version)

    check()


# --- hand-made bad inputs --------------------------------------------------------------------------------

OVERLONG_VARINT = b"\x80\x80\x80\x80\x80\x01"  # six bytes: longer than any 32-bit varint may be
VARINT_OVER_32_BITS = b"\xff\xff\xff\xff\x7f"  # five bytes, but a 35-bit value
# ProduceRequest v3 up to the first partition's Records: null TransactionalId, acks 1, timeout 0, topic "t",
# partition 0.
PRODUCE_V3_PREFIX = (
    b"\xff\xff\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00"
)
# ApiVersionsResponse v3 up to its tagged fields: no error, no api keys, no throttle.
API_VERSIONS_V3_PREFIX = b"\x00\x00\x01\x00\x00\x00\x00"

BAD_INPUTS: list[tuple[str, type, int, bytes, str]] = [
    # (name, class, version, bytes, regex the reason must match)
    ("invalid utf-8 string", FindCoordinatorRequest, 0, b"\x00\x02\xff\xfe", "UTF-8"),
    ("invalid utf-8 compact string", FindCoordinatorRequest, 3, b"\x03\xc3\x28\x00\x00", "UTF-8"),
    ("invalid utf-8 in array element", MetadataRequest, 1, b"\x00\x00\x00\x01\x00\x01\x80", "UTF-8"),
    ("overlong surrogate utf-8", FindCoordinatorRequest, 0, b"\x00\x03\xed\xa0\x80", "UTF-8"),
    ("null non-nullable string", FindCoordinatorRequest, 0, b"\xff\xff", "null"),
    ("negative string length", FindCoordinatorRequest, 0, b"\xff\xfe", ""),
    ("negative nullable string length", FindCoordinatorResponse, 1, b"\x00" * 6 + b"\xff\xfe", "negative"),
    ("negative array length", MetadataRequest, 1, b"\xff\xff\xff\xfe", "negative"),
    ("null non-nullable array", MetadataRequest, 0, b"\xff\xff\xff\xff", "null"),
    ("null non-nullable compact array", MetadataResponse, 9, b"\x00\x00\x00\x00\x00", "null"),
    ("negative records length", ProduceRequest, 3, PRODUCE_V3_PREFIX + b"\xff\xff\xff\xfe", "negative"),
    ("overlong varint length", FindCoordinatorRequest, 3, OVERLONG_VARINT, "varint"),
    ("varint over 32 bits", FindCoordinatorRequest, 3, VARINT_OVER_32_BITS, "varint"),
    ("overlong tagged-field count", FindCoordinatorRequest, 3, b"\x01\x00" + OVERLONG_VARINT, "varint"),
    ("huge array count", MetadataRequest, 1, b"\x7f\xff\xff\xff\x00\x01a", ""),
    ("huge compact array count", MetadataRequest, 9, b"\xff\xff\xff\xff\x0f\x02a\x00", ""),
    (
        "huge nested array count",
        CreatePartitionsRequest,
        0,
        b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x7f\xff\xff\xff",
        "",
    ),
    ("huge records length", ProduceRequest, 3, PRODUCE_V3_PREFIX + b"\x7f\xff\xff\xff\x00", "needed"),
    # tags: (3, 1 byte, true), (0, 1 byte, empty array)
    (
        "tagged fields out of order",
        ApiVersionsResponse,
        3,
        API_VERSIONS_V3_PREFIX + b"\x02\x03\x01\x01\x00\x01\x01",
        "order",
    ),
    (
        "duplicate tagged field",
        ApiVersionsResponse,
        3,
        API_VERSIONS_V3_PREFIX + b"\x02\x03\x01\x01\x03\x01\x01",
        "order",
    ),
    (
        "tagged field longer than its value",
        ApiVersionsResponse,
        3,
        API_VERSIONS_V3_PREFIX + b"\x01\x03\x02\x01\x00",
        "trailing",
    ),
    (
        "tagged field shorter than its value",
        ApiVersionsResponse,
        3,
        API_VERSIONS_V3_PREFIX + b"\x01\x01\x04" + b"\x00" * 8,
        "",
    ),
    (
        "tagged field size past the end",
        ApiVersionsResponse,
        3,
        API_VERSIONS_V3_PREFIX + b"\x01\x07\x7f\x00",
        "needed",
    ),
    ("unknown tagged field truncated", FetchResponse, 12, b"\x00" * 10 + b"\x01\x01\x05\x0a\x00", ""),
    ("unknown version", FindCoordinatorRequest, 99, b"", "version"),
    ("empty input", MetadataResponse, 0, b"", ""),
]


@pytest.mark.parametrize(
    ("cls", "version", "data", "reason"),
    [pytest.param(c, v, d, r, id=name) for name, c, v, d, r in BAD_INPUTS],
)
def test_bad_input_is_a_decode_error(cls: type, version: int, data: bytes, reason: str) -> None:
    with pytest.raises(DecodeError) as info:
        cls.decode(data, version)
    check_message(info.value, cls, version, len(data))
    assert re.search(reason, info.value.reason, re.IGNORECASE), info.value.reason


def test_trailing_garbage_offset_and_reason() -> None:
    data = FindCoordinatorRequest(key="g").encode(0)
    with pytest.raises(DecodeError) as info:
        FindCoordinatorRequest.decode(data + b"\x00\x00", 0)
    assert info.value.offset == len(data)
    assert str(info.value) == f"cannot decode FindCoordinatorRequest v0 at byte {len(data)}: 2 trailing bytes"


def test_decode_error_is_a_value_error() -> None:
    """Callers that only know ValueError still catch it."""
    assert issubclass(DecodeError, ValueError)
