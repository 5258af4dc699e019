"""Frames: a 4-byte size, a header, a body. The functions the server and clients call.

`peek` reads the fixed header prefix without decoding anything else, so a server can route, answer
UNSUPPORTED_VERSION, or drop an unknown API before touching the body.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import DecodeError, EncodeError
from groupcoord.protocol.fast import BODY_READERS, BODY_WRITERS
from groupcoord.protocol.headers import RequestHeader, ResponseHeader
from groupcoord.protocol.messages import REQUESTS, RESPONSES
from groupcoord.protocol.schema import codec, decode_from, encode_into

_PREFIX = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_I16 = struct.Struct(">h")
_CORR_V0 = struct.Struct(">ii")  # size, correlation id


def peek(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request frame (without its size prefix)."""
    if len(frame) < 8:
        raise DecodeError("RequestHeader", None, len(frame), "frame shorter than the 8-byte header prefix")
    return _PREFIX.unpack_from(frame, 0)


_FLEXIBLE: dict[tuple[int, int], bool] = {}


def is_flexible(api_key: int, api_version: int) -> bool:
    key = (api_key, api_version)
    flexible = _FLEXIBLE.get(key)
    if flexible is None:
        cls: Any = REQUESTS.get(api_key)  # a @message class: FLEXIBLE_VERSIONS is set by the decorator
        flexible = _FLEXIBLE[key] = cls is not None and api_version in cls.FLEXIBLE_VERSIONS
    return flexible


def request_header_version(api_key: int, api_version: int) -> int:
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def decode_request(frame: bytes) -> tuple[RequestHeader, Any]:
    """Header and body of a request frame; the API and version must be ones the codec declares.

    Bytes after the last field of the version are ignored, as Kafka's request parser does.
    """
    header, body, _ = decode_request_counted(frame)
    return header, body


def decode_request_counted(frame: bytes) -> tuple[RequestHeader, Any, int]:
    """`decode_request` plus the number of bytes after the body's last field, which were ignored.

    Kafka's `AbstractRequest.parseRequest` reads the fields of the version and never checks that the buffer
    is used up; clients rely on it (librdkafka 2.12-2.16 pads its all-topics Metadata v12 with 3 bytes).
    """
    api_key, api_version, correlation_id = peek(frame)
    cls = REQUESTS.get(api_key)
    if cls is None:
        raise DecodeError(f"api key {api_key}", api_version, 0, "unknown API")
    # The header's fixed prefix is already read; its client id and (v2) empty tag section are read here
    # directly, the common case, and through the declared header codec otherwise.
    n = _I16.unpack_from(frame, 8)[0] if len(frame) >= 10 else -2
    pos = 10 + max(n, 0)
    flexible = is_flexible(api_key, api_version)
    if n >= -1 and len(frame) > pos - (0 if flexible else 1) and (not flexible or frame[pos] == 0):
        try:
            client_id = None if n == -1 else frame[10:pos].decode("utf-8")
        except UnicodeDecodeError:
            client_id = ""
            n = -2
        if n >= -1:
            header = RequestHeader(api_key, api_version, correlation_id, client_id)
            reader = BODY_READERS.get(api_key)  # a hand-written reader for the hottest bodies (issue 28)
            if reader is not None:
                read = reader(frame, pos + 1 if flexible else pos, api_version)
                if read is not None:
                    return header, read[0], len(frame) - read[1]
            stream = io.BytesIO(frame)
            stream.seek(pos + 1 if flexible else pos)
            body = decode_from(cls, stream, api_version, len(frame), strict=False)
            return header, body, len(frame) - stream.tell()
    stream = io.BytesIO(frame)
    header = decode_from_partial(RequestHeader, stream, request_header_version(api_key, api_version))
    body = decode_from(cls, stream, api_version, len(frame), strict=False)
    return header, body, len(frame) - stream.tell()


def decode_from_partial(cls: type, stream: io.BytesIO, version: int) -> Any:
    """Decode a header: it is followed by the body, so trailing bytes are expected."""
    c = codec(cls, version)
    try:
        return c.parse(stream, None)
    except Exception as exc:
        raise DecodeError(cls.__name__, version, stream.tell(), str(exc) or type(exc).__name__) from None


def encode_response(correlation_id: int, api_key: int, api_version: int, body: Any) -> bytes:
    """A whole response frame, size prefix included."""
    writer = BODY_WRITERS.get(api_key)
    if writer is not None:
        frame = writer(correlation_id, api_version, body)
        if frame is not None:
            return frame
    c = codec(type(body), api_version)
    stream = io.BytesIO()
    stream.write(_CORR_V0.pack(0, correlation_id))
    if response_header_version(api_key, api_version) == 1:
        stream.write(b"\x00")  # response header v1: no tagged fields
    try:
        c.build(body, stream, None)
    except EncodeError:
        raise
    except Exception as exc:
        raise EncodeError(f"cannot encode {c.name} v{api_version}: {exc}") from exc
    data = stream.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return stream.getvalue()


def encode_request(
    api_key: int, api_version: int, correlation_id: int, body: Any, client_id: str | None = "groupcoord"
) -> bytes:
    """A whole request frame, size prefix included (used by tests, benchmarks and load generators)."""
    stream = io.BytesIO()
    stream.write(b"\x00\x00\x00\x00")
    header = RequestHeader(
        request_api_key=api_key,
        request_api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    encode_into(header, stream, request_header_version(api_key, api_version))
    encode_into(body, stream, api_version)
    data = stream.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return stream.getvalue()


def decode_response(frame: bytes, api_key: int, api_version: int) -> tuple[int, Any]:
    """(correlation_id, body) of a response frame without its size prefix."""
    cls = RESPONSES[api_key]
    stream = io.BytesIO(frame)
    header = decode_from_partial(ResponseHeader, stream, response_header_version(api_key, api_version))
    return header.correlation_id, decode_from(cls, stream, api_version, len(frame))
