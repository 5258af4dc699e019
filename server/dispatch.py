"""From a request frame to a response frame: version checks, decoding, the handler table, encoding.

Handlers are plain functions `handler(ctx, request) -> response` (or a future of one, for requests the
coordinator parks). What we advertise in ApiVersions is exactly the codec's range (`protocol.api.SUPPORTED`)
for each API that has a handler here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from protocol.api import SUPPORTED, ApiKey
from protocol.codec import decode_request, encode_response, peek
from protocol.errors import DecodeError, ErrorCode
from protocol.messages import RESPONSES
from protocol.messages.api_versions import ApiVersion, ApiVersionsResponse

if TYPE_CHECKING:
    from server.broker import Broker
    from server.network import Connection

log = structlog.get_logger("groupcoord.dispatch")

Handler = Callable[["RequestContext", Any], Any]


class Prebuilt(bytes):
    """A whole response frame encoded once and reused: the dispatcher only patches in the correlation id.

    For the hottest answers (Heartbeat), whose bytes depend on nothing but the version and the error code.
    """

    __slots__ = ()


class RequestContext:
    __slots__ = ("api_key", "broker", "client_host", "client_id", "conn", "correlation_id", "version")

    def __init__(
        self,
        broker: Broker,
        conn: Connection,
        api_key: int,
        version: int,
        correlation_id: int,
        client_id: str | None,
    ) -> None:
        self.broker = broker
        self.conn = conn
        self.api_key = api_key
        self.version = version
        self.correlation_id = correlation_id
        self.client_id = client_id or ""
        self.client_host = "/" + conn.peer_host if conn.peer_host else ""


class Dispatcher:
    def __init__(self, broker: Broker, handlers: dict[ApiKey, Handler]) -> None:
        self.broker = broker
        self.handlers: dict[int, Handler] = {int(k): v for k, v in handlers.items()}
        self.ranges: dict[int, tuple[int, int]] = {int(k): SUPPORTED[k] for k in handlers}
        self.connections: set[Connection] = set()
        self.while_loading: dict[int, Handler] = {}
        self.api_versions_table = tuple(
            ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.ranges.items())
        )

    def dispatch(self, conn: Connection, frame: bytes) -> bytes | asyncio.Future | None:
        """The response frame, a future of it, or None when the connection was closed instead."""
        try:
            api_key, version, correlation_id = peek(frame)
        except DecodeError as exc:
            conn.close(str(exc))
            return None
        handler = self.handlers.get(api_key)
        if handler is None:
            conn.close(f"unknown API key {api_key} (version {version})")
            return None
        lo, hi = self.ranges[api_key]
        if not lo <= version <= hi:
            return self._unsupported(conn, api_key, version, correlation_id, lo, hi)
        try:
            header, request = decode_request(frame)
        except DecodeError as exc:
            conn.close(str(exc))
            return None
        ctx = RequestContext(self.broker, conn, api_key, version, correlation_id, header.client_id)
        if self.broker.loading:
            handler = self.while_loading.get(api_key, handler)
        try:
            response = handler(ctx, request)
            if type(response) is Prebuilt:
                frame = bytearray(response)
                frame[4:8] = correlation_id.to_bytes(4, "big", signed=True)
                return bytes(frame)
        except Exception:
            log.exception("handler failed", api_key=api_key, version=version)
            conn.close("internal error")
            return None
        if (
            isinstance(response, asyncio.Future)
            and response.done()
            and not response.cancelled()
            and response.exception() is None
        ):
            response = response.result()
            if response is None:
                return None
        if isinstance(response, asyncio.Future):
            out = asyncio.get_running_loop().create_future()

            def encode(fut: asyncio.Future) -> None:
                if out.done():
                    return
                if fut.cancelled():
                    out.cancel()
                elif fut.exception() is not None:
                    out.set_exception(fut.exception())  # type: ignore[arg-type]
                else:
                    result = fut.result()
                    try:
                        out.set_result(
                            None
                            if result is None
                            else encode_response(correlation_id, api_key, version, result)
                        )
                    except Exception as exc:
                        log.exception("cannot encode response", api_key=api_key, version=version)
                        out.set_exception(exc)

            response.add_done_callback(encode)
            out.add_done_callback(lambda o: response.cancel() if o.cancelled() else None)
            return out
        try:
            return encode_response(correlation_id, api_key, version, response)
        except Exception:
            log.exception("cannot encode response", api_key=api_key, version=version)
            conn.close("internal error")
            return None

    def _unsupported(
        self, conn: Connection, api_key: int, version: int, correlation_id: int, lo: int, hi: int
    ) -> bytes | None:
        if api_key == ApiKey.API_VERSIONS:
            # KIP-511: answer at v0 with our ApiVersions range, so the client can retry at a version we speak
            body = ApiVersionsResponse(
                error_code=ErrorCode.UNSUPPORTED_VERSION,
                api_keys=(ApiVersion(api_key=int(ApiKey.API_VERSIONS), min_version=lo, max_version=hi),),
            )
            return encode_response(correlation_id, api_key, 0, body)
        log.warning(
            "unsupported version",
            api_key=api_key,
            version=version,
            supported=f"{lo}-{hi}",
            peer=f"{conn.peer_host}:{conn.peer_port}",
        )
        # answered at the nearest version we can encode; a client that negotiated versions never gets here
        nearest = min(max(version, lo), hi)
        cls = RESPONSES[api_key]
        error_code = next((s for s in cls.__kafka_fields__ if s.name == "error_code"), None)
        if error_code is None or nearest not in error_code.versions:
            # no top-level error code at that version: an empty body would read as success, so close (as Kafka does)
            conn.close(
                f"unsupported version {version} of API {api_key}, and no error code to say so at v{nearest}"
            )
            return None
        body = cls(error_code=int(ErrorCode.UNSUPPORTED_VERSION))
        try:
            return encode_response(correlation_id, api_key, nearest, body)
        except Exception:
            conn.close(f"unsupported version {version} of API {api_key}")
            return None
