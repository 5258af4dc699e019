"""Requests of groupcoord's codec sent through aiokafka's own client and connections.

aiokafka's `AIOKafkaClient.send(node_id, request)` accepts any object with ``prepare(versions)`` that returns
something able to build its header, encode its body, parse the response header and decode the response. This
adapter answers those calls with `groupcoord.protocol.codec`, so the consumer-protocol member reuses aiokafka's
connections (TLS, SASL, reconnects, the coordinator connection group) for APIs aiokafka does not know:
ConsumerGroupHeartbeat (68), OffsetCommit v9 (member epochs) and Metadata v12 (topic ids).
"""

from __future__ import annotations

import io
from typing import Any

from aiokafka.errors import IncompatibleBrokerVersion

from groupcoord.protocol.codec import decode_response, encode_request


class _Encoded:
    """The header-and-body bytes of one request; aiokafka writes ``header.encode() + body.encode()``."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def encode(self) -> bytes:
        return self.data


class _Header:
    """What aiokafka reads of a response header: only the correlation id."""

    def __init__(self, correlation_id: int) -> None:
        self.correlation_id = correlation_id


class _Decoder:
    """Stands in for aiokafka's RESPONSE_TYPE: decodes the frame the header parse kept."""

    def __init__(self, wire: WireRequest) -> None:
        self.wire = wire

    def decode(self, stream: io.BytesIO) -> Any:
        return self.wire.decoded


class WireRequest:
    """One request body of our codec at ``api_version`` (the newest the broker takes, up to that version)."""

    def __init__(self, api_key: int, api_version: int, body: object, min_version: int | None = None) -> None:
        self.api_key, self.api_version, self.body = api_key, api_version, body
        self.min_version = api_version if min_version is None else min_version
        self.version = api_version
        self.decoded: Any = None
        self.RESPONSE_TYPE = _Decoder(self)

    def prepare(self, versions: dict[int, tuple[int, int]]) -> WireRequest:
        """Pick the version against the broker's ApiVersions range, as aiokafka's own requests do."""
        low_high = versions.get(self.api_key)
        if low_high is None or low_high[1] < self.min_version or low_high[0] > self.api_version:
            raise IncompatibleBrokerVersion(f"broker does not support API {self.api_key} v{self.min_version}")
        self.version = min(self.api_version, low_high[1])
        return self

    def build_request_header(self, correlation_id: int, client_id: str) -> _Encoded:
        frame = encode_request(self.api_key, self.version, correlation_id, self.body, client_id=client_id)
        return _Encoded(frame[4:])  # aiokafka adds the size prefix

    def encode(self) -> bytes:
        return b""  # the body travelled with the header

    def parse_response_header(self, stream: io.BytesIO) -> _Header:
        frame = stream.read()
        correlation_id, self.decoded = decode_response(frame, self.api_key, self.version)
        return _Header(correlation_id)

    def __repr__(self) -> str:
        return f"WireRequest(api_key={self.api_key}, v{self.version}, {self.body!r})"
