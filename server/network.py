"""One asyncio.Protocol per client connection: size framing, one request in flight, ordered replies.

Kafka mutes a channel while a request is being handled, so responses leave in request order and a parked
JoinGroup holds back that connection's later requests. We do the same: frames that arrive while a request is
in flight wait in the buffer (reading pauses once the buffer grows), and the next frame is handled only
after the reply is written. A request that is answered at once (a heartbeat, say) never leaves
`data_received`: no task, no future.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:
    from groupcoord.server.dispatch import Dispatcher

log = structlog.get_logger("groupcoord.network")

_PAUSE_AT = 1 << 20  # pause reading when this much is buffered behind an in-flight request


class Connection(asyncio.Protocol):
    __slots__ = (
        "_buf",
        "_dispatcher",
        "_encode",
        "_in_flight",
        "_max_frame",
        "_paused",
        "closed",
        "peer_host",
        "peer_port",
        "transport",
    )

    def __init__(self, dispatcher: Dispatcher, max_frame: int) -> None:
        self._dispatcher = dispatcher
        self._max_frame = max_frame
        self._buf = bytearray()
        self._in_flight: asyncio.Future | None = None
        self._encode: Any = None
        self._paused = False
        self.closed = False
        self.transport: asyncio.Transport | None = None
        self.peer_host = ""
        self.peer_port = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer_host, self.peer_port = peer[0], peer[1]
        self._dispatcher.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._dispatcher.connections.discard(self)
        if self._in_flight is not None and not self._in_flight.done():
            self._in_flight.cancel()  # a parked request dies with its connection
        self._in_flight = None

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        if self._in_flight is None:
            self._drain()
        elif len(buf) > _PAUSE_AT and not self._paused:
            self._paused = True
            self.transport.pause_reading()  # type: ignore[union-attr]

    def close(self, reason: str) -> None:
        if not self.closed:
            log.warning("closing connection", peer=f"{self.peer_host}:{self.peer_port}", reason=reason)
            self.closed = True
            if self.transport is not None:
                self.transport.close()

    def _drain(self) -> None:
        """Handle every whole frame in the buffer; replies answered at once leave in one write (one syscall
        for a client's pipelined heartbeats instead of one each)."""
        buf = self._buf
        out: list[bytes] = []
        try:
            while len(buf) >= 4 and not self.closed:
                size = int.from_bytes(buf[:4], "big", signed=True)
                if size < 0 or size > self._max_frame:
                    self.close(f"frame of {size} bytes exceeds socket.request.max.bytes ({self._max_frame})")
                    return
                end = 4 + size
                if len(buf) < end:
                    return  # the rest of the frame is still arriving
                frame = bytes(buf[4:end])
                del buf[:end]
                reply = self._dispatcher.dispatch(self, frame)
                if reply is None:
                    continue
                if isinstance(reply, bytes):
                    out.append(reply)
                    continue
                # a parked request: stop here until it is answered
                self._in_flight = reply.fut
                self._encode = reply.encode
                reply.fut.add_done_callback(self._answered)
                return
            if self._paused and len(buf) < _PAUSE_AT:
                self._paused = False
                self.transport.resume_reading()  # type: ignore[union-attr]
        finally:
            if out and not self.closed:
                self.transport.write(out[0] if len(out) == 1 else b"".join(out))  # type: ignore[union-attr]

    def _answered(self, fut: asyncio.Future) -> None:
        self._in_flight = None
        if self.closed or fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            log.error("request failed", error=repr(exc), peer=f"{self.peer_host}:{self.peer_port}")
            self.close("internal error while handling a request")
            return
        try:
            data = self._encode(fut.result())  # type: ignore[misc]
        except Exception as exc:
            log.error("cannot encode a response", error=repr(exc), peer=f"{self.peer_host}:{self.peer_port}")
            self.close("internal error while encoding a response")
            return
        if data is not None:
            self.transport.write(data)  # type: ignore[union-attr]
        self._drain()
