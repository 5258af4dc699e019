"""One asyncio.Protocol per client connection: size framing, one request in flight, ordered replies.

Kafka mutes a channel while a request is being handled, so responses leave in request order and a parked
JoinGroup holds back that connection's later requests. We do the same: frames that arrive while a request is
in flight wait in the buffer (reading pauses once the buffer grows), and the next frame is handled only
after the reply is written. A request that is answered at once (a heartbeat, say) never leaves
`data_received`: no task, no future.

No single connection may hold the server (issue 11), so three bounds apply on top of that:

- **write backpressure**: the transport calls `pause_writing` once a peer's unsent replies pass
  `WRITE_HIGH`; until `resume_writing` we neither read nor handle that connection's requests (Kafka mutes
  the channel until its response is sent), so a client that never reads holds a bounded amount of memory;
- **fair slices**: one callback handles at most `SLICE_FRAMES` frames, `SLICE_BYTES` of replies or
  `SLICE_SECONDS` of work; the rest of a burst continues in a later loop iteration, after other connections;
- **timeouts and caps** (`ConnectionGuard`): `connections.max.idle.ms`, a bound on how long a started request
  frame may take to arrive, `max.connections.per.ip` and `max.connections`.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from groupcoord.server.net.dispatch import PASS, connection_closed

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import Dispatcher
    from groupcoord.server.net.listeners import Listener

log = structlog.get_logger("groupcoord.network")

_SIZE = struct.Struct(">i")  # a frame's size prefix
_PAUSE_AT = 1 << 20  # pause reading when this much is buffered but not yet handled
WRITE_HIGH = 256 * 1024  # unsent reply bytes at which the transport calls pause_writing
WRITE_LOW = 64 * 1024  # ... and the level it must drain to before resume_writing
SLICE_FRAMES = 64  # at most this many requests handled per callback before yielding to the loop
SLICE_BYTES = 256 * 1024  # ... or this many reply bytes
SLICE_SECONDS = 0.001  # ... or this much time (one all-topics Metadata of 800 partitions takes ~4 ms)


class Gate(Protocol):
    """A connection's authentication (`server.security.gate.SaslGate`): until `authenticated`, every frame goes
    to `receive`, which answers it, closes the connection, or returns `PASS` to let the dispatcher have it."""

    authenticated: bool
    #: Kafka's sasl.server.max.receive.size: the largest frame read before authentication completes
    max_receive_size: int

    def receive(self, conn: Connection, frame: bytes) -> object: ...


class ConnectionSecurity(Protocol):
    """`server.security.Security`: sets a new connection's principal and gives it a gate when it needs one."""

    def connection_made(self, conn: Connection) -> Gate | None: ...


@dataclass(frozen=True)
class NetworkLimits:
    """The per-connection bounds, from `ServerConfig` (Kafka's names where Kafka has the setting)."""

    max_frame: int = 104857600  # socket.request.max.bytes
    idle_ms: int = 600000  # connections.max.idle.ms
    frame_timeout_ms: int = 30000  # groupcoord's own: a started request frame must complete in this time
    max_per_ip: int = 2**31 - 1  # max.connections.per.ip
    max_total: int = 2**31 - 1  # max.connections


class ConnectionGuard:
    """Counts connections per client address and in total, and closes idle and stalled ones.

    One periodic sweep (not a timer per connection, which would cost on every request) looks at each
    connection's last activity and at how long its current partial frame has been arriving.
    """

    def __init__(self, limits: NetworkLimits, loop: asyncio.AbstractEventLoop) -> None:
        self.limits = limits
        self.loop = loop
        self.per_ip: dict[str, int] = {}
        self.total = 0
        self.conns: set[Connection] = set()
        self.refused = 0
        # Kafka frames read and written, size prefix included (socket-server-metrics incoming/outgoing-byte-total);
        # counted once per frame (or per batch of answers written together), never per syscall
        self.bytes_in = 0
        self.bytes_out = 0
        self._sweep_handle: asyncio.TimerHandle | None = None
        shortest = min(limits.idle_ms, limits.frame_timeout_ms) / 1000
        self.sweep_interval = min(1.0, max(0.05, shortest / 4))

    def admit(self, conn: Connection) -> str | None:
        """Count a new connection, or say why it must be closed (Kafka closes it at once, too)."""
        host = conn.peer_host
        if self.total >= self.limits.max_total:
            return f"max.connections ({self.limits.max_total}) reached"
        if self.per_ip.get(host, 0) >= self.limits.max_per_ip:
            return f"max.connections.per.ip ({self.limits.max_per_ip}) reached for {host}"
        self.per_ip[host] = self.per_ip.get(host, 0) + 1
        self.total += 1
        self.conns.add(conn)
        if self._sweep_handle is None:
            self._sweep_handle = self.loop.call_later(self.sweep_interval, self._sweep)
        return None

    def release(self, conn: Connection) -> None:
        if conn not in self.conns:
            return
        self.conns.discard(conn)
        self.total -= 1
        left = self.per_ip.get(conn.peer_host, 1) - 1
        if left > 0:
            self.per_ip[conn.peer_host] = left
        else:
            self.per_ip.pop(conn.peer_host, None)

    def _sweep(self) -> None:
        self._sweep_handle = None
        now = self.loop.time()
        idle = self.limits.idle_ms / 1000
        frame = self.limits.frame_timeout_ms / 1000
        for conn in list(self.conns):
            if conn.closed:
                continue
            waiting = conn.in_flight is None and not conn.reading_paused  # we are reading its next frame
            if waiting and conn.frame_started is not None and now - conn.frame_started > frame:
                conn.close(f"request frame not complete after {self.limits.frame_timeout_ms} ms")
            elif conn.activity != conn.seen_activity:  # traffic since the last sweep
                conn.seen_activity = conn.activity
                conn.last_active = now
            elif conn.in_flight is None and now - conn.last_active > idle:
                conn.close(f"idle for more than connections.max.idle.ms ({self.limits.idle_ms})")
        if self.conns:
            self._sweep_handle = self.loop.call_later(self.sweep_interval, self._sweep)

    def close(self) -> None:
        if self._sweep_handle is not None:
            self._sweep_handle.cancel()
            self._sweep_handle = None


class Connection(asyncio.Protocol):
    __slots__ = (
        "_buf",
        "_clock",
        "_dispatcher",
        "_encode",
        "_guard",
        "_max_frame",
        "_scheduled",
        "_security",
        "_write_paused",
        "activity",
        "closed",
        "frame_started",
        "gate",
        "in_flight",
        "last_active",
        "listener",
        "peer_host",
        "peer_port",
        "principal",
        "reading_paused",
        "seen_activity",
        "transport",
    )

    def __init__(
        self,
        dispatcher: Dispatcher,
        guard: ConnectionGuard,
        listener: Listener,
        security: ConnectionSecurity | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._security = security
        self.gate: Gate | None = None  # SASL authentication still to pass (SASL listeners)
        self.principal = "User:ANONYMOUS"
        self.listener = listener  # the listener this connection came in on (its advertised address, protocol)
        self._guard = guard
        self._max_frame = guard.limits.max_frame
        self._clock: Callable[[], float] = guard.loop.time
        self._buf = bytearray()
        self.in_flight: asyncio.Future | None = None
        self._encode: Any = None
        self._scheduled = False  # a continuation slice is queued with call_soon
        self._write_paused = False  # the transport said pause_writing
        self.reading_paused = False
        self.closed = False
        self.transport: asyncio.Transport | None = None
        self.peer_host = ""
        self.peer_port = 0
        # idle detection: a counter bumped on traffic (cheaper than a clock read per read); the sweep turns
        # a change into `last_active`
        self.activity = 0
        self.seen_activity = 0
        self.last_active = self._clock()
        self.frame_started: float | None = None  # when the current partial frame began (or reading resumed)

    # -- transport callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer_host, self.peer_port = peer[0], peer[1]
        refused = self._guard.admit(self)
        if refused is not None:
            self._guard.refused += 1
            log.warning("refusing connection", peer=f"{self.peer_host}:{self.peer_port}", reason=refused)
            self.closed = True
            transport.abort()  # type: ignore[attr-defined]
            return
        transport.set_write_buffer_limits(high=WRITE_HIGH, low=WRITE_LOW)  # type: ignore[attr-defined]
        self._dispatcher.connections.add(self)
        if self._security is not None:
            self.gate = self._security.connection_made(self)

    def peer_certificate(self) -> dict | None:  # type: ignore[type-arg]
        """The client's verified TLS certificate (`ssl.SSLSocket.getpeercert()`), None without one."""
        return self.transport.get_extra_info("peercert") if self.transport is not None else None

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self._guard.bytes_out += len(data)
            self.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._guard.release(self)
        connection_closed(self._dispatcher, self)
        if self.in_flight is not None and not self.in_flight.done():
            self.in_flight.cancel()  # a parked request dies with its connection
        self.in_flight = None
        self._buf = bytearray()

    def pause_writing(self) -> None:
        """The peer is not reading fast enough: stop reading and handling until its replies drain."""
        self._write_paused = True
        self._set_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self.activity += 1
        if self.closed:
            return
        self._set_reading()
        if self.in_flight is None:
            self._schedule()

    def data_received(self, data: bytes) -> None:
        self.activity += 1
        buf = self._buf
        buf += data
        if self.in_flight is None and not self._scheduled and not self._write_paused:
            self._drain()
        elif len(buf) > _PAUSE_AT and not self.reading_paused:
            self._set_reading()

    def close(self, reason: str) -> None:
        if not self.closed:
            log.warning("closing connection", peer=f"{self.peer_host}:{self.peer_port}", reason=reason)
            self.closed = True
            if self.transport is not None:
                if self._write_paused:
                    self.transport.abort()  # close() would wait for a peer that does not read to drain it
                else:
                    self.transport.close()

    def close_after(self, delay_s: float, reason: str, reply: bytes | None = None) -> None:
        """Kafka's `connection.failed.authentication.delay.ms`: from now on nothing more of this peer is read
        or handled; after `delay_s` the `reply` (the failure answer) is written and the connection closed.
        A timer, not a sleep: every other connection is served meanwhile (Kafka's Selector does the same
        with its delayed-close queue)."""
        if self.closed:
            return
        self.closed = True  # the drain loop, the sweep and `write` leave this connection alone from here
        self._buf = bytearray()
        transport = self.transport
        if transport is None:
            return
        transport.pause_reading()
        peer = f"{self.peer_host}:{self.peer_port}"
        log.info("delaying the close of a failed authentication", peer=peer, delay_ms=round(delay_s * 1000))

        def close_now() -> None:
            if transport.is_closing():
                return  # the peer went away meanwhile
            if reply:
                transport.write(reply)
            log.warning("closing connection", peer=peer, reason=reason)
            transport.close()

        self._guard.loop.call_later(delay_s, close_now)

    # -- reading state

    def _set_reading(self) -> None:
        """Read unless the peer's replies are backed up, or too much is buffered behind a request we are busy
        with. A single frame still arriving is always read, however large (up to socket.request.max.bytes)."""
        if self.closed or self.transport is None:
            return
        busy = self.in_flight is not None or self._scheduled
        pause = self._write_paused or (busy and len(self._buf) > _PAUSE_AT)
        if pause and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        elif not pause and self.reading_paused:
            self.reading_paused = False
            if self.frame_started is not None:
                self.frame_started = self._clock()  # time we did not read does not count against the peer
            self.transport.resume_reading()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self._guard.loop.call_soon(self._continue)

    def _continue(self) -> None:
        self._scheduled = False
        if not self.closed and self.in_flight is None and not self._write_paused:
            self._drain()

    # -- request handling

    def _drain(self) -> None:
        """Handle the whole frames in the buffer, one bounded slice at a time; replies answered at once leave
        in one write (one syscall for a client's pipelined heartbeats instead of one each).

        The buffer is read through a view at a moving offset and cut once per slice (issue 28): per frame one
        copy (the frame handed to the dispatcher), instead of a slice, a copy and a shift of the rest."""
        buf = self._buf
        view = memoryview(buf)
        pos = 0  # start of the next frame in `buf`; `buf[:pos]` is handled and cut in `finally`
        out: list[bytes] = []
        out_bytes = 0
        handled = 0
        started = time.perf_counter()
        try:
            while len(buf) - pos >= 4 and not self.closed:
                size = _SIZE.unpack_from(buf, pos)[0]
                gate = self.gate
                if gate is not None and not gate.authenticated:
                    # as Kafka's SaslServerAuthenticator: judged on the size prefix, the body is never read
                    if size < 0 or size > gate.max_receive_size:
                        self.close(
                            f"frame of {size} bytes before SASL authentication exceeds "
                            f"sasl.server.max.receive.size ({gate.max_receive_size})"
                        )
                        return
                elif size < 0 or size > self._max_frame:
                    self.close(f"frame of {size} bytes exceeds socket.request.max.bytes ({self._max_frame})")
                    return
                end = pos + 4 + size
                if len(buf) < end:
                    break  # the rest of the frame is still arriving
                if handled and (
                    handled >= SLICE_FRAMES
                    or out_bytes >= SLICE_BYTES
                    or time.perf_counter() - started >= SLICE_SECONDS
                ):
                    self._schedule()  # the rest after other connections have had their turn
                    break
                frame = bytes(view[pos + 4 : end])
                pos = end
                handled += 1
                if gate is None or gate.authenticated:
                    reply = PASS
                else:
                    if out:  # earlier answers leave first: the gate may write and close
                        self._guard.bytes_out += sum(map(len, out))
                        self.transport.write(b"".join(out))  # type: ignore[union-attr]
                        out.clear()
                    reply = gate.receive(self, frame)
                if reply is PASS:
                    reply = self._dispatcher.dispatch(self, frame)
                if reply is None:
                    continue
                if isinstance(reply, bytes):
                    out.append(reply)
                    out_bytes += len(reply)
                    continue
                # a parked request: stop here until it is answered
                self.in_flight = reply.fut
                self._encode = reply.encode
                reply.fut.add_done_callback(self._answered)
                break
        finally:
            view.release()
            if pos:
                self._guard.bytes_in += pos
                del buf[:pos]
            if not self.closed:
                if out:
                    self._guard.bytes_out += sum(map(len, out))
                    self.transport.write(out[0] if len(out) == 1 else b"".join(out))  # type: ignore[union-attr]
                if not buf:
                    self.frame_started = None
                elif handled or self.frame_started is None:
                    self.frame_started = self._clock()
                if self.reading_paused or self._write_paused or len(buf) > _PAUSE_AT:
                    self._set_reading()

    def _answered(self, fut: asyncio.Future) -> None:
        self.in_flight = None
        if self.closed or fut.cancelled():
            return
        self.activity += 1
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
            self._guard.bytes_out += len(data)
            self.transport.write(data)  # type: ignore[union-attr]
        if self._buf:
            self.frame_started = self._clock()  # the parked time does not count against the next frame
        if not self._write_paused:
            self._drain()
