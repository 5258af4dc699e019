"""From a request frame to a response frame: version checks, decoding, the handler table, encoding.

Handlers are plain functions `handler(ctx, request) -> response` (or a future of one, for requests the
coordinator parks). What we advertise in ApiVersions is exactly the codec's range (`groupcoord.protocol.api.SUPPORTED`)
for each API that has a handler here, except Produce's minimum: advertised 0 as Kafka 4.x does (KAFKA-18659,
`protocol.api.ADVERTISED_MIN`); a request at such an advertised-but-removed version closes the connection.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import structlog

from groupcoord.protocol.api import SUPPORTED, ApiKey, advertised
from groupcoord.protocol.codec import decode_request_counted, encode_response, peek
from groupcoord.protocol.errors import DecodeError, ErrorCode
from groupcoord.protocol.messages import RESPONSES
from groupcoord.protocol.messages.api_versions import ApiVersion, ApiVersionsResponse

if TYPE_CHECKING:
    from groupcoord.server.net.listeners import Listener
    from groupcoord.server.services import HandlerServices

log = structlog.get_logger("groupcoord.dispatch")

Handler = Callable[["RequestContext", Any], Any]
#: a fast lane (issue 28): (services, connection, request frame, version) -> (the whole response frame, its
#: correlation id included; what the `RequestObserver` is told: a `Prebuilt` or a response body of a few
#: distinct values), or None to take the general path (decode, context, handler)
FastLane = Callable[["HandlerServices", "Peer", bytes, int], "tuple[bytes, object] | None"]


PASS: Any = object()
"""What the fault-injection hook returns to let a request through to its handler."""


class Interceptor(Protocol):
    """The test controls' hook (`server.control.faults.FaultInjector`): false while it has nothing to do, so
    production pays one truth test per request; otherwise it may answer a request instead of its handler
    (returning anything but `PASS`). A Protocol so that `dispatch` does not import `server.control`."""

    def __bool__(self) -> bool: ...

    def intercept(self, ctx: RequestContext, request: Any, frame: bytes) -> Any: ...


class Peer(Protocol):
    """What the dispatcher and the broker's shutdown use of a client connection (`server.net.network.Connection`).

    A Protocol rather than the class, so that `network` imports `dispatch` and not the other way round.
    """

    peer_host: str
    peer_port: int
    listener: Listener  # the listener the connection came in on
    principal: str  # `User:name` once authenticated (SASL, client certificate), else `User:ANONYMOUS`

    @property
    def transport(self) -> asyncio.BaseTransport | None: ...

    def close(self, reason: str) -> None: ...


class Mapped:
    """A future's result still to be converted: `then()` builds these so that a parked request is answered
    through one callback on its reply future, instead of a chain of futures each costing a loop round."""

    __slots__ = ("convert", "src")

    def __init__(self, src: asyncio.Future, convert: Callable[[Any], Any]) -> None:
        self.src = src
        self.convert = convert


_R = TypeVar("_R")
#: what a handler returns (`Reply[JoinGroupResponse]`): its response now, a future of it (a parked request), a
#: `then()` conversion of one (`Mapped`), or None when the connection was closed instead
Reply = _R | asyncio.Future[_R] | Mapped | None


def then(src: Any, convert: Callable[[Any], Any]) -> Any:
    """Apply `convert` to a value now, or to a future's result when it comes."""
    if isinstance(src, Mapped):
        inner = src.convert
        return Mapped(src.src, lambda v: convert(inner(v)))
    if not isinstance(src, asyncio.Future):
        return convert(src)
    if src.done() and not src.cancelled() and src.exception() is None:
        return convert(src.result())  # answered at once (e.g. MEMBER_ID_REQUIRED): no callback round trip
    return Mapped(src, convert)


async def resolved(value: Any) -> Any:
    """What a handler's answer comes to: the value itself, a future's result, or a `then()` conversion's."""
    if isinstance(value, Mapped):
        return value.convert(await value.src)
    if isinstance(value, asyncio.Future):
        return await value
    return value


class Pending:
    """What the connection waits on for a parked request: the reply future and how to turn it into bytes."""

    __slots__ = ("encode", "fut")

    def __init__(self, fut: asyncio.Future, encode: Callable[[Any], bytes | None]) -> None:
        self.fut = fut
        self.encode = encode


class Prebuilt(bytes):
    """A whole response frame encoded once and reused: the dispatcher only patches in the correlation id.

    For the hottest answers (Heartbeat), whose bytes depend on nothing but the version and the error code.
    """

    __slots__ = ()


class RequestContext:
    """One request as its handler sees it: the header's fields, the connection, and `services` (the narrow
    `HandlerServices` interface to the server, not the whole Broker)."""

    __slots__ = (
        "api_key",
        "client_host",
        "client_id",
        "conn",
        "correlation_id",
        "listener",
        "principal",
        "services",
        "version",
    )

    def __init__(
        self,
        services: HandlerServices,
        conn: Peer,
        api_key: int,
        version: int,
        correlation_id: int,
        client_id: str | None,
    ) -> None:
        self.services = services
        self.conn = conn
        self.api_key = api_key
        self.version = version
        self.correlation_id = correlation_id
        self.client_id = client_id or ""
        self.client_host = "/" + conn.peer_host if conn.peer_host else ""
        #: the listener the request came in on: Metadata and FindCoordinator answer with its advertised address
        self.listener = conn.listener
        self.principal = conn.principal


def connection_closed(dispatcher: Dispatcher, conn: Peer) -> None:
    """A connection is gone: forget it and tell the listeners; a failing listener is logged, not raised."""
    dispatcher.connections.discard(conn)
    for listener in dispatcher.on_connection_closed:
        try:
            listener(conn)
        except Exception:
            log.exception("connection-closed listener failed")


class RequestObserver:
    """Told about every answered request (metrics live in `groupcoord.server.ops`); the default does nothing.

    `response` is the response body, or the pre-encoded frame for `Prebuilt` answers; `started` is the
    `time.perf_counter()` at which the frame was taken up.
    """

    def request_done(self, api_key: int, version: int, response: object, started: float) -> None:
        return None


class Dispatcher:
    def __init__(self, services: HandlerServices, handlers: dict[ApiKey, Handler]) -> None:
        self.services = services
        self.observer: RequestObserver = RequestObserver()
        self.handlers: dict[int, Handler] = {int(k): v for k, v in handlers.items()}
        self.ranges: dict[int, tuple[int, int]] = {int(k): SUPPORTED[k] for k in handlers}
        self.connections: set[Peer] = set()
        #: told when a connection closes (KIP-932: its share sessions end and their records are released)
        self.on_connection_closed: list[Callable[[Peer], None]] = []
        self.while_loading: dict[int, Handler] = {}
        #: cluster mode: picks the NOT_COORDINATOR / LOAD_IN_PROGRESS answer for groups not served here
        self.route: Callable[[RequestContext, int, Any], Handler | None] | None = None
        # requests that carried bytes after their last field (ignored, as Kafka does) and how many bytes
        self.requests_with_ignored_bytes = 0
        self.ignored_request_bytes = 0
        self.faults: Interceptor | None = None  # test controls (server/control); None in production
        #: api key -> (fast lane, min version, max version); `add_fast_lane` installs them (the broker: only
        #: where no ACL check wraps the handlers); skipped while loading, in cluster mode (routing) and under
        #: the test controls
        self.fast_lanes: dict[int, tuple[FastLane, int, int]] = {}
        self.api_versions_table = tuple(
            ApiVersion(api_key=k, min_version=advertised(ApiKey(k))[0], max_version=hi)
            for k, (lo, hi) in sorted(self.ranges.items())
        )

    def add_fast_lane(self, api_key: ApiKey, lane: FastLane) -> None:
        """Answer the API's common requests through `lane` first (issue 28); its version range is the API's."""
        lo, hi = self.ranges[int(api_key)]
        self.fast_lanes[int(api_key)] = (lane, lo, hi)

    def dispatch(self, conn: Peer, frame: bytes) -> bytes | Pending | None:
        """The response frame, a future of it, or None when the connection was closed instead."""
        started = time.perf_counter()
        try:
            api_key, version, correlation_id = peek(frame)
        except DecodeError as exc:
            conn.close(str(exc))
            return None
        lane = self.fast_lanes.get(api_key)
        if (
            lane is not None
            and lane[1] <= version <= lane[2]
            and not self.faults
            and self.route is None
            and not self.services.loading
        ):
            answered = lane[0](self.services, conn, frame, version)
            if answered is not None:
                self.observer.request_done(api_key, version, answered[1], started)
                return answered[0]
        handler = self.handlers.get(api_key)
        if handler is None:
            conn.close(f"unknown API key {api_key} (version {version})")
            return None
        lo, hi = self.ranges[api_key]
        if not lo <= version <= hi:
            if 0 <= version < lo and version >= advertised(ApiKey(api_key))[0]:
                # advertised but removed (Produce v0-2, KAFKA-18659): Kafka's SocketServer closes the connection
                conn.close(f"version {version} of API {api_key} is advertised for old clients but not served")
                return None
            return self.unsupported(conn, api_key, version, correlation_id, lo, hi)
        try:
            header, request, ignored = decode_request_counted(frame)
        except DecodeError as exc:
            conn.close(str(exc))
            return None
        if ignored:
            self._ignored(conn, api_key, version, frame, ignored)
        ctx = RequestContext(self.services, conn, api_key, version, correlation_id, header.client_id)
        if self.faults:  # fault injection and request recording (tests only): may answer instead
            injected = self.faults.intercept(ctx, request, frame)
            if injected is not PASS:
                return injected
        if self.services.loading:
            handler = self.while_loading.get(api_key, handler)
        elif self.route is not None:
            handler = self.route(ctx, api_key, request) or handler
        try:
            response = handler(ctx, request)
            if type(response) is Prebuilt:
                self.observer.request_done(api_key, version, response, started)
                frame = bytearray(response)
                frame[4:8] = correlation_id.to_bytes(4, "big", signed=True)
                return bytes(frame)
        except Exception:
            log.exception("handler failed", api_key=api_key, version=version)
            conn.close("internal error")
            return None
        convert = None
        if isinstance(response, Mapped):
            response, convert = response.src, response.convert
        if isinstance(response, asyncio.Future):
            if not response.done() or response.cancelled() or response.exception() is not None:

                def encode(result: Any) -> bytes | None:
                    if convert is not None:
                        result = convert(result)
                    if result is not None:
                        self.observer.request_done(api_key, version, result, started)
                    return (
                        None if result is None else encode_response(correlation_id, api_key, version, result)
                    )

                return Pending(response, encode)
            response = response.result()
            if convert is not None:
                response = convert(response)
        if response is None:
            return None
        self.observer.request_done(api_key, version, response, started)
        try:
            return encode_response(correlation_id, api_key, version, response)
        except Exception:
            log.exception("cannot encode response", api_key=api_key, version=version)
            conn.close("internal error")
            return None

    def _ignored(self, conn: Peer, api_key: int, version: int, frame: bytes, ignored: int) -> None:
        """Count and log (debug) the bytes after a request's last field: Kafka ignores them silently."""
        self.requests_with_ignored_bytes += 1
        self.ignored_request_bytes += ignored
        log.debug(
            "ignored bytes after the request's last field",
            api_key=api_key,
            version=version,
            ignored=ignored,
            frame_tail=frame[-16:].hex(),
            peer=f"{conn.peer_host}:{conn.peer_port}",
        )

    def unsupported(
        self, conn: Peer, api_key: int, version: int, correlation_id: int, lo: int, hi: int
    ) -> bytes | None:
        """The answer to a request whose version is outside `lo..hi` (the test controls' `max_version` cap
        uses it too, so a capped API is refused exactly as one we never spoke)."""
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
