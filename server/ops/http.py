"""The admin HTTP listener: GET /metrics, /health, /ready on the server's own event loop.

A tiny HTTP/1.0-style handler (one request per connection, then close) is all Prometheus and orchestrator
probes need; it runs on the coordinator's loop so a scrape reads the state machine without locks. The
exposition text comes from prometheus-client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

log = structlog.get_logger("groupcoord.ops")

MAX_HEADER_BYTES = 16 * 1024
READ_TIMEOUT_S = 10.0


#: the web console's handler (server/console): (request head, peer host) -> (status, type, body, header lines)
ConsoleHandler = Callable[[bytes, str], Awaitable[tuple[str, str, bytes, list[str]]]]


class AdminHttp:
    """Serves the registry and the two probes; `ready()` says whether the coordinator state is loaded.
    With a `console`, requests under `/ui` go to it (the live web console)."""

    def __init__(
        self, registry: CollectorRegistry, ready: Callable[[], bool], console: ConsoleHandler | None = None
    ) -> None:
        self.registry = registry
        self.ready = ready
        self.console = console
        self.server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        self.server = await asyncio.start_server(self._handle, host, port, reuse_address=True)
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            try:
                await asyncio.wait_for(self.server.wait_closed(), 2)
            except TimeoutError:
                pass

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        head = head[:MAX_HEADER_BYTES]
        extra: list[str] = []
        try:
            if self.console is not None and self._is_console(head):
                peer = writer.get_extra_info("peername")
                status, ctype, body, extra = await self.console(head, peer[0] if peer else "")
            else:
                status, ctype, body = self._route(head)
        except Exception:
            log.exception("admin request failed")
            status, ctype, body = "500 Internal Server Error", "text/plain", b"internal error\n"
        more = "".join(f"{h}\r\n" for h in extra)
        writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{more}"
            "Connection: close\r\n\r\n".encode()
            + body
        )
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    @staticmethod
    def _is_console(head: bytes) -> bool:
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        # /favicon.ico too: browsers ask for it at the root of every console page
        return len(parts) == 3 and (parts[1] in (b"/ui", b"/favicon.ico") or parts[1].startswith(b"/ui/"))

    def _route(self, head: bytes) -> tuple[str, str, bytes]:
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return "400 Bad Request", "text/plain", b"bad request line\n"
        method, target = parts[0], parts[1].split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"only GET\n"
        if target == "/metrics":
            body = generate_latest(self.registry)
            return "200 OK", CONTENT_TYPE_LATEST, b"" if method == "HEAD" else body
        if target == "/health":
            return "200 OK", "text/plain", b"ok\n"
        if target == "/ready":
            if self.ready():
                return "200 OK", "text/plain", b"ready\n"
            return "503 Service Unavailable", "text/plain", b"loading\n"
        hint = ", /ui" if self.console is not None else ""
        return "404 Not Found", "text/plain", f"not found: try /metrics, /health, /ready{hint}\n".encode()
