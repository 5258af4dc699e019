"""A TCP proxy in front of PostgreSQL that a test can cut: a network partition between one node and the
database, on loopback and without root.

While cut, nothing is forwarded in either direction and neither side is told: no reset, no close, the
bytes already read wait in the proxy (as packets would in a partition that heals; TCP on each leg still
acknowledges, so what the cut shows is a silent peer, the case a keepalive cannot see). `heal()` lets
everything through again in order. It runs on an event loop of its own, in a thread (the tests' server
starts block theirs)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import urllib.parse

from groupcoord.testing.ports import free_port


class PgProxy:
    def __init__(self, pg_url: str) -> None:
        parts = urllib.parse.urlsplit(pg_url)
        assert parts.hostname is not None and parts.port is not None
        self.upstream = (parts.hostname, parts.port)
        self.port = free_port()
        netloc = f"{parts.username}@127.0.0.1:{self.port}" if parts.username else f"127.0.0.1:{self.port}"
        self.url = parts._replace(netloc=netloc).geturl()
        self._loop = asyncio.new_event_loop()
        self._open = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pg-proxy", daemon=True)

    @classmethod
    def start(cls, pg_url: str) -> PgProxy:
        proxy = cls(pg_url)
        proxy._thread.start()
        asyncio.run_coroutine_threadsafe(proxy._listen(), proxy._loop).result(10)
        return proxy

    async def _listen(self) -> None:
        self._open.set()
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", self.port)

    def cut(self) -> None:
        self._loop.call_soon_threadsafe(self._open.clear)

    def heal(self) -> None:
        self._loop.call_soon_threadsafe(self._open.set)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            self._conns.discard(task)
            return
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                w.close()
            self._conns.discard(task)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while True:
                await self._open.wait()
                data = await src.read(65536)
                await self._open.wait()  # cut meanwhile: held until healed
                if not data:
                    break
                dst.write(data)
                await dst.drain()
        with contextlib.suppress(OSError, RuntimeError):
            dst.write_eof()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _close(self) -> None:
        self._open.set()
        if self._server is not None:
            self._server.close()
        for task in list(self._conns):
            task.cancel()
        await asyncio.gather(*self._conns, return_exceptions=True)
